import { describe, expect, it } from "vitest";
import { ProbeSchedule, REFUSED_MS, type ProbeTarget } from "./probe-schedule.js";

const INTERVAL = 30_000;
const room = (nodes: readonly string[], k = 2) => new Map(nodes.map((n) => [n, k]));

/** A seeded generator: the same run every time, with real spread. */
function seeded(seed = 7): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
    return s / 2_147_483_648;
  };
}

/** run steps a schedule second by second for `ms`, returning every probe with its time. */
function run(s: ProbeSchedule, targets: readonly ProbeTarget[], nodes: ReadonlyMap<string, number>, ms: number, from = 0) {
  const out: { t: number; ip: string; node: string }[] = [];
  for (let t = from; t < from + ms; t += 1000) for (const p of s.due(t, targets, nodes)) out.push({ t, ...p });
  return out;
}

describe("the background probe's schedule", () => {
  it("asks for every IP at least once per interval, up to a fifth early, each at its own time, whatever its steps", () => {
    const targets = Array.from({ length: 20 }, (_, i) => ({ ip: `198.51.100.${i}`, owner: "node-a" }));
    // Asked what is due once a second, as the hub does, and told so: a due probe goes out up to a second late.
    const probes = run(new ProbeSchedule(INTERVAL, seeded(), 1000), targets, room(["node-a", "node-b", "node-c"], 100), 10 * INTERVAL);
    for (const { ip } of targets) {
      const times = probes.filter((p) => p.ip === ip).map((p) => p.t);
      expect(times[0]).toBeLessThanOrEqual(INTERVAL);
      expect(times.length).toBeGreaterThanOrEqual(10);
      for (let i = 1; i < times.length; i++) {
        const gap = (times[i] ?? 0) - (times[i - 1] ?? 0);
        // Never more than one interval apart: a host that takes an IP is heard within one. Never much more often.
        expect(gap).toBeLessThanOrEqual(INTERVAL);
        expect(gap).toBeGreaterThanOrEqual(0.8 * (INTERVAL - 1000));
      }
    }
    // Spread out: the first probes of twenty IPs do not fall in one second.
    expect(new Set(targets.map(({ ip }) => probes.find((p) => p.ip === ip)?.t)).size).toBeGreaterThan(10);
  });

  it("asks from the nodes in turn, never from the expected owner while another node can, and from it when none other can", () => {
    const target = [{ ip: "198.51.100.1", owner: "node-a" }];
    const probes = run(new ProbeSchedule(INTERVAL, seeded()), target, room(["node-a", "node-b", "node-c"]), 8 * INTERVAL);
    const nodes = probes.map((p) => p.node);
    expect(nodes).not.toContain("node-a");
    for (let i = 1; i < nodes.length; i++) expect(nodes[i]).not.toBe(nodes[i - 1]);
    const alone = run(new ProbeSchedule(INTERVAL, seeded()), target, room(["node-a"]), 3 * INTERVAL);
    expect(alone.map((p) => p.node)).toEqual(["node-a", "node-a", "node-a"]);
  });

  it("never gives a node more probes at once than it has room for; those left wait first in line", () => {
    const s = new ProbeSchedule(INTERVAL, () => 0);
    const targets = ["198.51.100.1", "198.51.100.2", "198.51.100.3"].map((ip) => ({ ip, owner: null }));
    expect(s.due(0, targets, room(["node-a"], 1))).toEqual([]);
    expect(s.due(0, targets, room(["node-a"], 1))).toEqual([{ ip: "198.51.100.1", node: "node-a" }]);
    expect(s.due(1000, targets, room(["node-a"], 0))).toEqual([]);
    expect(s.due(2000, targets, room(["node-a"], 3)).map((p) => p.ip)).toEqual(["198.51.100.2", "198.51.100.3"]);
  });

  it("with less room than the IPs need, asks for every IP in turn instead of the same ones again", () => {
    // 300 IPs, three nodes probing two at a time, each probe a second: 6 a second, 50 s for all of them.
    const targets = Array.from({ length: 300 }, (_, i) => ({ ip: `198.51.${Math.floor(i / 250)}.${i % 250}`, owner: null }));
    const probes = run(new ProbeSchedule(INTERVAL, seeded()), targets, room(["node-a", "node-b", "node-c"]), 20 * 60_000);
    const late = probes.filter((p) => p.t >= 10 * 60_000);
    const counts = targets.map(({ ip }) => late.filter((p) => p.ip === ip).length);
    // Each asked about every 50 s over the last ten minutes: none left out, none asked much more than the others.
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(10);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(2);
  });

  it("asks another node for an IP that a node could not reach, until REFUSED_MS has passed", () => {
    const s = new ProbeSchedule(INTERVAL, () => 0);
    const target = [{ ip: "198.51.100.1", owner: null }];
    const nodes = room(["node-a", "node-b"]);
    s.due(0, target, nodes);
    s.refused("198.51.100.1", "node-a", 0);
    const probes = run(s, target, nodes, 5 * INTERVAL);
    expect(new Set(probes.map((p) => p.node))).toEqual(new Set(["node-b"]));
    expect(run(s, target, nodes, 3 * INTERVAL, REFUSED_MS).map((p) => p.node)).toContain("node-a");
  });

  it("forgets an IP that is no longer a target, and starts it afresh when it comes back", () => {
    const s = new ProbeSchedule(INTERVAL, () => 0.5);
    const target = [{ ip: "198.51.100.1", owner: null }];
    const nodes = room(["node-a"]);
    expect(run(s, target, nodes, INTERVAL).map((p) => p.t)).toEqual([INTERVAL / 2]);
    expect(s.due(INTERVAL, [], nodes)).toEqual([]);
    expect(run(s, target, nodes, INTERVAL, 2 * INTERVAL).map((p) => p.t)).toEqual([2.5 * INTERVAL]);
  });
});
