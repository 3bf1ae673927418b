import { summarizeProbe, type ProbeReply, type ProbeRequestResult, type ProbeSummary } from "./probe.js";

/**
 * A ProbeRound is one request number of a probe run from several nodes at once: every MAC that answered any of the
 * probers' requests with that number. A node never hears its own answer to its own broadcast, so the hub probes
 * from two nodes: each sees the other's answer, and the union of a round is every node answering.
 */
export interface ProbeRound {
  readonly seq: number;
  /** When the first of the round's requests went out. */
  readonly at: number;
  /** Each MAC once, fastest first, with the quickest of its latencies and the probers that heard it. */
  readonly replies: readonly (ProbeReply & { readonly probers: readonly string[] })[];
  /** The probers whose request with this number has been reported. */
  readonly probers: readonly string[];
}

/**
 * ProbeRounds merges the per-request results several probers stream into rounds (pure: the hub feeds it as the
 * agents report). Repeating a result changes nothing.
 */
export class ProbeRounds {
  readonly #rounds = new Map<
    number,
    { at: number; probers: Set<string>; replies: Map<string, { latencyMs: number; probers: Set<string> }> }
  >();

  constructor(readonly ip: string) {}

  /** add records one prober's result for one request. */
  add(prober: string, r: ProbeRequestResult): void {
    let round = this.#rounds.get(r.seq);
    if (round === undefined) {
      round = { at: r.sentAt, probers: new Set(), replies: new Map() };
      this.#rounds.set(r.seq, round);
    }
    round.at = Math.min(round.at, r.sentAt);
    round.probers.add(prober);
    for (const rep of r.replies) {
      const m = round.replies.get(rep.mac);
      if (m === undefined) round.replies.set(rep.mac, { latencyMs: rep.latencyMs, probers: new Set([prober]) });
      else {
        m.latencyMs = Math.min(m.latencyMs, rep.latencyMs);
        m.probers.add(prober);
      }
    }
  }

  /** rounds returns every round so far, in order. */
  rounds(): ProbeRound[] {
    return [...this.#rounds.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([seq, r]) => ({
        seq,
        at: r.at,
        probers: [...r.probers].sort(),
        replies: [...r.replies.entries()]
          .map(([mac, m]) => ({ mac, latencyMs: m.latencyMs, probers: [...m.probers].sort() }))
          .sort((a, b) => a.latencyMs - b.latencyMs || a.mac.localeCompare(b.mac)),
      }));
  }

  /** summary counts rounds as `whohas probe` counts requests: unanswered, answered by several MACs, per MAC. */
  summary(): ProbeSummary {
    return summarizeProbe(this.ip, this.rounds());
  }
}

/**
 * chooseProbers picks the `n` nodes that probe an IP. A node never hears its own answer to its own broadcast, so the
 * expected owner probes (it hears every other answer) with nodes that captured the IP (they hear the owner's), the
 * rest drawn at random: never by name, which a rogue agent could choose to be first. `random` returns [0, 1).
 */
export function chooseProbers(o: {
  readonly up: readonly string[];
  readonly owner: string | null;
  readonly capturedBy: readonly string[];
  readonly n: number;
  readonly random: () => number;
}): string[] {
  const up = new Set(o.up);
  const out: string[] = o.owner !== null && up.has(o.owner) ? [o.owner] : [];
  const draw = (pool: string[]) => {
    while (out.length < o.n && pool.length > 0) {
      const [node] = pool.splice(Math.floor(o.random() * pool.length), 1);
      if (node !== undefined) out.push(node);
    }
  };
  draw(o.capturedBy.filter((n) => up.has(n) && !out.includes(n)));
  draw(o.up.filter((n) => !out.includes(n)));
  return out;
}
