import { FINAL_MS, JOIN_MS } from "./findings.js";

/**
 * A JoinedRequest is one request of one asker for one IP as every capture point saw it: who saw it, and the union of
 * the replies they saw. A node sees every broadcast request and only its own replies; a client's capture sees every
 * reply to its own requests: either way, two MACs in `replies` means one request answered twice.
 */
export interface JoinedRequest {
  readonly asker: string;
  /** When the first capture point to report it saw it (its clock). */
  readonly t: number;
  /** Each capture point that saw it, with the time on its own clock. */
  readonly seen: Map<string, number>;
  /** Each MAC that answered, with when (the reporting point's clock). */
  readonly replies: Map<string, number>;
  /**
   * Ambiguous: another request of the same asker came within JOIN_MS, so which sightings belong together is not
   * known; it counts as asked but never as evidence of who answered.
   */
  ambiguous: boolean;
  /** Reported only after it was final: too late to be placed in order; evidence of several answers still counts. */
  late: boolean;
}

/** What adding a sighting did: the request it joined, and the MACs it added to it. */
export interface Joined {
  readonly request: JoinedRequest;
  readonly added: readonly string[];
}

/** KEEP_MS: a final request stays this long after it was final, for sightings that arrive late to join it. */
const KEEP_MS = FINAL_MS;
/** MAX_OPEN bounds the requests of one IP waiting to be final (a flood of askers cannot grow it without end). */
const MAX_OPEN = 4096;

/**
 * A RequestJoin joins the sightings of one IP's requests from every capture point and hands them out in order once
 * final. Sightings of one asker join when their times differ by at most JOIN_MS, one per capture point; a sighting
 * that could belong to two requests makes both ambiguous instead of guessing.
 */
export class RequestJoin {
  /** Not final yet, in time order. */
  readonly #open: JoinedRequest[] = [];
  /** Final, kept KEEP_MS for late sightings, in time order. */
  readonly #done: JoinedRequest[] = [];
  #dropped = 0;

  /** pending tells whether requests wait to be final. */
  get pending(): boolean {
    return this.#open.length > 0;
  }

  /** dropped counts sightings refused at MAX_OPEN. */
  get dropped(): number {
    return this.#dropped;
  }

  /**
   * add joins one capture point's sighting of a request (`replies`: MAC and reply time). `now` decides whether it is
   * already past final (late). Returns null when refused at the bound.
   */
  add(point: string, asker: string, t: number, replies: readonly (readonly [string, number])[], now: number): Joined | null {
    const late = now - t >= FINAL_MS;
    const near = [...nearby(this.#open, asker, t), ...nearby(this.#done, asker, t)];
    // The same point telling more of a request it reported before (a reply seen after its first report).
    let r = near.find((j) => j.seen.get(point) === t);
    if (r === undefined) {
      const only = near.length === 1 ? near[0] : undefined;
      if (only !== undefined && !only.seen.has(point)) r = only;
      else {
        if (!late && this.#open.length >= MAX_OPEN) {
          this.#dropped++;
          return null;
        }
        r = { asker, t, seen: new Map(), replies: new Map(), ambiguous: near.length > 0, late };
        for (const j of near) j.ambiguous = true;
        insert(late ? this.#done : this.#open, r);
      }
      r.seen.set(point, t);
    }
    const added: string[] = [];
    for (const [mac, at] of replies) {
      const was = r.replies.get(mac);
      if (was === undefined) added.push(mac);
      if (was === undefined || at < was) r.replies.set(mac, at);
    }
    return { request: r, added };
  }

  /**
   * finalize hands out the requests that became final by `now` (every one when `all`: no more sightings will come),
   * in time order, and forgets old final ones.
   */
  finalize(now: number, all = false): JoinedRequest[] {
    let n = all ? this.#open.length : 0;
    while (n < this.#open.length && now - (this.#open[n]?.t ?? 0) >= FINAL_MS) n++;
    const out = this.#open.splice(0, n);
    for (const r of out) this.#done.push(r);
    let gone = 0;
    while (gone < this.#done.length && now - (this.#done[gone]?.t ?? 0) >= FINAL_MS + KEEP_MS) gone++;
    this.#done.splice(0, gone);
    return out;
  }

  /** recent lists the requests asked since `since` (open and final), in time order. */
  recent(since: number): JoinedRequest[] {
    return [...this.#done, ...this.#open].filter((r) => r.t >= since);
  }
}

/** nearby lists the requests of `asker` within JOIN_MS of `t` (the list is in time order). */
function nearby(list: readonly JoinedRequest[], asker: string, t: number): JoinedRequest[] {
  const out: JoinedRequest[] = [];
  for (let i = upperBound(list, t + JOIN_MS) - 1; i >= 0; i--) {
    const r = list[i];
    if (r === undefined || r.t < t - JOIN_MS) break;
    if (r.asker === asker) out.push(r);
  }
  return out;
}

/** upperBound is the index of the first request later than `t`. */
function upperBound(list: readonly JoinedRequest[], t: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((list[mid]?.t ?? 0) <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function insert(list: JoinedRequest[], r: JoinedRequest): void {
  list.splice(upperBound(list, r.t), 0, r);
}
