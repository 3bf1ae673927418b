import { randomUUID } from "node:crypto";
import {
  MAX_PROBE_REPLIES,
  MAX_PROBE_TARGETS,
  ProbeRounds,
  WIRE_VERSION,
  planProbes,
  splitIpKey,
  type ProbeRequestResult,
  type ProbeRound,
} from "@whohas/core";
import type { Hub } from "../hub/hub.js";
import type { CommandSender } from "./command.js";

/** INTERVAL_MS: each prober asks each IP once a second, as a client re-asking for an address does. */
const INTERVAL_MS = 1000;
/** PROBERS: a node never hears its own answer to its own broadcast, so each IP is asked from two (Actions.probe). */
const PROBERS = 2;
/** COMMAND_GRACE_MS: how long after its planned end an agent may take to report a command done. */
const COMMAND_GRACE_MS = 15_000;
/**
 * SINGLES_AT_ONCE: one-IP probes an older agent (no probe-many) runs at once here. Such an agent runs four commands
 * at most and refuses more as busy; one is left for an operator's probe.
 */
const SINGLES_AT_ONCE = 3;

type Reply = ProbeRound["replies"][number] & { readonly node: string | null };

/** A ProbedIp is what probing one IP from its probers found: every round, with the node of each MAC that answered. */
export interface ProbedIp {
  readonly ip: string;
  readonly probers: readonly string[];
  /** The probers that failed, never reported, or reported fewer requests than asked: what they heard is missing. */
  readonly failedProbers: readonly string[];
  readonly messages: readonly string[];
  readonly rounds: readonly (Omit<ProbeRound, "replies"> & { readonly replies: readonly Reply[] })[];
}

export interface ProbeAllOptions {
  readonly hub: Hub;
  readonly agents: CommandSender;
  /** IP keys (ADDRESS, or ADDRESS@VLAN). */
  readonly ips: readonly string[];
  /** Requests per IP from each prober. */
  readonly rounds: number;
  /** The nodes whose agents are connected now. */
  readonly up: readonly string[];
  readonly random: () => number;
  /** Progress, one line at a time. */
  readonly say: (line: string) => void;
  /** Each IP once every prober of it is through. */
  readonly done: (p: ProbedIp) => void;
}

interface IpState {
  readonly key: string;
  readonly rounds: ProbeRounds;
  readonly probers: readonly string[];
  readonly pending: Set<string>;
  /** The request numbers each prober reported. */
  readonly heard: Map<string, Set<number>>;
  readonly failed: Set<string>;
  readonly messages: string[];
}

/** targetKey names a target as an agent echoes it: its address and VLAN. */
const targetKey = (ip: string, vlan: number | null | undefined): string => `${ip}@${vlan ?? ""}`;
/** keyTarget is the targetKey of an IP key. */
const keyTarget = (key: string): string => {
  const { ip, vlan } = splitIpKey(key);
  return targetKey(ip, vlan);
};

/**
 * probeAll asks every IP at once, `rounds` requests each from two nodes (core's planProbes picks them as the
 * dashboard's Probe does), and resolves with what each IP's probers heard, merged per request number as ProbeRounds
 * merges a Probe's. A node whose agent takes probe-many asks all its IPs in one command (or as few as its limit
 * allows): its requests spread over each second, one per IP a second. A node whose agent is older asks them one
 * probe each, SINGLES_AT_ONCE at a time. Each request is noted as whohas's own before it goes, so the judge counts
 * who answers it and nothing else. A prober that fails, is refused, goes silent or reports fewer requests than
 * asked is named in `failedProbers`: what it would have heard is missing.
 */
export async function probeAll(o: ProbeAllOptions): Promise<ProbedIp[]> {
  const { hub } = o;
  const plan = planProbes({
    targets: o.ips.map((key) => {
      const v = hub.ip(key);
      return { key, owner: v?.expectedOwner?.node ?? null, capturedBy: v?.capturedBy ?? [] };
    }),
    up: o.up,
    n: PROBERS,
    limitOf: (node) => {
      const limit = hub.agents.probeManyLimit(node);
      return limit === null ? null : Math.min(limit, MAX_PROBE_TARGETS);
    },
    random: o.random,
  });
  const states = new Map<string, IpState>();
  for (const key of o.ips) {
    const probers = plan.probers.get(key) ?? [];
    states.set(key, {
      key,
      rounds: new ProbeRounds(key),
      probers,
      pending: new Set(probers),
      heard: new Map(),
      failed: new Set(),
      messages: [],
    });
  }
  const results = new Map<string, ProbedIp>();
  let allDone: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (allDone = resolve));
  const settle = (s: IpState) => {
    if (s.pending.size > 0 || results.has(s.key)) return;
    const node = (mac: string) => hub.nodeOfMac(mac);
    const p: ProbedIp = {
      ip: s.key,
      probers: s.probers,
      failedProbers: [...s.failed],
      messages: s.messages,
      rounds: s.rounds.rounds().map((r) => ({ ...r, replies: r.replies.map((x) => ({ ...x, node: node(x.mac) })) })),
    };
    results.set(s.key, p);
    o.done(p);
    if (results.size === states.size) allDone();
  };
  const heard = (key: string, node: string, r: ProbeRequestResult) => {
    const s = states.get(key);
    // A request past those asked for (an older agent's probe may send one more) would be a round one prober alone heard.
    if (s === undefined || !s.pending.has(node) || s.failed.has(node) || r.seq > o.rounds) return;
    const seqs = s.heard.get(node) ?? new Set<number>();
    if (seqs.has(r.seq)) {
      // An agent reports each request once: a repeat is a broken or hostile agent, and what it says of this IP is
      // worth nothing. Its prober fails here (verification cannot pass on it), and nothing more from it is kept.
      s.failed.add(node);
      s.messages.push(`${node}: reported request ${r.seq} twice (a protocol error): what it heard is not counted`);
      return;
    }
    seqs.add(r.seq);
    s.heard.set(node, seqs);
    // The MACs of one request are bounded as a probe-many's are on the wire, a one-IP probe's included.
    s.rounds.add(node, r.replies.length > MAX_PROBE_REPLIES ? { ...r, replies: r.replies.slice(0, MAX_PROBE_REPLIES) } : r);
  };
  const end = (key: string, node: string, failure: string | null) => {
    const s = states.get(key);
    if (s?.pending.delete(node) !== true) return;
    const got = s.heard.get(node)?.size ?? 0;
    const why = failure ?? (got < o.rounds ? `reported ${got} of ${o.rounds} requests` : null);
    if (why !== null) {
      s.failed.add(node);
      s.messages.push(`${node}: ${why}`);
    }
    settle(s);
  };

  const durationMs = o.rounds * INTERVAL_MS;
  let round = 0;
  const head = describePlan(plan, o.ips.length, o.rounds);
  o.say(head);
  const progress = (seq: number) => {
    if (seq <= round) return;
    round = seq;
    o.say(`${head}: ${seq} of ${o.rounds} rounds in`);
  };

  const runBatch = (node: string, keys: readonly string[]) => {
    const id = `verify-${randomUUID()}`;
    const byTarget = new Map(keys.map((k) => [keyTarget(k), k]));
    // A batch ends one interval after its last round starts (its IPs' spread), and one reply window later.
    const batchMs = durationMs + 2 * INTERVAL_MS;
    const askers = hub.agents.askersOf(node);
    for (const k of keys) hub.traffic.own.expect(k, askers, hub.clock(), batchMs);
    const endAll = (failure: string) => keys.forEach((k) => end(k, node, failure));
    const timer = setTimeout(() => {
      o.agents.abandon?.(id);
      endAll(`no report within ${COMMAND_GRACE_MS / 1000} s of the end (agent gone?)`);
    }, batchMs + COMMAND_GRACE_MS);
    timer.unref();
    const targets = keys.map((k) => {
      const { ip, vlan } = splitIpKey(k);
      return { ip, vlan };
    });
    const sent = o.agents.command(
      node,
      { v: WIRE_VERSION, type: "probe-many", id, targets, rounds: o.rounds, intervalMs: INTERVAL_MS },
      (m) => {
        if (m.type === "probe-many-result") {
          for (const r of m.results) {
            const key = byTarget.get(targetKey(r.ip, r.vlan));
            if (key !== undefined) heard(key, node, { seq: m.seq, sentAt: r.sentAt, replies: r.replies });
          }
          return progress(m.seq);
        }
        if (m.type !== "command-done") return;
        clearTimeout(timer);
        if (!m.ok) return endAll(m.message);
        const unprobed = new Map((m.unprobed ?? []).map((u) => [targetKey(u.ip, u.vlan), u.message]));
        for (const k of keys) {
          const why = unprobed.get(keyTarget(k));
          end(k, node, why === undefined ? null : `not asked: ${why}`);
        }
      },
    );
    if (!sent) {
      clearTimeout(timer);
      endAll("its agent went away as the probe started");
    }
  };

  const runSingle = (node: string, key: string) =>
    new Promise<void>((resolve) => {
      const id = `verify-${randomUUID()}`;
      const { ip, vlan } = splitIpKey(key);
      hub.traffic.own.expect(key, hub.agents.askersOf(node), hub.clock(), durationMs);
      const finish = (failure: string | null) => {
        clearTimeout(timer);
        end(key, node, failure);
        resolve();
      };
      const timer = setTimeout(() => {
        o.agents.abandon?.(id);
        finish(`no report within ${COMMAND_GRACE_MS / 1000} s of the end (agent gone?)`);
      }, durationMs + COMMAND_GRACE_MS);
      timer.unref();
      const sent = o.agents.command(node, { v: WIRE_VERSION, type: "probe", id, ip, vlan, durationMs, intervalMs: INTERVAL_MS }, (m) => {
        if (m.type === "probe-result") heard(key, node, m);
        else if (m.type === "command-done") finish(m.ok ? null : m.message);
      });
      if (!sent) finish("its agent went away as the probe started");
    });

  for (const s of states.values()) settle(s);
  for (const b of plan.batches) runBatch(b.node, b.keys);
  const queues = new Map<string, string[]>();
  for (const { node, key } of plan.singles) queues.set(node, [...(queues.get(node) ?? []), key]);
  for (const [node, keys] of queues) {
    const worker = async () => {
      for (let key = keys.shift(); key !== undefined; key = keys.shift()) await runSingle(node, key);
    };
    const workers = Math.min(SINGLES_AT_ONCE, keys.length);
    for (let i = 0; i < workers; i++) void worker();
  }
  if (states.size > 0) await finished;
  return o.ips.flatMap((k) => results.get(k) ?? []);
}

/** describePlan says in a line who probes what, and for nodes of an older agent, how it goes and how long it takes. */
function describePlan(plan: ReturnType<typeof planProbes>, ips: number, rounds: number): string {
  const perNode = new Map<string, { ips: number; commands: number; singles: number }>();
  for (const b of plan.batches) {
    const n = perNode.get(b.node) ?? { ips: 0, commands: 0, singles: 0 };
    perNode.set(b.node, { ...n, ips: n.ips + b.keys.length, commands: n.commands + 1 });
  }
  for (const s of plan.singles) {
    const n = perNode.get(s.node) ?? { ips: 0, commands: 0, singles: 0 };
    perNode.set(s.node, { ...n, ips: n.ips + 1, singles: n.singles + 1 });
  }
  const nodes = [...perNode].sort((a, b) => a[0].localeCompare(b[0]));
  const parts = nodes.map(([node, n]) =>
    n.singles > 0
      ? `${node}: ${n.singles} IPs one probe each, ${SINGLES_AT_ONCE} at a time (its agent is of a release before probe-many), about ${Math.ceil(n.singles / SINGLES_AT_ONCE) * rounds} s`
      : `${node}: ${n.ips} IPs in ${n.commands === 1 ? "one command" : `${n.commands} commands`}`,
  );
  return `probing ${ips} IPs from ${nodes.length} nodes at once, ${rounds} requests each from two nodes, one a second per IP (${parts.join("; ")})`;
}
