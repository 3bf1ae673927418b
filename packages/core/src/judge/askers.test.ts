import { describe, expect, it } from "vitest";
import type { RequestReport } from "../wire.js";
import { ASKER_IDLE_MS, MAX_ASKERS } from "./askers.js";
import { FINAL_MS } from "./findings.js";
import type { Lens } from "./ip-judgement.js";
import { Judge } from "./judge.js";
import { OwnRequests } from "./own-requests.js";
import { NO_CONTEXT } from "./rules.js";
import { NODE_A_MAC as A, NODE_B_MAC as B, NODE_C_MAC as C, VIP, hubLens } from "../__tests__/fixtures.js";

const ROUTER = "198.51.100.1";
const ROUTER_MAC = "02:00:5e:00:01:01";
const FIREWALL = "198.51.100.2";
const FIREWALL_MAC = "02:00:5e:00:01:02";
/** A second MAC of node-a (another interface): an answer from it is no change of node. */
const A2 = "02:00:5e:00:00:1a";
const NODE_OF: Record<string, string> = { [A]: "node-a", [A2]: "node-a", [B]: "node-b", [C]: "node-c" };
const NODES = ["node-a", "node-b", "node-c"];
const nodeOf = (m: string) => NODE_OF[m] ?? null;
const lens = hubLens(nodeOf);

/**
 * Feed plays the agents of three nodes: each reports every request it saw, with its own replies (MAC and delay);
 * a request every 100 ms of simulated time, the IP judged as the hub does.
 */
class Feed {
  readonly judge = new Judge();
  now = Date.UTC(2026, 11, 1);
  /** Milliseconds a node's clock is ahead of the others' (it dates the request that much later). */
  skew: Record<string, number> = {};
  constructor(readonly view: Lens = lens) {}

  /** ask: one request from `asker` (with `askerMac`; null: an old agent leaves it out), answered by `answers`. */
  ask(answers: readonly (readonly [string, number])[], asker = ROUTER, askerMac: string | null = ROUTER_MAC): void {
    for (const node of NODES) {
      const t = this.now + (this.skew[node] ?? 0);
      const replies = answers.filter(([m]) => nodeOf(m) === node).map(([m, delay]) => [0, m, delay] as [number, string, number]);
      const r: RequestReport = { ip: VIP, asker, iface: "eth0", times: [t], replies };
      if (askerMac !== null) r.askerMac = askerMac;
      const entries = replies.map(([, mac, delay]) => ({
        ip: VIP,
        mac,
        kind: "reply" as const,
        iface: "eth0",
        count: 1,
        firstSeen: t + delay,
        lastSeen: t + delay,
        targetMac: null,
        ethernetMismatch: 0,
        ethSrc: null,
      }));
      this.judge.ingest(node, { entries, requests: [r] }, this.now, this.view);
    }
    this.step(100);
  }

  step(ms: number): void {
    this.now += ms;
    this.judge.judge(VIP, this.now, NO_CONTEXT, this.view);
  }

  /** askers settles every request (FINAL_MS on) and lists the askers with their counts. */
  askers() {
    this.step(FINAL_MS + 100);
    const v = this.judge.view(VIP, this.now, this.view);
    return (v?.askers ?? []).map((a) => [a.ip, a.mac, a.requests, a.firstAnswerChanges]);
  }
}

describe("first-answer changes, per asker", () => {
  it("counts two changes when a race makes the first answer go from node-a to node-b and back", () => {
    const f = new Feed();
    f.ask([[A, 0.3]]);
    f.ask([
      [A, 0.6],
      [B, 0.2],
    ]);
    f.ask([
      [A, 0.1],
      [B, 0.4],
    ]);
    expect(f.askers()).toEqual([[ROUTER, ROUTER_MAC, 3, 2]]);
    const v = f.judge.view(VIP, f.now, lens);
    expect(v?.firstAnswerChanges).toBe(2);
    expect(v?.askers[0]?.lastChange).toBe(Date.UTC(2026, 11, 1) + 200);
  });

  it("counts no change when the IP moves (a failover: one node answers, then another alone)", () => {
    const f = new Feed();
    for (let k = 0; k < 5; k++) f.ask([[A, 0.3]]);
    for (let k = 0; k < 5; k++) f.ask([[B, 0.3]]);
    expect(f.askers()).toEqual([[ROUTER, ROUTER_MAC, 10, 0]]);
  });

  it("compares the nodes' reply delays, not their clocks: node-b's clock 5 ms ahead does not make it slower", () => {
    const f = new Feed();
    // node-b answers first each time (0.1 ms against node-a's 0.5 ms), and dates the request 5 ms later than node-a.
    f.skew = { "node-b": 5 };
    f.ask([[A, 0.3]]);
    for (let k = 0; k < 4; k++)
      f.ask([
        [A, 0.5],
        [B, 0.1],
      ]);
    expect(f.askers()).toEqual([[ROUTER, ROUTER_MAC, 5, 1]]);
  });

  it("takes the earliest reply as the first answer, whichever node reported it first", () => {
    const f = new Feed();
    for (let k = 0; k < 10; k++)
      f.ask([
        [A, 0.9],
        [B, 0.1],
        [C, 0.5],
      ]);
    expect(f.askers()).toEqual([[ROUTER, ROUTER_MAC, 10, 0]]);
    expect(f.judge.view(VIP, f.now, lens)?.state).toBe("multi-responder");
  });

  it("counts no change for another MAC of the same node, nor across a request nobody answered", () => {
    const f = new Feed();
    f.ask([[A, 0.3]]);
    f.ask([[A2, 0.3]]);
    f.ask([]);
    f.ask([[A, 0.3]]);
    expect(f.askers()).toEqual([[ROUTER, ROUTER_MAC, 4, 0]]);
  });

  it("counts a node race as it happens: with three nodes answering in turn, every request changes", () => {
    const f = new Feed();
    const order = [A, B, C];
    for (let k = 0; k < 30; k++) f.ask(order.map((m, i) => [m, ((i - k + 30) % 3) * 0.2 + 0.1] as const));
    expect(f.askers()).toEqual([[ROUTER, ROUTER_MAC, 30, 29]]);
  });

  it("leaves whohas's own probes out: neither counted as requests nor as a first answer", () => {
    const PROBER = "198.51.100.10";
    const own = new OwnRequests();
    const f = new Feed({ ...lens, ownRequest: (ip, asker, t) => own.has(ip, asker, t) });
    for (let k = 0; k < 6; k++) {
      f.ask([[A, 0.3]]);
      own.expect(VIP, [PROBER], f.now, 1);
      // The probe from node-a's own address is answered by node-b only (a node does not answer itself).
      f.ask([[B, 0.2]], PROBER, A);
    }
    expect(f.askers()).toEqual([[ROUTER, ROUTER_MAC, 6, 0]]);
  });

  it("keeps askers apart: each sees one node always, though the IP's answers alternate", () => {
    const f = new Feed();
    for (let k = 0; k < 10; k++) {
      f.ask([[A, 0.3]], ROUTER, ROUTER_MAC);
      f.ask([[B, 0.3]], FIREWALL, FIREWALL_MAC);
    }
    expect(f.askers()).toEqual([
      [ROUTER, ROUTER_MAC, 10, 0],
      [FIREWALL, FIREWALL_MAC, 10, 0],
    ]);
  });

  it("tells two MACs asking from one address apart, and names the MAC an old agent left out once a new one sends it", () => {
    const f = new Feed();
    f.ask([[A, 0.3]], ROUTER, null);
    f.ask(
      [
        [B, 0.1],
        [A, 0.3],
      ],
      ROUTER,
      ROUTER_MAC,
    );
    f.ask([[A, 0.3]], ROUTER, FIREWALL_MAC);
    f.ask([[A, 0.3]], ROUTER, FIREWALL_MAC);
    expect(f.askers()).toEqual([
      [ROUTER, ROUTER_MAC, 2, 1],
      [ROUTER, FIREWALL_MAC, 2, 0],
    ]);
  });

  it("gives the rate per hour over the last hour, or since first seen when shorter", () => {
    const f = new Feed();
    // 10 minutes of one request a second, both nodes answering and the faster changing every minute: 9 changes.
    for (let s = 0; s < 600; s++) {
      f.ask([
        [A, s % 120 < 60 ? 0.1 : 0.4],
        [B, 0.3],
      ]);
      f.step(900);
    }
    f.askers();
    const first = f.judge.view(VIP, f.now, lens)?.askers[0];
    expect(first?.firstAnswerChanges).toBe(9);
    expect(first?.changesPerHour).toBeCloseTo(9 * 6, -1);
    // An hour and more of node-a alone (a move, not a race: no change): the changes stay counted, the rate falls to none.
    for (let s = 0; s < 3700; s++) {
      f.ask([[A, 0.3]]);
      f.step(900);
    }
    f.askers();
    const later = f.judge.view(VIP, f.now, lens)?.askers[0];
    expect([later?.firstAnswerChanges, later?.changesPerHour]).toEqual([9, 0]);
  });

  it(`keeps at most ${MAX_ASKERS} askers, the latest to ask, and forgets those silent for an hour; the IP's total stays`, () => {
    const f = new Feed();
    const ip = (k: number) => `198.51.100.${100 + k}`;
    const macOf = (k: number) => `02:00:5e:00:02:${(k + 16).toString(16)}`;
    const race = [
      [B, 0.1],
      [A, 0.3],
    ] as const;
    for (let k = 0; k < MAX_ASKERS + 8; k++) {
      f.ask([[A, 0.3]], ip(k), macOf(k));
      f.ask(race, ip(k), macOf(k));
    }
    const all = f.askers();
    expect(all).toHaveLength(MAX_ASKERS);
    expect(all.map((a) => a[0]).sort()).toEqual(Array.from({ length: MAX_ASKERS }, (_, k) => ip(k + 8)).sort());
    expect(f.judge.view(VIP, f.now, lens)?.firstAnswerChanges).toBe(MAX_ASKERS + 8);
    f.step(ASKER_IDLE_MS);
    f.ask([[A, 0.3]]);
    expect(f.askers()).toEqual([[ROUTER, ROUTER_MAC, 1, 0]]);
  });

  it("keeps an asker that saw changes when a crowd of askers that saw none comes after it", () => {
    const f = new Feed();
    f.ask([[A, 0.3]]);
    f.ask([
      [B, 0.1],
      [A, 0.3],
    ]);
    for (let k = 0; k < MAX_ASKERS + 8; k++) f.ask([[A, 0.3]], `198.51.100.${100 + k}`, `02:00:5e:00:02:${(k + 16).toString(16)}`);
    const all = f.askers();
    expect(all).toHaveLength(MAX_ASKERS);
    expect(all[0]).toEqual([ROUTER, ROUTER_MAC, 2, 1]);
  });
});
