import { ProbeSession, type ProbeRequestResult } from "./probe.js";

/**
 * CLOCK_STEP_MS: the resolution of the clock a batch is fed (Date.now, whole milliseconds). Two requests for one
 * target are at least intervalMs + CLOCK_STEP_MS apart as that clock reads them, so never closer than intervalMs in
 * truth.
 */
const CLOCK_STEP_MS = 1;
/**
 * SLIP_MS: how late a request may go before the rest of the plan moves later with it. A caller that wakes late (a busy
 * event loop, a slow capture open) sends at once what fell due in the last SLIP_MS, never more: the rounds run that
 * much later instead of catching up in a burst.
 */
const SLIP_MS = 10;

/** A ClosedRound is one round of a batch whose every reply window has passed: each target's request and replies. */
export interface ClosedRound {
  readonly seq: number;
  /** One per target, in the targets' order. */
  readonly results: readonly ProbeRequestResult[];
}

/** A DueRequest is the request a batch sends next: its target, its round (from 1) and the earliest time it may go. */
export interface DueRequest {
  readonly target: number;
  readonly seq: number;
  readonly at: number;
}

/**
 * A ProbeBatch schedules the broadcast requests of one probe of many targets from one node, and matches their
 * replies: `rounds` requests per target, a round every `intervalMs`. Within a round the targets' requests are spread
 * evenly over the interval (target i at i × intervalMs / n), so n targets cost n frames a second, never n frames at
 * once; and a target's requests are always more than intervalMs apart, however late the caller wakes, so no IP is
 * asked faster than a client re-asking once a second. Replies match as in ProbeSession: the target's latest request,
 * within intervalMs. A round closes once every target's request of it is out and its reply window has passed. A caller
 * late by more than SLIP_MS moves the rest of the plan later rather than sending what it missed at once.
 *
 * Pure: the caller asks `next()`, sends once the clock reaches its `at`, and calls `sent` with the clock read after
 * sending (so that a send delayed after the check only widens the gap); it feeds replies and collects `closed` rounds.
 * The clock may go back (the agent's is the wall clock, which a time sync can step): a time fed to `sent` or `closed`
 * before the latest fed to `sent`, or a request sent before it was due, moves the whole plan back by that much, so that its
 * gaps stay as long in truth as planned: neither a throw nor a burst, nor a wait as long as the step.
 */
export class ProbeBatch {
  readonly #sessions: ProbeSession[];
  /** When each target's latest request went out (null: none yet). */
  #last: (number | null)[];
  /** The latest time fed to sent. */
  #seen = -Infinity;
  /** The requests sent so far: round-major, target-minor (request k is target k % n of round k / n). */
  #sent = 0;
  #closed = 0;
  /** When round 1 starts: the plan's origin, moved later by a late caller. */
  #start: number;

  constructor(
    targets: readonly string[],
    readonly rounds: number,
    readonly intervalMs: number,
    start: number,
  ) {
    this.#start = start;
    if (targets.length === 0) throw new RangeError("probe batch: no target");
    if (!Number.isInteger(rounds) || rounds < 1) throw new RangeError(`probe batch: ${rounds} rounds (at least 1)`);
    if (!(intervalMs > 0)) throw new RangeError(`probe batch: interval ${intervalMs} ms`);
    this.#sessions = targets.map((ip) => new ProbeSession(ip, intervalMs));
    this.#last = targets.map(() => null);
  }

  /** start is when the plan's first request was due, after any move later. */
  get start(): number {
    return this.#start;
  }

  get size(): number {
    return this.#sessions.length;
  }

  /** done: every round has closed. */
  get done(): boolean {
    return this.#closed >= this.rounds;
  }

  /** next is the request to send next, null once every request has gone. */
  next(): DueRequest | null {
    const n = this.#sessions.length;
    if (this.#sent >= n * this.rounds) return null;
    const round = Math.floor(this.#sent / n);
    const target = this.#sent % n;
    const planned = this.#start + round * this.intervalMs + Math.floor((target * this.intervalMs) / n);
    const last = this.#last[target] ?? null;
    return { target, seq: round + 1, at: last === null ? planned : Math.max(planned, last + this.intervalMs + CLOCK_STEP_MS) };
  }

  /**
   * #back moves the plan, the requests sent and the latest time seen back by `ref - now` when `now` is before `ref`:
   * the clock went back by at least that much.
   */
  #back(now: number, ref: number): void {
    if (!(now < ref)) return;
    const d = ref - now;
    this.#start -= d;
    this.#last = this.#last.map((t) => (t === null ? null : t - d));
    for (const s of this.#sessions) s.shift(-d);
    this.#seen -= d;
  }

  /**
   * sent records that the next request went out, `now` being the clock read after sending; returns its target.
   * Throws when every request has gone. A `now` before the request was due, or before a time fed earlier, is the clock
   * gone back: the plan moves back with it.
   */
  sent(now: number): number {
    let due = this.next();
    if (due === null) throw new RangeError("probe batch: every request was sent already");
    this.#back(now, Math.max(this.#seen, due.at));
    this.#seen = now;
    due = this.next() ?? due;
    if (now - due.at > SLIP_MS) this.#start += now - due.at - SLIP_MS;
    this.#sessions[due.target]?.request(now);
    this.#last[due.target] = now;
    this.#sent++;
    return due.target;
  }

  /** reply records a reply from `mac` to `target` at `now`: it answers that target's latest request, if recent enough. */
  reply(target: number, mac: string, now: number): void {
    this.#sessions[target]?.reply(mac, now);
  }

  /**
   * #closeAt is when the next round to close does (its last request out, plus its reply window), null while some of
   * its requests are still to go or once every round has closed. Requests go out in order, on a clock moved back with
   * the plan when it goes back, so a round's last request is its latest.
   */
  #closeAt(): number | null {
    if (this.#closed >= this.rounds) return null;
    const n = this.#sessions.length;
    if (this.#sent < (this.#closed + 1) * n) return null;
    const lastOfRound = this.#sessions[n - 1]?.result(this.#closed + 1)?.sentAt ?? 0;
    return lastOfRound + this.intervalMs + CLOCK_STEP_MS;
  }

  /** closed returns the rounds closed by `now` that were not returned before, in order. */
  closed(now: number): ClosedRound[] {
    this.#back(now, this.#seen);
    const out: ClosedRound[] = [];
    for (let at = this.#closeAt(); at !== null && now >= at; at = this.#closeAt()) {
      const seq = ++this.#closed;
      out.push({ seq, results: this.#sessions.map((s) => s.result(seq) ?? { seq, sentAt: 0, replies: [] }) });
    }
    return out;
  }

  /** wake is when there is something to do next (a request due or a round to close); null once the batch is done. */
  wake(): number | null {
    const due = this.next()?.at ?? null;
    const close = this.#closeAt();
    if (due === null) return close;
    return close === null ? due : Math.min(due, close);
  }
}
