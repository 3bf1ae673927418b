import { describe, expect, it } from "vitest";
import { planProbes, type PlanTarget } from "./probe-plan.js";

const target = (key: string, owner: string | null = null, capturedBy: string[] = []): PlanTarget => ({ key, owner, capturedBy });
const keys = (n: number) => Array.from({ length: n }, (_, i) => target(`198.19.${Math.floor(i / 250)}.${(i % 250) + 1}`, "node-a"));

describe("planProbes", () => {
  it("gives each key two probers, its owner first, and each node one command for all its keys", () => {
    const plan = planProbes({
      targets: [target("192.0.2.1", "node-a"), target("192.0.2.2@30", "node-b", ["node-c"]), target("2001:db8::1", null, ["node-c"])],
      up: ["node-a", "node-b", "node-c"],
      n: 2,
      limitOf: () => 512,
      random: () => 0,
    });
    expect(Object.fromEntries(plan.probers)).toEqual({
      "192.0.2.1": ["node-a", "node-b"],
      "192.0.2.2@30": ["node-b", "node-c"],
      "2001:db8::1": ["node-c", "node-a"],
    });
    expect(plan.batches).toEqual([
      { node: "node-a", keys: ["192.0.2.1", "2001:db8::1"] },
      { node: "node-b", keys: ["192.0.2.1", "192.0.2.2@30"] },
      { node: "node-c", keys: ["192.0.2.2@30", "2001:db8::1"] },
    ]);
    expect(plan.singles).toEqual([]);
  });

  it.each([
    { case: "limit 512: one command", limit: 512 },
    { case: "limit 256: two of 150", limit: 256 },
    { case: "limit 100: three of 100", limit: 100 },
    { case: "limit 7: 43 of 6 or 7", limit: 7 },
  ])("splits a node's 300 keys evenly under its limit: $case", ({ limit }) => {
    const plan = planProbes({ targets: keys(300), up: ["node-a", "node-b"], n: 2, limitOf: () => limit, random: () => 0 });
    for (const node of ["node-a", "node-b"]) {
      const mine = plan.batches.filter((b) => b.node === node);
      expect(mine).toHaveLength(Math.ceil(300 / limit));
      const sizes = mine.map((b) => b.keys.length);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(limit);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      // Every key once, in order.
      expect(mine.flatMap((b) => b.keys)).toEqual(keys(300).map((t) => t.key));
    }
  });

  it("probes one key per command from a node whose agent takes no probe-many", () => {
    const plan = planProbes({
      targets: [target("192.0.2.1", "node-a"), target("192.0.2.2", "node-a")],
      up: ["node-a", "node-old"],
      n: 2,
      limitOf: (node) => (node === "node-old" ? null : 512),
      random: () => 0,
    });
    expect(plan.batches).toEqual([{ node: "node-a", keys: ["192.0.2.1", "192.0.2.2"] }]);
    expect(plan.singles).toEqual([
      { node: "node-old", key: "192.0.2.1" },
      { node: "node-old", key: "192.0.2.2" },
    ]);
  });

  it("leaves a key without probers when no node is up, and one prober when one is", () => {
    const none = planProbes({ targets: keys(2), up: [], n: 2, limitOf: () => 512, random: () => 0 });
    expect([...none.probers.values()]).toEqual([[], []]);
    expect([none.batches, none.singles]).toEqual([[], []]);
    const one = planProbes({ targets: keys(2), up: ["node-b"], n: 2, limitOf: () => 512, random: () => 0 });
    expect([...one.probers.values()]).toEqual([["node-b"], ["node-b"]]);
    expect(one.batches).toEqual([{ node: "node-b", keys: keys(2).map((t) => t.key) }]);
  });
});
