import { describe, expect, it } from "vitest";
import { silentLogger, type AgentMessage, type HubMessage } from "@whohas/core";
import { BackgroundProbe, type BackgroundOutcome } from "../actions/background-probe.js";
import type { CommandSender } from "../actions/command.js";
import { Hub } from "../hub/hub.js";
import { cluster, facts, hello } from "./helpers.js";

type Result = Extract<AgentMessage, { type: "probe-result" | "command-done" }>;
type Command = Extract<HubMessage, { type: "announce" | "probe" }>;

const VIP = "198.51.100.7";
const MACS: Record<string, string> = { "node-a": "02:00:00:00:00:0a", "node-b": "02:00:00:00:00:0b", "node-c": "02:00:00:00:00:0c" };
const STRANGER = "00:1b:21:00:00:01";

class Agents implements CommandSender {
  readonly sent: { node: string; msg: Command; onResult: (m: Result) => void }[] = [];
  command(node: string, msg: Command, onResult: (m: Result) => void): boolean {
    this.sent.push({ node, msg, onResult });
    return true;
  }
}

async function setup() {
  const clock = { now: 1_000_000 };
  const hub = await Hub.open({ clock: () => clock.now });
  hub.setCluster(cluster(Object.keys(MACS), [VIP]));
  for (const [i, [node, mac]] of Object.entries(MACS).entries()) {
    hub.connect(hello(node, mac));
    // node-c's agent has not sent its facts: its addresses are unknown, so its requests could not be told as whohas's.
    if (node !== "node-c") hub.setFacts(node, facts(node, [{ name: "eth0", mac, addresses: [`192.0.2.${10 + i}/24`] }]));
  }
  const agents = new Agents();
  const outcomes: BackgroundOutcome[] = [];
  const state = { paused: false };
  const probe = new BackgroundProbe({
    hub,
    agents,
    intervalMs: 10_000,
    logger: silentLogger,
    random: () => 0,
    paused: () => state.paused,
    onOutcome: (o) => outcomes.push(o),
  });
  /** step moves time on by `ms` and ticks, as the service's timer would every second. */
  const step = (ms: number) => {
    clock.now += ms;
    // The agents keep talking: an agent silent for 30 s is down, and a down node probes nothing.
    for (const node of Object.keys(MACS)) hub.heartbeat(node);
    probe.tick();
  };
  return { hub, agents, outcomes, probe, state, step, clock };
}

const done = (id: string, ok: boolean, macs: string[], message = "done"): Result => ({
  v: 2,
  type: "command-done",
  id,
  ok,
  message,
  probe: ok
    ? {
        ip: VIP,
        requests: 1,
        unanswered: macs.length === 0 ? 1 : 0,
        multiAnswered: 0,
        macs: macs.map((mac) => ({ mac, replies: 1, first: 1 })),
      }
    : undefined,
});

describe("the background probe", () => {
  it("asks once per interval with one request, noting it as whohas's own first, from the nodes in turn", async () => {
    const { hub, agents, outcomes, probe, step, clock } = await setup();
    step(0);
    expect(agents.sent).toHaveLength(0);
    step(1000);
    expect(agents.sent.map((s) => [s.msg.type, s.msg.ip])).toEqual([["probe", VIP]]);
    const first = agents.sent[0];
    expect(first?.msg).toMatchObject({ durationMs: 1, intervalMs: 500, vlan: null });
    // Noted before any report of it can arrive: its request counts for who answers, not as a client's.
    const asker = `192.0.2.${10 + Object.keys(MACS).indexOf(first?.node ?? "")}`;
    expect(hub.traffic.own.has(VIP, asker, clock.now + 100)).toBe(true);
    expect(hub.traffic.own.has(VIP, MACS[first?.node ?? ""] ?? "", clock.now + 100)).toBe(true);
    expect(hub.traffic.own.has(VIP, "02:00:5e:99:99:99", clock.now + 100)).toBe(false);
    first?.onResult(done(first.msg.id, true, [STRANGER]));
    expect(probe.last(VIP)).toMatchObject({ node: first?.node, macs: [STRANGER], failed: null });
    expect(outcomes).toEqual(["answered"]);
    for (let i = 0; i < 30; i++) step(1000);
    // 31 s at a 10 s interval (never more than one apart): three more, each from the next node, never from node-c.
    const nodes = agents.sent.map((s) => s.node);
    expect(nodes).toHaveLength(4);
    for (let i = 1; i < nodes.length; i++) expect(nodes[i]).not.toBe(nodes[i - 1]);
    expect(nodes).not.toContain("node-c");
  });

  it("waits while operators' actions run, and asks another node for an IP a node could not reach", async () => {
    const { agents, outcomes, probe, state, step } = await setup();
    state.paused = true;
    for (let i = 0; i < 30; i++) step(1000);
    expect(agents.sent).toHaveLength(0);
    state.paused = false;
    step(1000);
    step(1000);
    const first = agents.sent[0];
    first?.onResult(done(first.msg.id, false, [], "no interface has an IPv4 address in the subnet of 198.51.100.7"));
    expect(probe.last(VIP)?.failed).toContain("no interface");
    expect(outcomes).toEqual(["failed"]);
    for (let i = 0; i < 60; i++) {
      step(1000);
      const last = agents.sent[agents.sent.length - 1];
      if (last !== undefined && last !== first) last.onResult(done(last.msg.id, true, [MACS["node-a"] ?? ""]));
    }
    // Six more in 60 s, none from the node that could not reach it.
    expect(agents.sent.slice(1).map((s) => s.node)).not.toContain(first?.node);
    expect(agents.sent.length).toBeGreaterThanOrEqual(6);
  });
});
