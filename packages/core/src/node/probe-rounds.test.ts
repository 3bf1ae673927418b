import { describe, expect, it } from "vitest";
import { ProbeRounds, chooseProbers } from "./probe-rounds.js";

const A = "02:00:00:00:00:0a";
const B = "02:00:00:00:00:0b";
const C = "02:00:00:00:00:0c";

/** result is one prober's result for request `seq`: the replies it heard as [MAC, latency in ms], in the order heard. */
const result = (seq: number, sentAt: number, ...replies: (readonly [string, number])[]) => ({
  seq,
  sentAt,
  replies: replies.map(([mac, latencyMs]) => ({ mac, latencyMs })),
});

describe("ProbeRounds", () => {
  it("joins two probers' requests: each misses its own answer, the round has all three responders", () => {
    const p = new ProbeRounds("192.0.2.10");
    // node-a (MAC A) hears B and C; node-b (MAC B) hears A and C.
    p.add("node-a", result(1, 1000, [C, 0.4], [B, 0.9]));
    p.add("node-b", result(1, 1002, [A, 0.2], [C, 0.6]));
    p.add("node-a", result(2, 2000, [C, 0.5]));
    const rounds = p.rounds();
    expect(rounds).toHaveLength(2);
    expect(rounds[0]).toEqual({
      seq: 1,
      at: 1000,
      probers: ["node-a", "node-b"],
      replies: [
        { mac: A, latencyMs: 0.2, probers: ["node-b"] },
        { mac: C, latencyMs: 0.4, probers: ["node-a", "node-b"] },
        { mac: B, latencyMs: 0.9, probers: ["node-a"] },
      ],
    });
    expect(rounds[1]?.probers).toEqual(["node-a"]);
    expect(p.summary()).toEqual({
      ip: "192.0.2.10",
      requests: 2,
      unanswered: 0,
      multiAnswered: 1,
      macs: [
        { mac: C, replies: 2, first: 1 },
        { mac: A, replies: 1, first: 1 },
        { mac: B, replies: 1, first: 0 },
      ],
    });
  });

  it("counts unanswered rounds, and a repeated result changes nothing", () => {
    const p = new ProbeRounds("192.0.2.10");
    const r = result(1, 1000, [A, 1]);
    p.add("node-b", r);
    p.add("node-b", r);
    p.add("node-b", result(2, 2000));
    expect(p.summary()).toMatchObject({ requests: 2, unanswered: 1, multiAnswered: 0, macs: [{ mac: A, replies: 1, first: 1 }] });
  });
});

describe("chooseProbers", () => {
  const seq =
    (...xs: number[]) =>
    () =>
      xs.shift() ?? 0;
  it("takes the owner and a node that captured the IP, whatever their names", () => {
    expect(
      chooseProbers({
        up: ["!0-rogue", "!1-rogue", "node-a", "node-b", "node-c"],
        owner: "node-b",
        capturedBy: ["node-a", "node-b", "node-c"],
        n: 2,
        random: seq(0.99),
      }),
    ).toEqual(["node-b", "node-c"]);
  });
  it("draws at random among nodes that captured the IP, then among the rest; an owner that is down does not probe", () => {
    expect(chooseProbers({ up: ["a", "b", "c", "d"], owner: "z", capturedBy: ["c", "d"], n: 2, random: seq(0.6, 0) })).toEqual(["d", "c"]);
    expect(chooseProbers({ up: ["a", "b", "c"], owner: null, capturedBy: [], n: 2, random: seq(0.9, 0.9) })).toEqual(["c", "b"]);
    expect(chooseProbers({ up: ["a"], owner: null, capturedBy: ["b"], n: 2, random: seq(0.5) })).toEqual(["a"]);
  });
});
