import { describe, expect, it } from "vitest";
import type { Handover } from "@whohas/core";
import { openSqlite } from "../store/sqlite.js";
import { Store } from "../store/store.js";
import type { AuditEntry } from "../store/audit.js";
import type { Incident, IncidentEvent } from "../store/incidents.js";
import { incidentStory } from "../hub/story.js";

const VIP = "192.0.2.200";
const S = 1000;
const A = { mac: "02:00:5e:00:00:0a", node: "node-a" };
const B = { mac: "02:00:5e:00:00:0b", node: "node-b" };

const incident = (over: Partial<Incident> = {}, events: IncidentEvent[] = []): Incident & { events: IncidentEvent[] } => ({
  id: 7,
  ip: VIP,
  type: "multi-responder",
  macs: [A.mac, B.mac],
  detail: "",
  evidence: null,
  firstSeen: 100 * S,
  lastSeen: 160 * S,
  count: 3,
  samples: [],
  resolvedAt: null,
  acknowledgedBy: null,
  acknowledgedAt: null,
  facets: [],
  events,
  ...over,
});
const action = (t: number, action: string, input: unknown, actor = "alice"): AuditEntry => ({
  t,
  actor,
  action,
  input,
  outcome: "ok",
  detail: "",
});
const handover = (at: number): Handover => ({ from: A, to: B, at, gapMs: 20, unanswered: 0, announced: false });

describe("incidentStory", () => {
  it("merges events, handovers and actions on the IP in time order, what was seen before what was done", () => {
    const events: IncidentEvent[] = [
      { t: 100 * S, kind: "opened", detail: "multi-responder: ..." },
      { t: 130 * S, kind: "updated", detail: "wrong-owner too: ..." },
      { t: 150 * S, kind: "acknowledged", detail: "by bob" },
    ];
    const got = incidentStory(
      incident({}, events),
      [handover(120 * S)],
      [action(130 * S, "ip.probe", { ip: VIP }), action(140 * S, "ip.reannounce", { ip: VIP, node: "node-a" }, "bob")],
      200 * S,
    );
    expect(got.map((e) => [e.t / S, e.kind === "incident" ? e.event : e.kind === "action" ? e.action : "handover"])).toEqual([
      [100, "opened"],
      [120, "handover"],
      [130, "updated"],
      [130, "ip.probe"],
      [140, "ip.reannounce"],
      [150, "acknowledged"],
    ]);
  });

  it.each([
    { case: "another IP's action", entry: action(120 * S, "ip.probe", { ip: "192.0.2.201" }), kept: false },
    { case: "a download of this incident's frames", entry: action(120 * S, "capture.download", { incident: 7 }), kept: true },
    { case: "a download of another incident's frames", entry: action(120 * S, "capture.download", { incident: 8 }), kept: false },
    { case: "a download of the IP's frames", entry: action(120 * S, "capture.download", { ip: VIP, since: 0, until: 1 }), kept: true },
    { case: "the strictARP fix", entry: action(120 * S, "remediation.apply", { resourceVersion: "1" }), kept: true },
    { case: "a refused preview", entry: action(120 * S, "remediation.preview", {}), kept: false },
    {
      case: "the fix's verification probe naming the IP among others",
      entry: action(120 * S, "ips.probe", { count: 2, ips: ["192.0.2.201", VIP], rounds: 10 }),
      kept: true,
    },
    {
      case: "a group re-announcement naming the IP",
      entry: action(120 * S, "ips.reannounce", { what: "demo/web", ips: [VIP] }),
      kept: true,
    },
    { case: "a verification probe of other IPs", entry: action(120 * S, "ips.probe", { count: 1, ips: ["192.0.2.201"] }), kept: false },
    { case: "an action before the incident", entry: action(90 * S, "ip.probe", { ip: VIP }), kept: false },
    { case: "an action after it resolved", entry: action(190 * S, "ip.probe", { ip: VIP }), kept: false },
  ])("keeps only what concerns the incident within its span: $case", ({ entry, kept }) => {
    const got = incidentStory(incident({ resolvedAt: 180 * S }), [handover(50 * S)], [entry], 300 * S);
    expect(got).toHaveLength(kept ? 1 : 0);
  });
});

describe("AuditLog.actionsBetween", () => {
  it("lists actions, downloads and fixes in the span, oldest first, and leaves settings and sign-ins out", async () => {
    const s = await Store.open(openSqlite(":memory:"), 0);
    await s.audit.append(action(3, "ip.reannounce", { ip: VIP }));
    await s.audit.append(action(1, "ip.probe", { ip: VIP }));
    await s.audit.append(action(2, "token.create", { name: "ci" }));
    await s.audit.append(action(4, "remediation.apply", {}));
    await s.audit.append(action(5, "capture.download", { incident: 7 }));
    await s.audit.append(action(9, "ip.probe", { ip: VIP }));
    await s.audit.append(action(1, "ips.probe", { ips: [VIP] }));
    expect((await s.audit.actionsBetween(1, 5)).map((e) => e.action)).toEqual([
      "ip.probe",
      "ips.probe",
      "ip.reannounce",
      "remediation.apply",
      "capture.download",
    ]);
    expect((await s.audit.actionsBetween(1, 5))[0]?.input).toEqual({ ip: VIP });
    await s.close();
  });
});
