import { randomUUID } from "node:crypto";
import { ProbeSchedule, WIRE_VERSION, splitIpKey, type Logger } from "@whohas/core";
import type { Hub } from "../hub/hub.js";
import type { CommandSender } from "./command.js";

/** TICK_MS: how often the schedule is asked what is due. */
const TICK_MS = 1000;
/**
 * LISTEN_MS: a background probe is one request; its agent listens this long for the answers it reports (kernels
 * answer within microseconds, speakers within milliseconds; the capture goes on hearing later ones). With
 * MAX_PER_NODE, a node probes 4 IPs a second: 3 nodes, 360 IPs every 30 s.
 */
const LISTEN_MS = 500;
/** MAX_PER_NODE: background probes one node runs at once (an agent runs four commands at most; operators need room). */
const MAX_PER_NODE = 2;
/** COMMAND_GRACE_MS: a probe whose agent has not said it is done by then is taken as lost (the node gets its room back). */
const COMMAND_GRACE_MS = 15_000;

/** The outcome of one background probe, as counted in the hub's metrics. */
export type BackgroundOutcome = "answered" | "unanswered" | "failed";

/** LastProbe is the latest background probe of one IP, as the IP's page shows it. */
export interface LastProbe {
  readonly node: string;
  readonly at: number;
  /** The MACs that answered it; null while it runs or when it failed. */
  readonly macs: readonly string[] | null;
  /** Why it failed (the agent's words); null when it did not. */
  readonly failed: string | null;
}

export interface BackgroundProbeOptions {
  readonly hub: Hub;
  readonly agents: CommandSender;
  readonly intervalMs: number;
  readonly logger: Logger;
  readonly random?: () => number;
  /**
   * True while operators' actions run (a probe, a re-announcement, the strictARP fix's verification): their
   * commands need the agents' room, and the background probe waits.
   */
  readonly paused?: () => boolean;
  readonly onOutcome?: (outcome: BackgroundOutcome) => void;
}

/**
 * The BackgroundProbe asks for every LoadBalancer IP the cluster announces over ARP or NDP (MetalLB layer 2,
 * kube-vip, Cilium, or an announcer not recognised), once an interval, from one node at a time (core's
 * ProbeSchedule). A host that answers only off-cluster clients answers by unicast, past every agent: the node that
 * asks hears it. Each request is noted as whohas's own before it is sent, so the judge counts who answers it and
 * nothing else (no request, race or silence of a client).
 */
export class BackgroundProbe {
  readonly #schedule: ProbeSchedule;
  readonly #running = new Map<string, number>();
  readonly #last = new Map<string, LastProbe>();
  #timer: NodeJS.Timeout | null = null;

  constructor(readonly o: BackgroundProbeOptions) {
    // Asked what is due every TICK_MS: planned that much early, no IP waits longer than one interval.
    this.#schedule = new ProbeSchedule(o.intervalMs, o.random, TICK_MS);
  }

  start(): void {
    this.#timer = setInterval(() => this.tick(), TICK_MS);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** last is the latest background probe of `ip`, null when none ran yet. */
  last(ip: string): LastProbe | null {
    return this.#last.get(ip) ?? null;
  }

  /** tick sends the probes that are due now. */
  tick(): void {
    const { hub } = this.o;
    const now = hub.clock();
    hub.traffic.own.prune(now);
    if (this.o.paused?.() === true) return;
    const targets = [...hub.cluster.inventory().values()]
      .filter((i) => i.announcer !== "metallb-bgp")
      .map((i) => ({ ip: i.ip, owner: i.expectedOwner?.node ?? null }));
    const room = new Map<string, number>();
    // Only nodes whose facts name their addresses: a request from an address the hub cannot tell as its own would be
    // taken for a client's.
    for (const a of hub.agents.list())
      if (a.up && a.connected && hub.agents.reported(a.node)) room.set(a.node, MAX_PER_NODE - (this.#running.get(a.node) ?? 0));
    for (const { ip, node } of this.#schedule.due(now, targets, room)) this.#send(ip, node, now);
    for (const ip of this.#last.keys()) if (!targets.some((t) => t.ip === ip)) this.#last.delete(ip);
  }

  #send(ip: string, node: string, now: number): void {
    const { hub } = this.o;
    // Noted before it is sent: the first report of its request may come before the command is even acknowledged.
    hub.traffic.own.expect(ip, hub.agents.askersOf(node), now, LISTEN_MS);
    const { ip: address, vlan } = splitIpKey(ip);
    let done = false;
    const finish = (outcome: BackgroundOutcome, last: LastProbe) => {
      if (done) return;
      done = true;
      clearTimeout(lost);
      this.#running.set(node, Math.max(0, (this.#running.get(node) ?? 1) - 1));
      this.#last.set(ip, last);
      this.o.onOutcome?.(outcome);
    };
    const id = `background-${randomUUID()}`;
    const lost = setTimeout(() => {
      this.o.agents.abandon?.(id);
      finish("failed", { node, at: now, macs: null, failed: `no answer from ${node}'s agent` });
    }, LISTEN_MS + COMMAND_GRACE_MS);
    lost.unref();
    const sent = this.o.agents.command(
      node,
      { v: WIRE_VERSION, type: "probe", id, ip: address, vlan, durationMs: 1, intervalMs: LISTEN_MS },
      (m) => {
        if (m.type !== "command-done") return;
        if (!m.ok) {
          // A node with no interface on the IP's network is not asked for it again for a while; a busy one is.
          if (/no interface|not on VLAN/.test(m.message)) this.#schedule.refused(ip, node, hub.clock());
          this.o.logger.info("background_probe.refused", {
            ip,
            node,
            message: m.message,
            hint: "another node is asked for it for the next 10 min",
          });
          return finish("failed", { node, at: now, macs: null, failed: m.message });
        }
        const macs = (m.probe?.macs ?? []).map((x) => x.mac);
        finish(macs.length > 0 ? "answered" : "unanswered", { node, at: now, macs, failed: null });
      },
    );
    if (!sent) {
      clearTimeout(lost);
      return;
    }
    this.#running.set(node, (this.#running.get(node) ?? 0) + 1);
    this.#last.set(ip, { node, at: now, macs: null, failed: null });
  }
}
