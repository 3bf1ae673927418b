import { MAX_PROBE_REPLIES } from "../wire.js";

/** A ProbeReply is one MAC answering one probe request, and how long after the request it came. */
export interface ProbeReply {
  readonly mac: string;
  readonly latencyMs: number;
}

/** A ProbeRequestResult is what one broadcast request of a probe got back. */
export interface ProbeRequestResult {
  readonly seq: number;
  readonly sentAt: number;
  readonly replies: readonly ProbeReply[];
}

/** A ProbeSummary is the outcome of a whole probe: the one-minute check operators do by hand, counting responders. */
export interface ProbeSummary {
  readonly ip: string;
  readonly requests: number;
  /** Requests with no reply at all. */
  readonly unanswered: number;
  /** Requests answered by two or more MACs: the incident. */
  readonly multiAnswered: number;
  /** Replies per MAC, and how often each answered first. */
  readonly macs: readonly { readonly mac: string; readonly replies: number; readonly first: number }[];
}

/**
 * A ProbeSession matches replies to the broadcast requests of one probe. A reply belongs to the latest request sent
 * before it, if it came within `windowMs` (a reply that late is a stale one, not an answer). Pure: the caller sends
 * the frames and feeds the times.
 */
export class ProbeSession {
  readonly #results: { seq: number; sentAt: number; replies: ProbeReply[]; overflow: number }[] = [];

  /**
   * `maxReplies`: the distinct MACs kept per request (the first to answer). Forged replies from ever new MACs only
   * raise a request's overflow count past that; two or more kept already make it answered by several.
   */
  constructor(
    readonly ip: string,
    readonly windowMs: number,
    readonly maxReplies: number = MAX_PROBE_REPLIES,
  ) {
    if (!(maxReplies >= 2)) throw new RangeError(`probe session: keeps ${maxReplies} replies (at least 2)`);
  }

  /** request records a request sent at `now` and returns its sequence number. */
  request(now: number): number {
    const seq = this.#results.length + 1;
    this.#results.push({ seq, sentAt: now, replies: [], overflow: 0 });
    return seq;
  }

  /** reply records a reply from `mac` at `now`; returns the request it answered, or null when it answered none. */
  reply(mac: string, now: number): number | null {
    const last = this.#results.at(-1);
    if (last === undefined || now < last.sentAt || now - last.sentAt > this.windowMs) return null;
    // A MAC answering the same request twice (two interfaces, a retransmit) counts once. At most maxReplies are kept,
    // so this look stays short however many forged replies come.
    if (last.replies.some((r) => r.mac === mac)) return last.seq;
    if (last.replies.length >= this.maxReplies) {
      last.overflow++;
      return last.seq;
    }
    last.replies.push({ mac, latencyMs: now - last.sentAt });
    return last.seq;
  }

  /** shift moves every request's time by `ms`: the clock it was read from stepped (ProbeBatch). */
  shift(ms: number): void {
    for (const r of this.#results) r.sentAt += ms;
  }

  /** result returns one request's outcome so far. */
  result(seq: number): ProbeRequestResult | null {
    const r = this.#results[seq - 1];
    return r === undefined ? null : { seq: r.seq, sentAt: r.sentAt, replies: r.replies };
  }

  /** overflow is how many replies to request `seq` came, past the first maxReplies MACs, from MACs not kept. */
  overflow(seq: number): number {
    return this.#results[seq - 1]?.overflow ?? 0;
  }

  summary(): ProbeSummary {
    return summarizeProbe(this.ip, this.#results);
  }
}

/**
 * summarizeProbe counts a probe's requests: unanswered, answered by two or more MACs, and per MAC its replies and how
 * often it came first (each request's replies in the order they came).
 */
export function summarizeProbe(ip: string, requests: readonly { readonly replies: readonly { readonly mac: string }[] }[]): ProbeSummary {
  const macs = new Map<string, { replies: number; first: number }>();
  let unanswered = 0;
  let multiAnswered = 0;
  for (const r of requests) {
    if (r.replies.length === 0) unanswered++;
    if (r.replies.length >= 2) multiAnswered++;
    r.replies.forEach((rep, i) => {
      const m = macs.get(rep.mac) ?? { replies: 0, first: 0 };
      m.replies++;
      if (i === 0) m.first++;
      macs.set(rep.mac, m);
    });
  }
  return {
    ip,
    requests: requests.length,
    unanswered,
    multiAnswered,
    macs: [...macs.entries()].map(([mac, m]) => ({ mac, ...m })).sort((a, b) => b.replies - a.replies || a.mac.localeCompare(b.mac)),
  };
}
