import { describe, expect, it } from "vitest";
import type { ObservationAggregate, RequestReport } from "../wire.js";
import {
  CLEAR_AFTER_MS,
  FINAL_MS,
  NO_RESPONDER_MS,
  OWNER_GRACE_MS,
  STALE_ANNOUNCER_MS,
  STRANGER_GRACE_MS,
  type FindingType,
  type Handover,
  type Transition,
} from "./findings.js";
import type { Lens } from "./ip-judgement.js";
import { Judge } from "./judge.js";
import { NO_CONTEXT, type IpContext } from "./rules.js";
import { OwnRequests } from "./own-requests.js";
import { CapturePoint } from "./capture-point.js";
import { keyBatch } from "../net/ip-key.js";
import { newNeighborSolicitation, newSolicitedAdvertisement, newUnsolicitedAdvertisement } from "../packet/ndp.js";
import {
  CLIENT6,
  CLIENT_IP as CLIENT,
  CLIENT_MAC,
  NODE_A_MAC,
  NODE_B_MAC,
  NODE_C_MAC,
  VIP,
  VIP6,
  dadProbe,
  frameFields,
  hubLens,
} from "../__tests__/fixtures.js";

const OTHER_CLIENT = "192.0.2.2";
const MACS: Record<string, string> = { "node-a": NODE_A_MAC, "node-b": NODE_B_MAC, "node-c": NODE_C_MAC };
const NODES = Object.keys(MACS);
const mac = (node: string) => MACS[node] ?? "";
const nodeOf = (m: string) => Object.entries(MACS).find(([, x]) => x === m)?.[0] ?? null;
const lens = hubLens(nodeOf);

/**
 * A Cluster feeds a Judge as the hub does: each node's agent reports every broadcast request it saw and its own
 * replies; the judge is asked about the VIP every 100 ms of simulated time.
 */
class Cluster {
  readonly judge = new Judge();
  readonly transitions: Transition[] = [];
  readonly handovers: Handover[] = [];
  now = 1_000_000;
  ctx: IpContext = NO_CONTEXT;
  /** Nodes whose agent is down: they report nothing. */
  readonly down = new Set<string>();

  /** ask: one request from `asker`, answered by `by` (each after `delay` ms). */
  ask(by: readonly string[], o: { asker?: string; delay?: number; skew?: Record<string, number> } = {}): void {
    const t = this.now;
    for (const node of NODES) {
      if (this.down.has(node)) continue;
      const seen = t + (o.skew?.[node] ?? 0);
      const r: RequestReport = {
        ip: VIP,
        asker: o.asker ?? CLIENT,
        iface: "eth0",
        times: [seen],
        replies: by.includes(node) ? [[0, mac(node), o.delay ?? 0.3]] : [],
      };
      this.judge.ingest(
        node,
        { entries: by.includes(node) ? [agg("reply", node, seen + (o.delay ?? 0.3))] : [], requests: [r] },
        this.now,
        lens,
      );
    }
  }

  /** announce: MetalLB's gratuitous burst from `node` (one frame; the judge groups them into episodes). */
  announce(node: string): void {
    for (const n of NODES)
      if (!this.down.has(n)) this.judge.ingest(n, { entries: [agg("gratuitous-reply", node, this.now)], requests: [] }, this.now, lens);
  }

  /** run advances time by `ms` in 100 ms steps, judging the VIP at each, calling `each` (e.g. to ask) first. */
  run(ms: number, each?: (step: number) => void): void {
    for (let step = 0; step < ms / 100; step++) {
      each?.(step);
      this.now += 100;
      const v = this.judge.judge(VIP, this.now, this.ctx, lens);
      this.transitions.push(...v.transitions);
      this.handovers.push(...v.handovers);
    }
  }

  opened(type?: FindingType): string[] {
    return this.transitions
      .filter((t) => t.kind === "opened" && (type === undefined || t.finding.type === type))
      .map((t) => t.finding.type);
  }
}

function agg(kind: ObservationAggregate["kind"], node: string, t: number): ObservationAggregate {
  return {
    ip: VIP,
    mac: mac(node),
    kind,
    iface: "eth0",
    count: 1,
    firstSeen: t,
    lastSeen: t,
    targetMac: null,
    ethernetMismatch: 0,
    ethSrc: null,
  };
}

describe("the judge, per request", () => {
  it("raises multi-responder when every node answers each request (strictARP false), within one request", () => {
    const c = new Cluster();
    c.ask(["node-a", "node-b", "node-c"]);
    c.run(100);
    expect(c.opened()).toEqual(["multi-responder"]);
    expect(c.transitions[0]?.finding.macs).toEqual(NODES.map(mac).sort());
    expect(c.transitions[0]?.finding.detail).toMatch(/answered by node-a, node-b and node-c/);
    expect(c.judge.view(VIP, c.now, lens)?.state).toBe("multi-responder");
  });

  it("records a clean handover (old owner stops, new one announces and answers) as a handover, not an incident", () => {
    const c = new Cluster();
    c.run(3000, () => c.ask(["node-a"]));
    // node-a's speaker stops; three requests go unanswered; node-b takes over with MetalLB's burst 0.5 s later.
    c.run(300, () => c.ask([]));
    c.announce("node-b");
    c.run(3000, (s) => (s === 0 ? undefined : c.ask(["node-b"])));
    // node-a's last reply is 3.3 s old, within the answer window, but it let requests it saw go since: not answering.
    expect(
      c.judge
        .view(VIP, c.now, lens)
        ?.responders.filter((r) => r.answering)
        .map((r) => r.node),
    ).toEqual(["node-b"]);
    c.run(FINAL_MS + 2000);
    expect(c.opened()).toEqual([]);
    expect(c.handovers).toHaveLength(1);
    const h = c.judge.view(VIP, c.now, lens)?.handovers[0];
    expect(h).toMatchObject({
      from: { mac: mac("node-a"), node: "node-a" },
      to: { mac: mac("node-b"), node: "node-b" },
      unanswered: 3,
      announced: true,
    });
    // From node-a's last reply (at 2.9 s + 0.3 ms) to node-b's announcement (3.3 s).
    expect(h?.gapMs).toBeCloseTo(399.7, 1);
    const v = c.judge.view(VIP, c.now, lens);
    expect(v?.state).toBe("single");
    expect(v?.responders.filter((r) => r.answering).map((r) => r.node)).toEqual(["node-b"]);
  });

  it("raises changed when the answers move to a MAC that never announced", () => {
    const c = new Cluster();
    c.run(1000, () => c.ask(["node-a"]));
    c.run(3000, () => c.ask(["node-c"]));
    c.run(FINAL_MS + 2000);
    expect(c.opened()).toEqual(["changed"]);
    expect(c.handovers[0]).toMatchObject({ from: { node: "node-a" }, to: { node: "node-c" } });
    expect(c.judge.view(VIP, c.now, lens)?.handovers[0]?.announced).toBe(false);
  });

  it("tells a failback (there and back once) from a flip-flop (back and forth three times)", () => {
    const c = new Cluster();
    const phase = (node: string) => {
      c.announce(node);
      c.run(2000, () => c.ask([node]));
    };
    phase("node-a");
    phase("node-b");
    phase("node-a");
    c.run(FINAL_MS);
    expect(c.opened()).toEqual([]);
    expect(c.handovers).toHaveLength(2);
    phase("node-b");
    c.run(FINAL_MS);
    expect(c.opened()).toEqual(["flip-flop"]);
  });

  it("counts no move where the old owner's answer could not be seen: no flip-flop from a node that sees only some requests", () => {
    const c = new Cluster();
    // node-a owns the IP; now and then its agent misses requests (reconnecting, lagging), and those show only node-b's
    // answer: node-b answers too, but nothing said node-a stopped.
    c.run(2000, () => c.ask(["node-a"]));
    for (let k = 0; k < 4; k++) {
      c.down.add("node-a");
      c.run(1000, () => c.ask(["node-b"]));
      c.down.delete("node-a");
      c.run(1000, () => c.ask(["node-a"]));
    }
    c.run(FINAL_MS);
    expect(c.opened("flip-flop")).toEqual([]);
    expect(c.handovers).toEqual([]);
  });

  it("still sees a flip-flop when the node that loses the IP is blind while it has lost it (its link flaps)", () => {
    const c = new Cluster();
    c.run(2000, () => c.ask(["node-a"]));
    // node-a's link goes down for three minutes (it neither answers nor sees), node-b answers; then back, twice: the
    // moves back alone (every six minutes) would not make three within FLIP_FLOP_MS.
    for (let k = 0; k < 2; k++) {
      c.down.add("node-a");
      c.run(180_000, (step) => (step % 10 === 0 ? c.ask(["node-b"]) : undefined));
      c.down.delete("node-a");
      c.run(180_000, (step) => (step % 10 === 0 ? c.ask(["node-a"]) : undefined));
    }
    expect(c.opened("flip-flop")).toEqual(["flip-flop"]);
    // Nobody saw when node-a stopped: the moves away from it are no handovers; the moves back are.
    expect(c.handovers.map((h) => [nodeOf(h.from.mac), nodeOf(h.to.mac)])).toEqual([
      ["node-b", "node-a"],
      ["node-b", "node-a"],
    ]);
  });

  it("raises split-brain when two nodes announce and keep claiming the IP, not for a sequential takeover", () => {
    const c = new Cluster();
    c.announce("node-a");
    c.announce("node-b");
    c.run(2000, () => c.ask(["node-a", "node-b"]));
    expect(c.opened("split-brain")).toEqual(["split-brain"]);
    const seq = new Cluster();
    seq.announce("node-a");
    seq.run(3000, () => seq.ask(["node-a"]));
    seq.announce("node-b");
    seq.run(3000, (s) => (s === 0 ? undefined : seq.ask(["node-b"])));
    expect(seq.opened()).toEqual([]);
  });

  it("raises stale-announcer when another node announced last and the owner stays silent", () => {
    const c = new Cluster();
    c.ctx = { ...NO_CONTEXT, owner: { node: "node-b", macs: [mac("node-b")] } };
    c.announce("node-a");
    c.run(STALE_ANNOUNCER_MS - 1000, () => c.ask(["node-b"]));
    expect(c.opened()).toEqual([]);
    c.run(2000, () => c.ask(["node-b"]));
    expect(c.opened()).toEqual(["stale-announcer"]);
    expect(c.transitions[0]?.finding.detail).toMatch(/came from node-a, not from its owner node-b.*Force re-announce/);
    expect(c.transitions[0]?.finding.macs).toEqual([mac("node-a"), mac("node-b")]);
    // The owner announces (Force re-announce): the finding clears after the hysteresis.
    c.announce("node-b");
    c.run(CLEAR_AFTER_MS + 1000, () => c.ask(["node-b"]));
    expect(c.transitions.filter((t) => t.kind === "cleared").map((t) => t.finding.type)).toEqual(["stale-announcer"]);
  });

  it("raises wrong-owner for another node answering past the owner's grace, and says nothing of owners when none is known", () => {
    const c = new Cluster();
    c.ctx = { ...NO_CONTEXT, owner: { node: "node-a", macs: [mac("node-a")] } };
    // A failover: the new owner answers a moment before MetalLB's status says it owns the IP.
    c.run(OWNER_GRACE_MS - 500, () => c.ask(["node-b"]));
    expect(c.opened()).toEqual([]);
    c.run(1000, () => c.ask(["node-b"]));
    expect(c.opened()).toEqual(["wrong-owner"]);
    const unknown = new Cluster();
    unknown.run(1000, () => unknown.ask(["node-b"]));
    expect(unknown.opened()).toEqual([]);
  });

  it("raises address-conflict when a host that is no node answers for a cluster IP, only when every node is watched", () => {
    const STRANGER = "00:1b:21:00:00:01";
    const named: Lens = { ...lens, vendorOf: (m) => (m === STRANGER ? "Intel Corporate" : null) };
    const run = (strangers: boolean, ms: number) => {
      const judge = new Judge();
      let now = 1_000_000;
      const opened: Transition[] = [];
      for (let k = 0; k < ms / 100; k++) {
        // node-a asks for the VIP (a probe from the node) and sees the stranger's answer, which is addressed to it.
        const reply = { ...agg("reply", "node-a", now + 0.4), mac: STRANGER };
        const request: RequestReport = { ip: VIP, asker: "198.51.100.10", iface: "eth0", times: [now], replies: [[0, STRANGER, 0.4]] };
        judge.ingest("node-a", { entries: [agg("request", "node-a", now), reply], requests: [request] }, now, named);
        now += 100;
        opened.push(...judge.judge(VIP, now, { ...NO_CONTEXT, strangers }, named).transitions.filter((t) => t.kind === "opened"));
      }
      return opened.map((t) => t.finding);
    };
    // A node's MAC that just appeared looks the same for a few seconds: only one that keeps answering is a stranger.
    expect(run(true, STRANGER_GRACE_MS - 1000)).toEqual([]);
    const found = run(true, STRANGER_GRACE_MS + 1000);
    expect(found.map((f) => [f.type, f.macs])).toEqual([["address-conflict", [STRANGER]]]);
    expect(found[0]?.detail).toContain(`${STRANGER} (Intel Corporate), not a node of the cluster`);
    // A node whose agent is missing would look the same: without every node watched, nothing is said.
    expect(run(false, STRANGER_GRACE_MS + 1000)).toEqual([]);
  });

  it("names a host that is no node by its vendor in a finding's text: a probe answered by it and a node", () => {
    const STRANGER = "00:1b:21:00:00:03";
    const named: Lens = { ...lens, vendorOf: (m) => (m === STRANGER ? "Intel Corporate" : null) };
    const judge = new Judge();
    const now = 1_000_000;
    // node-a asks for the VIP and hears two answers addressed to it: node-b's and the stranger's.
    const replies = [agg("reply", "node-b", now + 0.3), { ...agg("reply", "node-b", now + 0.4), mac: STRANGER }];
    const request: RequestReport = {
      ip: VIP,
      asker: "198.51.100.10",
      iface: "eth0",
      times: [now],
      replies: [
        [0, mac("node-b"), 0.3],
        [0, STRANGER, 0.4],
      ],
    };
    judge.ingest("node-a", { entries: [agg("request", "node-a", now), ...replies], requests: [request] }, now, named);
    const opened = judge.judge(VIP, now + 100, NO_CONTEXT, named).transitions.filter((t) => t.kind === "opened");
    expect(opened.map((t) => t.finding.type)).toEqual(["multi-responder"]);
    expect(opened[0]?.finding.detail).toContain(`answered by node-b and ${STRANGER} (Intel Corporate, not a cluster node)`);
  });

  it("sees through whohas's own probes a host that answers no request the agents see, and calls it a conflict", () => {
    const STRANGER = "00:1b:21:00:00:02";
    const PROBER = "198.51.100.10";
    const own = new OwnRequests();
    const probing: Lens = { ...lens, vendorOf: () => "Intel Corporate", ownRequest: (ip, asker, t) => own.has(ip, asker, t) };
    const judge = new Judge();
    let now = 1_000_000;
    const opened: Transition[] = [];
    // Every 10 s node-a probes the VIP (the hub noted it first) and sees the stranger's unicast answer, and nothing else.
    for (let k = 0; k < 50 * 10; k++) {
      if (k % 100 === 0) {
        own.expect(VIP, [PROBER, mac("node-a")], now, 1);
        const request: RequestReport = { ip: VIP, asker: PROBER, iface: "eth0", times: [now], replies: [[0, STRANGER, 0.4]] };
        const entries = [agg("request", "node-a", now), { ...agg("reply", "node-a", now + 0.4), mac: STRANGER }];
        judge.ingest("node-a", { entries, requests: [request] }, now, probing);
      }
      now += 100;
      opened.push(...judge.judge(VIP, now, { ...NO_CONTEXT, strangers: true }, probing).transitions.filter((t) => t.kind === "opened"));
      // Between two probes the stranger is not answering anyone the agents see; the probes say it still holds the IP.
      if (k === 150) expect(judge.view(VIP, now, probing)?.responders.map((r) => [r.mac, r.answering])).toEqual([[STRANGER, false]]);
    }
    // Its third answer, 20 s after its first, makes it a stranger; nobody else answers, so no several responders.
    expect(opened.map((t) => [t.finding.type, t.finding.macs, t.finding.firstSeen])).toEqual([["address-conflict", [STRANGER], 1_020_100]]);
    // It goes: the next probe it does not answer ends its streak, and the conflict clears after the hysteresis.
    const cleared: Transition[] = [];
    for (let k = 0; k < (CLEAR_AFTER_MS + 30_000) / 100; k++) {
      if (k % 100 === 0) {
        own.expect(VIP, [PROBER, mac("node-a")], now, 1);
        const request: RequestReport = { ip: VIP, asker: PROBER, iface: "eth0", times: [now], replies: [] };
        judge.ingest("node-a", { entries: [agg("request", "node-a", now)], requests: [request] }, now, probing);
      }
      now += 100;
      cleared.push(...judge.judge(VIP, now, { ...NO_CONTEXT, strangers: true }, probing).transitions.filter((t) => t.kind === "cleared"));
    }
    expect(cleared.map((t) => t.finding.type)).toEqual(["address-conflict"]);
    // The probes are no client's: no request counted, nobody left unanswered, no race timed.
    expect(judge.view(VIP, now, probing)?.requests).toBe(0);
  });

  it("leaves whohas's own unanswered probes out of no-responder, and their answers out of who answers first", () => {
    const c = new Cluster();
    const own = new OwnRequests();
    const probing: Lens = { ...lens, ownRequest: (ip, asker, t) => own.has(ip, asker, t) };
    const PROBER = "198.51.100.10";
    c.run(NO_RESPONDER_MS + FINAL_MS + 2000, (step) => {
      if (step % 10 !== 0) return;
      own.expect(VIP, [PROBER], c.now, 1);
      for (const node of NODES) {
        const r: RequestReport = { ip: VIP, asker: PROBER, iface: "eth0", times: [c.now], replies: [] };
        c.judge.ingest(node, { entries: [], requests: [r] }, c.now, probing);
      }
    });
    expect(c.opened()).toEqual([]);
    // The same requests from a client are a client left without an answer.
    c.run(NO_RESPONDER_MS + FINAL_MS + 2000, (step) => (step % 10 === 0 ? c.ask([]) : undefined));
    expect(c.opened()).toEqual(["no-responder"]);
  });

  it("raises wrong-interface when the owner answers from an interface its announcer does not name", () => {
    const ETH1 = "02:00:5e:00:01:0a";
    const c = new Cluster();
    c.ctx = { ...NO_CONTEXT, owner: { node: "node-a", macs: [mac("node-a")] }, ownerOtherMacs: [ETH1] };
    c.run(OWNER_GRACE_MS + 2000, () => {
      const report: RequestReport = { ip: VIP, asker: CLIENT, iface: "eth1", times: [c.now], replies: [[0, ETH1, 0.3]] };
      c.judge.ingest(
        "node-a",
        { entries: [{ ...agg("reply", "node-a", c.now), mac: ETH1, iface: "eth1" }], requests: [report] },
        c.now,
        lens,
      );
    });
    expect(c.opened()).toEqual(["wrong-interface"]);
    expect(c.transitions[0]?.finding.macs).toEqual([ETH1]);
  });

  it("judges nothing of an IP that is not announced over ARP (BGP only), however many answer", () => {
    const c = new Cluster();
    c.ctx = { ...NO_CONTEXT, owner: null, layer2: false };
    c.run(3000, () => c.ask(NODES));
    expect(c.opened()).toEqual([]);
    c.ctx = NO_CONTEXT;
    c.run(1000, () => c.ask(NODES));
    expect(c.opened()).toEqual(["multi-responder"]);
  });

  it("raises no-responder once requests went unanswered for 3 s, and silent-drop for a node without endpoint", () => {
    const c = new Cluster();
    c.run(1000, () => c.ask(["node-a"]));
    c.run(NO_RESPONDER_MS + FINAL_MS + 500, () => c.ask([]));
    expect(c.opened()).toEqual(["no-responder"]);
    const local = new Cluster();
    local.ctx = { ...NO_CONTEXT, local: { endpointNodes: ["node-b"] } };
    local.run(1000, () => local.ask(["node-a"]));
    expect(local.opened()).toEqual(["silent-drop"]);
  });

  it("makes no handover and no verdict of silence when the old owner's agent is down (its replies cannot be seen)", () => {
    const c = new Cluster();
    c.run(2000, () => c.ask(["node-a"]));
    c.down.add("node-a");
    c.run(6000, () => c.ask(["node-b"]));
    c.run(FINAL_MS);
    expect(c.handovers).toEqual([]);
    expect(c.opened()).toEqual([]);
  });

  it("joins each node's sighting of one request despite clock skew, and never two requests of one asker", () => {
    const c = new Cluster();
    c.ask(["node-a", "node-b"], { skew: { "node-b": 30 } });
    c.run(100);
    expect(c.opened()).toEqual(["multi-responder"]);
    // Two requests of one asker 20 ms apart: which sighting is which is unknown, so no verdict of who answered.
    const burst = new Cluster();
    burst.ask(["node-a"]);
    burst.now += 20;
    burst.ask(["node-b"]);
    burst.run(FINAL_MS + 500);
    expect(burst.opened()).toEqual([]);
    // Different askers at the same moment are different requests: no one request was answered twice.
    const two = new Cluster();
    two.ask(["node-a"], { asker: CLIENT });
    two.ask(["node-b"], { asker: OTHER_CLIENT });
    two.run(FINAL_MS + 500);
    expect(two.opened("multi-responder")).toEqual([]);
  });

  it("counts a capture point's report of a request that came FINAL_MS or more after it as late", () => {
    const c = new Cluster();
    c.ask(["node-a"]);
    expect(c.judge.lateSightings).toBe(0);
    const report = (t: number): RequestReport => ({ ip: VIP, asker: CLIENT, iface: "eth0", times: [t], replies: [] });
    c.judge.ingest("node-c", { entries: [], requests: [report(c.now - FINAL_MS + 1)] }, c.now, lens);
    expect(c.judge.lateSightings).toBe(0);
    c.judge.ingest("node-c", { entries: [], requests: [report(c.now - FINAL_MS)] }, c.now, lens);
    expect(c.judge.lateSightings).toBe(1);
  });

  it("closes an incident only after CLEAR_AFTER_MS without evidence", () => {
    const c = new Cluster();
    c.ask(["node-a", "node-b"]);
    c.run(CLEAR_AFTER_MS - 1000, () => c.ask(["node-a"]));
    expect(c.transitions.map((t) => t.kind)).toEqual(["opened"]);
    c.run(2000, () => c.ask(["node-a"]));
    expect(c.transitions.map((t) => t.kind)).toEqual(["opened", "cleared"]);
  });

  it("raises ethernet-mismatch from a frame whose Ethernet source is not its sender", () => {
    const c = new Cluster();
    c.judge.ingest(
      "node-a",
      { entries: [{ ...agg("gratuitous-reply", "node-a", c.now), ethernetMismatch: 1, ethSrc: "02:00:5e:00:00:99" }], requests: [] },
      c.now,
      lens,
    );
    c.run(100);
    expect(c.opened()).toEqual(["ethernet-mismatch"]);
    expect(c.transitions[0]?.finding.macs).toEqual(["02:00:5e:00:00:0a", "02:00:5e:00:00:99"]);
  });

  it("says whether a judgement tells of the IP what an earlier one did: state, MACs answering, handovers", () => {
    const c = new Cluster();
    const judge = () => c.judge.judge(VIP, c.now, c.ctx, lens);
    c.run(2000, () => c.ask(["node-a"]));
    const single = judge().key();
    expect(single).toMatchObject({ state: "s", macs: [mac("node-a")], handovers: 0 });
    c.run(500, () => c.ask(["node-a"]));
    expect(judge().same(single)).toBe(true);
    expect(judge().same(undefined)).toBe(false);
    // A second MAC answering is news; so is the IP falling silent with time alone.
    c.run(200, () => c.ask(["node-a", "node-b"]));
    const multi = judge();
    expect(multi.same(single)).toBe(false);
    expect(multi.key()).toMatchObject({ state: "m", macs: [mac("node-a"), mac("node-b")] });
    const before = multi.key();
    c.run(60_000);
    expect(judge().same(before)).toBe(false);
    expect(judge().key()).toMatchObject({ state: "i", macs: [] });
  });

  it("interns the IP and MAC texts of a batch, keeping their values", () => {
    const judge = new Judge();
    // Texts built at run time, as JSON.parse makes them: equal values, distinct copies.
    const parsed = (): { entries: ObservationAggregate[]; requests: RequestReport[] } =>
      JSON.parse(
        JSON.stringify({
          entries: [agg("reply", "node-a", 1000)],
          requests: [{ ip: VIP, asker: CLIENT, iface: "eth0", times: [1000], replies: [[0, mac("node-a"), 0.3]] }],
        }),
      ) as { entries: ObservationAggregate[]; requests: RequestReport[] };
    const one = parsed();
    const two = parsed();
    judge.intern(one);
    judge.intern(two);
    expect(two).toEqual(one);
    expect(two.entries[0]?.mac).toBe(mac("node-a"));
    expect(two.requests[0]?.replies[0]?.[1]).toBe(mac("node-a"));
    expect(two.requests[0]?.asker).toBe(CLIENT);
  });
});

const linkLocal = (node: string) => `fe80::${node.slice(-1)}`;

/**
 * A Segment is one link captured by one capture point that sees every frame on it (a client's tcpdump, or a node
 * whose speaker answers through it): NDP frames are built as hosts send them, decoded, folded by a CapturePoint and
 * drained into the Judge every 100 ms, as an agent and the hub do.
 */
class Segment {
  readonly judge = new Judge();
  readonly point = new CapturePoint(1000);
  readonly transitions: Transition[] = [];
  readonly handovers: Handover[] = [];
  readonly lens: Lens = { nodeOf, watches: () => true };
  now = 1_000_000;

  frame(bytes: Uint8Array, at = this.now): void {
    this.point.addFrame(frameFields(bytes), "eth0", at);
  }

  /** dad: a Duplicate Address Detection probe for VIP6 by `node` (RFC 4862 5.4.2: from ::, no source LLA). */
  dad(node: string): void {
    this.frame(dadProbe(mac(node), VIP6));
  }

  /** ask: the client's NS for VIP6, answered by `by` with solicited NAs 0.3 ms later. */
  ask(by: readonly string[]): void {
    this.frame(newNeighborSolicitation(CLIENT_MAC, CLIENT6, VIP6));
    for (const n of by) this.frame(newSolicitedAdvertisement(mac(n), linkLocal(n), VIP6, CLIENT_MAC, CLIENT6), this.now + 0.3);
  }

  /** announce: MetalLB's unsolicited NA from `node` (S=0, O=1, to ff02::1). */
  announce(node: string): void {
    this.frame(newUnsolicitedAdvertisement(mac(node), linkLocal(node), VIP6));
  }

  run(ms: number, each?: (step: number) => void): void {
    for (let step = 0; step < ms / 100; step++) {
      each?.(step);
      this.now += 100;
      const batch = this.point.drain(1000, this.now);
      keyBatch(batch);
      this.judge.ingest("node-c", batch, this.now, this.lens);
      const v = this.judge.judge(VIP6, this.now, NO_CONTEXT, this.lens);
      this.transitions.push(...v.transitions);
      this.handovers.push(...v.handovers);
    }
  }

  view() {
    return this.judge.view(VIP6, this.now, this.lens);
  }
}

describe("the judge on NDP frames, through a capture point", () => {
  it("counts a DAD probe as no request, no responder and no asker, and never as unanswered", () => {
    const s = new Segment();
    s.run(FINAL_MS + NO_RESPONDER_MS + 2000, (step) => (step % 10 === 0 ? s.dad("node-b") : undefined));
    expect(s.transitions).toEqual([]);
    expect(s.view()).toMatchObject({ requests: 0, lastRequest: null, responders: [], askers: [], state: "idle", unansweredSince: null });
    // The same frames from a client's address are its requests: asked for and unanswered.
    s.run(FINAL_MS + NO_RESPONDER_MS + 2000, (step) => (step % 10 === 0 ? s.ask([]) : undefined));
    expect(s.transitions.map((t) => `${t.kind} ${t.finding.type}`)).toEqual(["opened no-responder"]);
    expect(s.view()?.askers.map((a) => a.ip)).toEqual([CLIENT6]);
  });

  it("counts an unsolicited NA as an announcement: gratuitous, its time and kind, and a takeover announced", () => {
    const s = new Segment();
    s.run(2000, (step) => (step % 5 === 0 ? s.ask(["node-a"]) : undefined));
    // node-a stops; node-b takes over with MetalLB's burst of unsolicited NAs and answers from then on.
    s.run(300);
    const burst = s.now;
    s.run(300, (step) => (step === 0 ? s.announce("node-b") : undefined));
    s.announce("node-b");
    s.run(3000, (step) => (step % 5 === 0 ? s.ask(["node-b"]) : undefined));
    s.run(FINAL_MS + 1000);
    const v = s.view();
    expect(v?.responders.find((r) => r.node === "node-b")).toMatchObject({
      gratuitous: 2,
      lastGratuitous: burst + 300,
      lastAnnouncement: { kind: "na-unsolicited", targetMac: null },
    });
    expect(v?.responders.find((r) => r.node === "node-a")).toMatchObject({ gratuitous: 0, lastGratuitous: null, lastAnnouncement: null });
    // The handover is dated by the burst and checked as announced once its grace passed.
    expect(v?.handovers).toEqual([
      expect.objectContaining({
        from: expect.objectContaining({ node: "node-a" }),
        to: expect.objectContaining({ node: "node-b" }),
        at: burst,
        announced: true,
      }),
    ]);
    expect(s.transitions.filter((t) => t.kind === "opened")).toEqual([]);
  });
});

describe("news: a MAC answering or announcing an IP anew", () => {
  const report = (t: number, macs: readonly string[], asker = CLIENT): RequestReport => ({
    ip: VIP,
    asker,
    iface: "eth0",
    times: [t],
    replies: macs.map((m) => [0, m, 0.3] as [number, string, number]),
  });

  it("is a first answer, a second MAC, and a MAC back after ANSWER_WINDOW_MS; not a MAC that keeps answering", () => {
    const judge = new Judge();
    const news = (node: string, t: number, macs: readonly string[]) => [
      ...judge.ingest(node, { entries: [], requests: [report(t, macs)] }, t, lens).news,
    ];
    expect(news("node-a", 1_000_000, [mac("node-a")])).toEqual([VIP]);
    expect(news("node-a", 1_000_100, [mac("node-a")])).toEqual([]);
    expect(news("node-b", 1_000_200, [mac("node-b")])).toEqual([VIP]);
    expect(news("node-b", 1_000_300, [mac("node-b")])).toEqual([]);
    expect(news("node-b", 1_007_000, [mac("node-b")])).toEqual([VIP]);
  });

  it("is an announcement from a MAC quiet for the IP, and not the rest of its burst", () => {
    const judge = new Judge();
    const news = (t: number) => [
      ...judge.ingest("node-a", { entries: [agg("gratuitous-reply", "node-b", t)], requests: [] }, t, lens).news,
    ];
    expect(news(1_000_000)).toEqual([VIP]);
    expect(news(1_001_100)).toEqual([]);
  });

  it("is not whohas's own probe answered: the hub asked, no client did", () => {
    const own = new OwnRequests();
    const probing: Lens = { ...lens, ownRequest: (ip, asker, t) => own.has(ip, asker, t) };
    const judge = new Judge();
    const PROBER = "198.51.100.10";
    own.expect(VIP, [PROBER, mac("node-a")], 1_000_000, 1);
    const r = judge.ingest("node-a", { entries: [], requests: [report(1_000_000, [mac("node-b")], PROBER)] }, 1_000_000, probing);
    expect([...r.news]).toEqual([]);
  });
});
