import { describe, expect, it } from "vitest";
import { countTicks, lanes, markers, peak, tickLabel, ticks, type TimelineRow } from "./timeline";

const M = 60_000;
const T0 = 1_780_000_020 * 1000 - ((1_780_000_020 * 1000) % (60 * M));
const responders = [
  { mac: "02:00:00:00:00:01", node: "node-1", vendor: null },
  { mac: "02:00:00:00:00:02", node: "node-2", vendor: null },
  { mac: "02:00:00:00:00:03", node: "node-3", vendor: null },
  { mac: "00:1a:2b:00:00:09", node: null, vendor: "Acme" },
];
const row = (minute: number, mac: string, kind: TimelineRow["kind"], count: number): TimelineRow => ({
  minute: T0 + minute * M,
  mac,
  kind,
  count,
});

describe("lanes", () => {
  it("gives each responder its own lane even when their counts are equal, the owner first", () => {
    const rows = [1, 2, 3].map((n) => row(0, `02:00:00:00:00:0${n}`, "reply", 5));
    const got = lanes(rows, responders, "node-2");
    expect(got.map((l) => [l.label, l.owner])).toEqual([
      ["node-2", true],
      ["node-1", false],
      ["node-3", false],
    ]);
    expect(got.flatMap((l) => l.series)).toEqual(["node-2 replies", "node-1 replies", "node-3 replies"]);
  });

  it("sums kinds into replies and announcements, leaves requests out, and fills silent minutes with zeros", () => {
    const rows = [
      row(0, "02:00:00:00:00:01", "reply", 2),
      row(0, "02:00:00:00:00:01", "na-solicited", 1),
      row(0, "02:00:00:00:00:01", "gratuitous-request", 3),
      row(0, "02:00:00:00:00:01", "gratuitous-reply", 3),
      row(0, "02:00:00:00:00:01", "request", 40),
      row(2, "02:00:00:00:00:02", "reply", 1),
    ];
    const [a, b] = lanes(rows, responders, null);
    expect(a?.points).toEqual([
      { minute: T0, replies: 3, announcements: 6 },
      { minute: T0 + M, replies: 0, announcements: 0 },
      { minute: T0 + 2 * M, replies: 0, announcements: 0 },
    ]);
    expect(a?.series).toEqual(["node-1 replies", "node-1 announcements"]);
    expect(b?.points.map((p) => p.replies)).toEqual([0, 0, 1]);
    expect(peak([a, b].flatMap((l) => (l === undefined ? [] : [l])))).toBe(6);
  });

  it("names a MAC no agent reports by the MAC, after the nodes", () => {
    const got = lanes([row(0, "00:1a:2b:00:00:09", "reply", 1), row(0, "02:00:00:00:00:03", "reply", 1)], responders, null);
    expect(got.map((l) => [l.label, l.node, l.vendor])).toEqual([
      ["node-3", "node-3", null],
      ["00:1a:2b:00:00:09", null, "Acme"],
    ]);
  });
});

describe("ticks", () => {
  it.each([
    { case: "three minutes", span: 3 * M, step: M },
    { case: "fifteen minutes", span: 15 * M, step: 5 * M },
    { case: "an hour", span: 60 * M, step: 10 * M },
    { case: "a day", span: 24 * 60 * M, step: 6 * 60 * M },
  ])("over $case never repeats a label", ({ span, step }) => {
    const from = T0 + 17_000;
    const got = ticks(from, from + span);
    expect(got.length).toBeGreaterThan(0);
    expect(got.length).toBeLessThanOrEqual(6);
    for (const t of got) expect(t % step).toBe(0);
    const labels = got.map((t) => tickLabel(t, span));
    expect(new Set(labels).size).toBe(labels.length);
  });
});

describe("markers", () => {
  it("joins what happened in one minute and leaves out what is outside the range", () => {
    const n1 = responders[0] ?? { mac: "", node: null, vendor: null };
    const n2 = responders[1] ?? { mac: "", node: null, vendor: null };
    const got = markers(
      [{ at: T0 + 5 * M + 10, from: n1, to: n2 }],
      [
        { id: 1, type: "multi-responder", firstSeen: T0 + 5 * M + 20_000 },
        { id: 2, type: "wrong-owner", firstSeen: T0 + 5 * M + 30_000 },
        { id: 3, type: "changed", firstSeen: T0 - M },
      ],
      T0,
      T0 + 10 * M,
    );
    expect(got.map((m) => [m.kind, m.t, m.label])).toEqual([
      ["handover", T0 + 5 * M, "handover"],
      ["incident", T0 + 5 * M, "multi-responder, wrong-owner"],
    ]);
    expect(got[0]?.title).toContain("node-1 → node-2");
  });
});

describe("countTicks", () => {
  it.each([
    { case: "one", max: 1, want: [0, 1] },
    { case: "sixty-six", max: 66, want: [0, 50, 100] },
    { case: "a round top", max: 20, want: [0, 10, 20] },
    { case: "three (no half tick of 2.5)", max: 3, want: [0, 5] },
  ])("gives round ticks up to $case", ({ max, want }) => expect(countTicks(max)).toEqual(want));
});
