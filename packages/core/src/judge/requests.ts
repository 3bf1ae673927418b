import { FINAL_MS, JOIN_MS } from "./findings.js";

/**
 * Replies are the replies one capture point saw to one request: `macs[k]` answered `delays[k]` milliseconds after
 * it, for k below `n`. Whoever feeds the judge fills one reused ReplyList per request (from a wire report, or from a
 * capture point in process), so that joining a request allocates nothing for its replies.
 */
export interface Replies {
  readonly macs: readonly string[];
  readonly delays: readonly number[];
  readonly n: number;
}

/** A ReplyList is Replies filled in place: clear() it, add() each reply. */
export class ReplyList implements Replies {
  readonly macs: string[] = [];
  readonly delays: number[] = [];
  n = 0;

  clear(): this {
    this.n = 0;
    return this;
  }

  add(mac: string, delay: number): this {
    this.macs[this.n] = mac;
    this.delays[this.n] = delay;
    this.n++;
    return this;
  }
}

/**
 * MANY_POINTS: past this many capture points a request finds a point's sighting in a Map rather than by a scan (every
 * node of a segment reports every broadcast request: fifty nodes would make each request's join quadratic).
 */
const MANY_POINTS = 8;

/** NO_REPLIES: a request nobody answered. */
export const NO_REPLIES: Replies = { macs: [], delays: [], n: 0 };

/**
 * A JoinedRequest is one request of one asker for one IP as every capture point saw it: who saw it, and the union of
 * the replies they saw. A node sees every broadcast request and only its own replies; a client's capture sees every
 * reply to its own requests: either way, two MACs among its replies means one request answered twice. Thousands
 * arrive every second on a busy hub and live a few seconds: its sightings and replies are kept in two flat arrays,
 * not Maps.
 */
export class JoinedRequest {
  /**
   * Who saw it and who answered it: capture points first, then MACs from `#firstReply` on; `#times` holds each one's
   * time (a point's sighting on its clock; a MAC's reply as the request's first sighting plus the delay its reporter
   * measured, so that replies reported by different nodes compare free of the nodes' clock skew). Two flat arrays,
   * the times unboxed.
   */
  readonly #keys: string[];
  readonly #times: number[];
  #firstReply = 1;
  /** Each point's sighting, once more than MANY_POINTS saw it (null before). */
  #pointAt: Map<string, number> | null = null;
  /**
   * Ambiguous: another request of the same asker came within JOIN_MS, so which sightings belong together is not
   * known; it counts as asked but never as evidence of who answered.
   */
  ambiguous: boolean;
  /** Reported only after it was final: too late to be placed in order; evidence of several answers still counts. */
  late: boolean;
  /** Handed out as final (or late): no longer waiting. */
  final = false;
  /** Sent by whohas itself (a probe), not by a client. */
  own = false;
  /** The asker's MAC, from the first sighting that carried it (agents before it was reported send none). */
  askerMac: string | null = null;

  /** A request as the first capture point to report it saw it: `point` at `t`, and the replies it saw. */
  constructor(
    readonly asker: string,
    /** When the first capture point to report it saw it (its clock). */
    readonly t: number,
    ambiguous: boolean,
    late: boolean,
    point: string,
    replies: Replies,
  ) {
    this.ambiguous = ambiguous;
    this.late = late;
    // Arrays of their exact size: an array that grows by push keeps room for sixteen, and these are many.
    // Sized for the distinct MACs among the replies (a MAC may come twice: its earliest reply counts).
    const { macs, delays } = replies;
    let n = 1;
    distinct: for (let k = 0; k < replies.n; k++) {
      for (let j = 0; j < k; j++) if (macs[j] === macs[k]) continue distinct;
      n++;
    }
    this.#keys = new Array<string>(n);
    this.#times = new Array<number>(n);
    this.#keys[0] = point;
    this.#times[0] = t;
    n = 1;
    for (let k = 0; k < replies.n; k++) {
      const mac = macs[k] ?? "";
      const at = t + (delays[k] ?? 0);
      const i = this.#find(mac, 1, n);
      if (i < 0) {
        this.#keys[n] = mac;
        this.#times[n++] = at;
      } else if (at < (this.#times[i] ?? Infinity)) this.#times[i] = at;
    }
  }

  #find(key: string, from: number, to: number): number {
    for (let i = from; i < to; i++) if (this.#keys[i] === key) return i;
    return -1;
  }

  /** seenAt is when `point` saw it, undefined when it did not report it. */
  seenAt(point: string): number | undefined {
    if (this.#pointAt !== null) return this.#pointAt.get(point);
    const i = this.#find(point, 0, this.#firstReply);
    return i < 0 ? undefined : this.#times[i];
  }

  /** points lists the capture points that saw it. */
  points(): string[] {
    return this.#keys.slice(0, this.#firstReply);
  }

  /** see records `point`'s sighting at `t`. */
  see(point: string, t: number): void {
    const at = this.#pointAt;
    if (at !== null ? at.has(point) : this.#find(point, 0, this.#firstReply) >= 0) return;
    // Points come before the replies: only the replies (a few) move.
    this.#keys.splice(this.#firstReply, 0, point);
    this.#times.splice(this.#firstReply, 0, t);
    this.#firstReply++;
    if (at !== null) at.set(point, t);
    else if (this.#firstReply > MANY_POINTS) {
      const m = new Map<string, number>();
      for (let i = 0; i < this.#firstReply; i++) m.set(this.#keys[i] ?? "", this.#times[i] ?? 0);
      this.#pointAt = m;
    }
  }

  /** replyAt is when `mac` answered it, undefined when it did not. */
  replyAt(mac: string): number | undefined {
    const i = this.#find(mac, this.#firstReply, this.#keys.length);
    return i < 0 ? undefined : this.#times[i];
  }

  /** answerers lists the MACs that answered it. */
  answerers(): string[] {
    return this.#keys.slice(this.#firstReply);
  }

  get replyCount(): number {
    return this.#keys.length - this.#firstReply;
  }

  /** answerer is the `i`th MAC to answer it (0 <= i < replyCount): a loop over them without a list. */
  answerer(i: number): string {
    return this.#keys[this.#firstReply + i] ?? "";
  }

  /** firstAnswerer is the MAC whose reply came first (the earliest time; the first reported on a tie), null when none. */
  firstAnswerer(): string | null {
    const keys = this.#keys;
    const times = this.#times;
    let best = -1;
    let at = Infinity;
    for (let i = this.#firstReply; i < keys.length; i++) {
      const t = times[i] ?? Infinity;
      if (t < at) {
        at = t;
        best = i;
      }
    }
    return best < 0 ? null : (keys[best] ?? null);
  }

  /** reply records `mac`'s answer at `at` (the earliest wins); true when `mac` is new to it. */
  reply(mac: string, at: number): boolean {
    const i = this.#find(mac, this.#firstReply, this.#keys.length);
    if (i < 0) {
      this.#keys.push(mac);
      this.#times.push(at);
      return true;
    }
    if (at < (this.#times[i] ?? Infinity)) this.#times[i] = at;
    return false;
  }
}

const NONE: readonly JoinedRequest[] = [];
/** The requests near a sighting, reused by every add (one at a time: the judge is single-threaded). */
const NEAR: JoinedRequest[] = [];
const EMPTY: JoinedRequest[] = [];

/**
 * KEEP_MS: a final request stays this long after it was final, for sightings that arrive late to join it (an agent
 * reports a request within its reply window and a flush: later than FINAL_MS + KEEP_MS is a link that stalled, and
 * such a sighting still counts as asked, and as evidence of several answers).
 */
const KEEP_MS = 1000;
/** MAX_OPEN bounds the requests of one IP waiting to be final (a flood of askers cannot grow it without end). */
const MAX_OPEN = 4096;

/** SMALL: lists up to this long are copied to their exact size on each change (most IPs hold one or two requests). */
const SMALL = 8;

/**
 * A RequestJoin joins the sightings of one IP's requests from every capture point and hands them out in order once
 * final. Sightings of one asker join when their times differ by at most JOIN_MS, one per capture point; a sighting
 * that could belong to two requests makes both ambiguous instead of guessing.
 */
export class RequestJoin {
  /**
   * Open and final requests (final ones are kept KEEP_MS for late sightings), in time order from `#head` on (those
   * before it are forgotten; the array is compacted now and then). Tens of thousands of IPs each hold one or two: a
   * short list is kept at its exact size (an array grown by push keeps room for sixteen).
   */
  #list: JoinedRequest[] = EMPTY;
  #head = 0;
  /** Every request from #head up to here is final: finalize() starts looking here. */
  #scan = 0;
  #open = 0;
  #dropped = 0;
  #added = 0;

  /** pending tells whether requests wait to be final. */
  get pending(): boolean {
    return this.#open > 0;
  }

  /** dropped counts sightings refused at MAX_OPEN. */
  get dropped(): number {
    return this.#dropped;
  }

  /** added is how many MACs the last add() brought to its request: a MAC new to it is news, a repeat is not. */
  get added(): number {
    return this.#added;
  }

  /**
   * add joins one capture point's sighting of a request at `t`, with the replies it saw. `now` decides whether it is
   * already past final (late). Returns the request it joined, null when refused at the bound.
   */
  add(point: string, asker: string, t: number, replies: Replies, now: number): JoinedRequest | null {
    const late = now - t >= FINAL_MS;
    this.#added = 0;
    // One list reused: most sightings find one request near or none.
    const near = NEAR;
    while (near.length > 0) near.pop();
    nearby(this.#list, this.#head, asker, t, near);
    // The same point telling more of a request it reported before (a reply seen after its first report).
    let r: JoinedRequest | undefined;
    for (const j of near)
      if (j.seenAt(point) === t) {
        r = j;
        break;
      }
    if (r === undefined) {
      const only = near.length === 1 ? near[0] : undefined;
      if (only !== undefined && only.seenAt(point) === undefined) r = only;
      else {
        if (!late && this.#open >= MAX_OPEN) {
          this.#dropped++;
          return null;
        }
        const fresh = new JoinedRequest(asker, t, near.length > 0, late, point, replies);
        fresh.final = late;
        if (!late) this.#open++;
        for (const j of near) j.ambiguous = true;
        this.#insert(fresh);
        this.#added = fresh.replyCount;
        return fresh;
      }
      r.see(point, t);
    }
    // A reply is dated on the clock of the request's first sighting (its time plus the delay its reporter measured):
    // replies reported by different nodes then compare by their delays, not by the nodes' clocks, whose skew is
    // often larger than the race between their kernels.
    const { macs, delays } = replies;
    for (let k = 0; k < replies.n; k++) if (r.reply(macs[k] ?? "", r.t + (delays[k] ?? 0))) this.#added++;
    return r;
  }

  /**
   * finalize hands out the requests that became final by `now` (every one when `all`: no more sightings will come),
   * in time order, and forgets old final ones.
   */
  finalize(now: number, all = false): readonly JoinedRequest[] {
    const list = this.#list;
    let out: JoinedRequest[] | null = null;
    if (this.#open > 0) {
      let i = Math.max(this.#head, this.#scan);
      for (; i < list.length; i++) {
        const r = list[i];
        if (r === undefined || (!all && now - r.t < FINAL_MS)) break;
        if (r.final) continue;
        r.final = true;
        this.#open--;
        (out ??= []).push(r);
      }
      this.#scan = i;
    }
    let gone = this.#head;
    while (gone < list.length && list[gone]?.final === true && now - (list[gone]?.t ?? 0) >= FINAL_MS + KEEP_MS) gone++;
    if (gone > this.#head) this.#forgetTo(gone);
    return out ?? NONE;
  }

  /** #forgetTo forgets the requests before index `gone`. */
  #forgetTo(gone: number): void {
    const list = this.#list;
    const left = list.length - gone;
    if (left <= SMALL) {
      this.#list = left === 0 ? EMPTY : list.slice(gone);
      this.#scan = Math.max(0, this.#scan - gone);
      this.#head = 0;
      return;
    }
    this.#head = gone;
    // The forgotten head is dropped once it is half the array: each request is moved at most about once.
    if (gone >= 64 && gone * 2 >= list.length) {
      list.splice(0, gone);
      this.#scan = Math.max(0, this.#scan - gone);
      this.#head = 0;
    }
  }

  #insert(r: JoinedRequest): void {
    const list = this.#list;
    const at = upperBound(list, this.#head, r.t);
    // Requests before #scan are all final: a final one (late) joins them, an open one ends them.
    if (at < this.#scan) this.#scan = r.final ? this.#scan + 1 : at;
    if (list.length >= SMALL || this.#head > 0) {
      if (at === list.length) list.push(r);
      else list.splice(at, 0, r);
      return;
    }
    // One new array of the exact size (slices and a concat would make three).
    const next = new Array<JoinedRequest>(list.length + 1);
    next[at] = r;
    list.forEach((j, i) => (next[i < at ? i : i + 1] = j));
    this.#list = next;
  }
}

/** nearby adds to `out` the requests of `asker` within JOIN_MS of `t` (the list is in time order from `head`). */
function nearby(list: readonly JoinedRequest[], head: number, asker: string, t: number, out: JoinedRequest[]): void {
  for (let i = upperBound(list, head, t + JOIN_MS) - 1; i >= head; i--) {
    const r = list[i];
    if (r === undefined || r.t < t - JOIN_MS) break;
    if (r.asker === asker) out.push(r);
  }
}

/** upperBound is the index of the first request later than `t`, from `head` on. */
function upperBound(list: readonly JoinedRequest[], head: number, t: number): number {
  let lo = head;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((list[mid]?.t ?? 0) <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
