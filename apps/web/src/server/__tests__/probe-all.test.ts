import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_PROBE_REPLIES, MAX_PROBE_TARGETS, type CommandResult, type HubCommand } from "@whohas/core";
import type { CommandSender } from "../actions/command.js";
import { probeAll, type ProbedIp } from "../actions/probe-all.js";
import { Hub } from "../hub/hub.js";
import { hello } from "./helpers.js";

const MAC = { "node-a": "02:00:00:00:00:0a", "node-b": "02:00:00:00:00:0b", "node-old": "02:00:00:00:00:0c" } as const;
type Node = keyof typeof MAC;

/** Agents records the commands each node was sent and answers as that node's agent would. */
class Agents implements CommandSender {
  readonly sent: { node: string; msg: HubCommand }[] = [];
  readonly abandoned: string[] = [];
  readonly #listeners = new Map<string, (m: CommandResult) => void>();
  command(node: string, msg: HubCommand, onResult: (m: CommandResult) => void): boolean {
    this.sent.push({ node, msg });
    this.#listeners.set(msg.id, onResult);
    return true;
  }
  abandon(id: string): void {
    this.abandoned.push(id);
  }
  of(node: string, type: HubCommand["type"]) {
    return this.sent.filter((s) => s.node === node && s.msg.type === type).map((s) => s.msg);
  }
  /**
   * round answers round `seq` of a probe-many: every target answered by `by` (a MAC; null: by nobody), and no result
   * at all for a target `skip` names.
   */
  round(msg: HubCommand, seq: number, by: string | null, skip: (ip: string) => boolean = () => false): void {
    if (msg.type !== "probe-many") throw new Error("not a probe-many");
    const replies = by === null ? [] : [{ mac: by, latencyMs: 0.3 }];
    const results = msg.targets.filter((t) => !skip(t.ip)).map((t) => ({ ...t, sentAt: 1000 * seq, replies }));
    this.#listeners.get(msg.id)?.({ v: 2, type: "probe-many-result", id: msg.id, seq, results });
  }
  done(msg: HubCommand, ok = true, message = "probed", unprobed?: { ip: string; vlan: number | null; message: string }[]): void {
    this.#listeners.get(msg.id)?.({ v: 2, type: "command-done", id: msg.id, ok, message, ...(unprobed ? { unprobed } : {}) });
  }
  /** probeResult answers request `seq` of a probe: by one MAC, or with these replies. */
  probeResult(msg: HubCommand, seq: number, by: string | { mac: string; latencyMs: number }[]): void {
    this.#listeners.get(msg.id)?.({
      v: 2,
      type: "probe-result",
      id: msg.id,
      seq,
      sentAt: 1000 * seq,
      replies: typeof by === "string" ? [{ mac: by, latencyMs: 0.3 }] : by,
    });
  }
}

/** setup connects each node's agent: with its probe-many limit, or (null) an agent of a release before it. */
async function setup(limits: Partial<Record<Node, number | null>>) {
  const hub = await Hub.open();
  for (const [node, limit] of Object.entries(limits) as [Node, number | null][])
    hub.connect({ ...hello(node, MAC[node]), ...(limit === null ? {} : { probeMany: { maxTargets: limit } }) });
  const agents = new Agents();
  const run = (ips: string[], rounds = 2) => {
    const done: ProbedIp[] = [];
    const said: string[] = [];
    const result = probeAll({
      hub,
      agents,
      ips,
      rounds,
      up: Object.keys(limits),
      random: () => 0,
      say: (l) => said.push(l),
      done: (p) => done.push(p),
    });
    return { result, done, said };
  };
  return { hub, agents, run };
}

const nodesOf = (p: ProbedIp | undefined) => p?.rounds.map((r) => r.replies.map((x) => x.node));

afterEach(() => {
  vi.useRealTimers();
});

describe("probeAll", () => {
  it("asks every IP at once from two nodes, one probe-many each, and joins what both heard per request", async () => {
    const { hub, agents, run } = await setup({ "node-a": 512, "node-b": 512 });
    const { result, done, said } = run(["192.0.2.10", "192.0.2.11@30", "2001:db8::10"]);
    const [a] = agents.of("node-a", "probe-many");
    const [b] = agents.of("node-b", "probe-many");
    expect(agents.sent).toHaveLength(2);
    expect(a).toMatchObject({
      type: "probe-many",
      rounds: 2,
      intervalMs: 1000,
      targets: [
        { ip: "192.0.2.10", vlan: null },
        { ip: "192.0.2.11", vlan: 30 },
        { ip: "2001:db8::10", vlan: null },
      ],
    });
    expect(said[0]).toBe(
      "probing 3 IPs from 2 nodes at once, 2 requests each from two nodes, one a second per IP (node-a: 3 IPs in one command; node-b: 3 IPs in one command)",
    );
    // Their requests are whohas's own: the judge leaves them out of what clients asked, the VLAN's included.
    expect(hub.traffic.own.has("192.0.2.11", MAC["node-a"], Date.now())).toBe(true);
    expect(hub.traffic.own.has("2001:db8::10", MAC["node-b"], Date.now())).toBe(true);
    if (a === undefined || b === undefined) throw new Error("two commands expected");
    // Each node hears the other answer (node-b owns them all), and node-b also hears node-a on its second request.
    agents.round(a, 1, MAC["node-b"]);
    agents.round(b, 1, null);
    agents.round(a, 2, MAC["node-b"]);
    agents.round(b, 2, MAC["node-a"]);
    expect(said.at(-1)).toMatch(/: 2 of 2 rounds in$/);
    agents.done(a);
    expect(done).toEqual([]);
    agents.done(b);
    const out = await result;
    expect(done.map((p) => p.ip)).toEqual(["192.0.2.10", "192.0.2.11@30", "2001:db8::10"]);
    expect(out).toEqual(done);
    for (const p of out) {
      expect([p.probers, p.failedProbers]).toEqual([["node-a", "node-b"], []]);
      expect(nodesOf(p)).toEqual([["node-b"], ["node-a", "node-b"]]);
    }
  });

  it.each([
    { case: "the limit an agent says", limit: 2, ips: 5, sizes: [1, 2, 2] },
    { case: "the hub's own limit when an agent says more", limit: 4096, ips: 600, sizes: [300, 300] },
  ])("splits a node's IPs under $case", async ({ limit, ips, sizes }) => {
    const { agents, run } = await setup({ "node-a": limit, "node-b": limit });
    void run(Array.from({ length: ips }, (_, i) => `198.19.${i >> 8}.${i & 255}`)).result;
    for (const node of ["node-a", "node-b"]) {
      const mine = agents.of(node, "probe-many").map((m) => (m.type === "probe-many" ? m.targets.length : 0));
      expect(mine).toEqual(sizes);
      expect(Math.max(...mine)).toBeLessThanOrEqual(MAX_PROBE_TARGETS);
    }
  });

  it("asks one IP a probe, three at a time, from a node whose agent takes no probe-many", async () => {
    const { agents, run } = await setup({ "node-a": 512, "node-old": null });
    const ips = ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4@30"];
    const { result, said } = run(ips);
    expect(said[0]).toMatch(/node-old: 4 IPs one probe each, 3 at a time \(its agent is of a release before probe-many\), about 4 s\)$/);
    const [batch] = agents.of("node-a", "probe-many");
    if (batch === undefined) throw new Error("node-a's batch expected");
    agents.round(batch, 1, MAC["node-old"]);
    agents.round(batch, 2, MAC["node-old"]);
    agents.done(batch);
    for (let answered = 0; answered < ips.length; answered++) {
      const singles = agents.of("node-old", "probe");
      // At most three at once: the fourth goes once one is done.
      expect(singles).toHaveLength(Math.min(ips.length, answered + 3));
      const next = singles[answered];
      if (next === undefined) throw new Error("a probe expected");
      expect(next).toMatchObject({ type: "probe", durationMs: 2000, intervalMs: 1000 });
      agents.probeResult(next, 1, MAC["node-a"]);
      agents.probeResult(next, 2, MAC["node-a"]);
      // An older agent may send one request more than asked: it is no round.
      agents.probeResult(next, 3, MAC["node-a"]);
      agents.done(next);
      await Promise.resolve();
    }
    expect(agents.of("node-old", "probe").map((m) => (m.type === "probe" ? [m.ip, m.vlan] : null))).toEqual([
      ["192.0.2.1", null],
      ["192.0.2.2", null],
      ["192.0.2.3", null],
      ["192.0.2.4", 30],
    ]);
    const out = await result;
    expect(out.map((p) => [p.ip, p.failedProbers, nodesOf(p)])).toEqual(
      ips.map((ip) => [
        ip,
        [],
        [
          ["node-a", "node-old"],
          ["node-a", "node-old"],
        ],
      ]),
    );
  });

  it("takes each request of a prober once, at most MAX_PROBE_REPLIES MACs: a repeat fails that prober for that IP", async () => {
    const { agents, run } = await setup({ "node-a": 512, "node-old": null });
    const { result } = run(["192.0.2.1", "192.0.2.2"], 1);
    const [a] = agents.of("node-a", "probe-many");
    if (a === undefined) throw new Error("node-a's batch expected");
    agents.round(a, 1, MAC["node-old"]);
    // Seq 1 again, for 192.0.2.1 only, with ever new MACs: none of it is kept, however often it comes.
    for (let i = 0; i < 50; i++) agents.round(a, 1, `02:00:00:00:01:${i.toString(16).padStart(2, "0")}`, (ip) => ip !== "192.0.2.1");
    agents.done(a);
    const singles = agents.of("node-old", "probe");
    // A one-IP probe's request may carry many more MACs on the wire: no more than MAX_PROBE_REPLIES are kept.
    const many = Array.from({ length: 100 }, (_, i) => ({ mac: `02:00:00:00:02:${i.toString(16).padStart(2, "0")}`, latencyMs: 1 }));
    for (const single of singles) {
      agents.probeResult(single, 1, single.type === "probe" && single.ip === "192.0.2.2" ? many : MAC["node-a"]);
      agents.done(single);
      await Promise.resolve();
    }
    const out = await result;
    const [one, two] = out;
    expect(one?.failedProbers).toEqual(["node-a"]);
    expect(one?.messages).toEqual(["node-a: reported request 1 twice (a protocol error): what it heard is not counted"]);
    expect(one?.rounds.flatMap((r) => r.replies.map((x) => x.mac))).toHaveLength(2);
    expect(two?.failedProbers).toEqual([]);
    expect(two?.rounds.flatMap((r) => r.replies)).toHaveLength(1 + MAX_PROBE_REPLIES);
  });

  it("names a prober missing when it is refused, cannot ask an IP, or reports fewer requests than asked", async () => {
    const { agents, run } = await setup({ "node-a": 512, "node-b": 512 });
    const { result } = run(["192.0.2.1", "192.0.2.2", "192.0.2.3@40"]);
    const [a] = agents.of("node-a", "probe-many");
    const [b] = agents.of("node-b", "probe-many");
    if (a === undefined || b === undefined) throw new Error("two commands expected");
    agents.done(a, false, "busy: 4 commands already running on node-a");
    agents.round(b, 1, MAC["node-a"], (ip) => ip === "192.0.2.3");
    agents.round(b, 2, MAC["node-a"], (ip) => ip !== "192.0.2.1");
    agents.done(b, true, "probed 2 IPs from eth0, 2 requests each; 1 not asked", [
      { ip: "192.0.2.3", vlan: 40, message: "this node has no interface on VLAN 40" },
    ]);
    const out = await result;
    const busy = "node-a: busy: 4 commands already running on node-a";
    expect(out.map((p) => [p.ip, p.failedProbers, p.messages])).toEqual([
      ["192.0.2.1", ["node-a"], [busy]],
      ["192.0.2.2", ["node-a", "node-b"], [busy, "node-b: reported 1 of 2 requests"]],
      ["192.0.2.3@40", ["node-a", "node-b"], [busy, "node-b: not asked: this node has no interface on VLAN 40"]],
    ]);
  });

  it("gives up on an agent that never says it is done, and forgets its command", async () => {
    vi.useFakeTimers();
    const { agents, run } = await setup({ "node-a": 512, "node-b": 512 });
    const { result } = run(["192.0.2.1"]);
    // Two rounds, the IPs' spread and the last reply window, then fifteen seconds of grace.
    vi.advanceTimersByTime(2000 + 2000 + 15_000);
    const [p] = await result;
    expect(p?.failedProbers).toEqual(["node-a", "node-b"]);
    expect(p?.messages).toEqual([
      "node-a: no report within 15 s of the end (agent gone?)",
      "node-b: no report within 15 s of the end (agent gone?)",
    ]);
    expect(agents.abandoned).toEqual(agents.sent.map((s) => s.msg.id));
  });

  it("resolves at once with no prober for an IP when no agent is up", async () => {
    const { agents, run } = await setup({});
    const out = await run(["192.0.2.1"]).result;
    expect(out).toEqual([{ ip: "192.0.2.1", probers: [], failedProbers: [], messages: [], rounds: [] }]);
    expect(agents.sent).toEqual([]);
  });
});
