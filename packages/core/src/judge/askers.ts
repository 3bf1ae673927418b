import type { Lens } from "./lens.js";
import type { JoinedRequest } from "./requests.js";

/** MAX_ASKERS bounds the askers remembered per IP: past it, the one that asked least recently is forgotten. */
export const MAX_ASKERS = 32;
/** ASKER_IDLE_MS: an asker silent this long is forgotten (its changes have left the hour its rate covers). */
export const ASKER_IDLE_MS = 3_600_000;
/** RATE_MS: the rate of first-answer changes is taken over this last stretch (an hour), or since first seen. */
export const RATE_MS = 3_600_000;
/**
 * MIN_SPAN_MS: an asker first seen less than this long ago has its rate taken over this span: two changes in its
 * first second would otherwise read as 7,200 an hour.
 */
export const MIN_SPAN_MS = 60_000;
/** BUCKET_MS, BUCKETS: the hour is counted in minutes, a ring made at an asker's first change. */
const BUCKET_MS = 60_000;
const BUCKETS = RATE_MS / BUCKET_MS;

/** An AskerView is one asker of an IP: how often the first answer to its requests came from another node. */
export interface AskerView {
  /** The asker's MAC (the request's sender hardware address); null when only agents of before it was sent reported. */
  readonly mac: string | null;
  readonly ip: string;
  /** Its requests that became final (whohas's own probes are not counted). */
  readonly requests: number;
  /** How often the first answer came from another node (or MAC, when no node owns it) than to its previous answered request. */
  readonly firstAnswerChanges: number;
  /** Changes per hour over the last hour, or since it was first seen when that is shorter (at least MIN_SPAN_MS). */
  readonly changesPerHour: number;
  /** The latest change (ms since the epoch); null when none. */
  readonly lastChange: number | null;
  /** Its first request seen. */
  readonly firstSeen: number;
}

/** An Asker is what an IP remembers of one asker. */
class Asker {
  requests = 0;
  changes = 0;
  lastChange = -Infinity;
  /** The first answer to its previous answered request: the MAC, and who that is (its node, else the MAC). */
  firstMac: string | null = null;
  firstWho: string | null = null;
  /** Changes per minute over the last hour, made at the first change; `minute` is the one of its latest slot. */
  perMinute: Uint32Array | null = null;
  minute = 0;
  /** Another asker with the same IP and another MAC (a VRRP pair, a spoofer): rare, so a chain and not a Map. */
  next: Asker | null = null;

  constructor(
    readonly ip: string,
    public mac: string | null,
    readonly firstSeen: number,
    public lastAsked: number,
  ) {}

  /** change counts a change at `t` in its minute. */
  change(t: number): void {
    this.changes++;
    if (t > this.lastChange) this.lastChange = t;
    const minute = Math.floor(t / BUCKET_MS);
    const ring = (this.perMinute ??= new Uint32Array(BUCKETS));
    if (this.changes === 1) this.minute = minute;
    // Minutes skipped since the latest slot are emptied (all of them after an hour away); a late one counts in its own.
    if (minute > this.minute) {
      for (let m = Math.max(this.minute + 1, minute - BUCKETS + 1); m <= minute; m++) ring[m % BUCKETS] = 0;
      this.minute = minute;
    }
    if (this.minute - minute < BUCKETS) ring[minute % BUCKETS] = (ring[minute % BUCKETS] ?? 0) + 1;
  }

  /** perHour is its rate at `now`: the changes of the last RATE_MS, over that or the time since first seen. */
  perHour(now: number): number {
    const ring = this.perMinute;
    if (ring === null) return 0;
    const current = Math.floor(now / BUCKET_MS);
    let n = 0;
    for (let m = Math.max(current - BUCKETS + 1, this.minute - BUCKETS + 1); m <= Math.min(this.minute, current); m++)
      n += ring[m % BUCKETS] ?? 0;
    const span = Math.max(MIN_SPAN_MS, Math.min(RATE_MS, now - this.firstSeen));
    return (n * RATE_MS) / span;
  }
}

/**
 * Askers counts, per asker of one IP, its requests and the first-answer changes: the first answer to a request (the
 * earliest reply) coming from another node than the first answer to that asker's previous answered request. Each is
 * a client, router or firewall re-learning the IP's MAC from another node, which breaks its connections through the
 * old one: the harm of several MACs answering, as the asker feels it. Bounded at MAX_ASKERS; nothing is made per
 * request, and the lens is asked only when the first answer's MAC changes.
 */
export class Askers {
  readonly #byIp = new Map<string, Asker>();
  #size = 0;
  /** Changes ever counted on this IP, forgotten askers included: it only grows (a counter's value). */
  total = 0;

  /** take counts one final request of a client (not whohas's own), ambiguous ones as asked only. */
  take(r: JoinedRequest, lens: Lens): void {
    const a = this.#asker(r.asker, r.askerMac, r.t);
    a.requests++;
    if (r.t > a.lastAsked) a.lastAsked = r.t;
    if (r.ambiguous) return;
    const mac = r.firstAnswerer();
    if (mac === null || mac === a.firstMac) return;
    const who = lens.nodeOf(mac) ?? mac;
    const before = a.firstWho;
    a.firstMac = mac;
    a.firstWho = who;
    // Only a race moves the asker's MAC back and forth: a request one MAC answered after another node's answer before
    // is the IP moving (a failover, a handover), which is counted as such, not as harm.
    if (before === null || before === who || r.replyCount < 2) return;
    a.change(r.t);
    this.total++;
  }

  /** #asker finds the asker of `ip` with `mac` (null: not known, so whichever asked last with that IP), or makes it. */
  #asker(ip: string, mac: string | null, t: number): Asker {
    const head = this.#byIp.get(ip);
    let latest: Asker | null = null;
    for (let a = head ?? null; a !== null; a = a.next) {
      if (a.mac === mac) return a;
      if (mac === null && (latest === null || a.lastAsked > latest.lastAsked)) latest = a;
    }
    if (latest !== null) return latest;
    // An asker first reported by an agent that did not send MACs learns its MAC from the first that does.
    if (head?.mac === null && head.next === null) {
      head.mac = mac;
      return head;
    }
    if (this.#size >= MAX_ASKERS) this.#forget(t);
    const a = new Asker(ip, mac, t, t);
    a.next = head ?? null;
    this.#byIp.set(ip, a);
    this.#size++;
    return a;
  }

  /**
   * #forget lets go of the askers silent for ASKER_IDLE_MS at `t`; when none is, of one asker: the least recent of
   * those that never saw a change, else the least recent. A router that asks once every few minutes and saw the
   * first answer change is what this exists for: a crowd of chatty clients does not push it out.
   */
  #forget(t: number): void {
    let victim: Asker | null = null;
    let idle = false;
    for (const head of [...this.#byIp.values()])
      for (let a: Asker | null = head; a !== null; a = a.next) {
        if (t - a.lastAsked > ASKER_IDLE_MS) {
          this.#remove(a);
          idle = true;
          continue;
        }
        const sameKind = victim !== null && (a.changes === 0) === (victim.changes === 0);
        if (victim === null || (sameKind ? a.lastAsked < victim.lastAsked : a.changes === 0)) victim = a;
      }
    if (!idle && victim !== null) this.#remove(victim);
  }

  #remove(gone: Asker): void {
    const head = this.#byIp.get(gone.ip);
    if (head === undefined) return;
    if (head === gone) {
      if (gone.next === null) this.#byIp.delete(gone.ip);
      else this.#byIp.set(gone.ip, gone.next);
    } else {
      let a = head;
      while (a.next !== null && a.next !== gone) a = a.next;
      if (a.next === null) return;
      a.next = gone.next;
    }
    this.#size--;
  }

  /** view lists the askers that asked within ASKER_IDLE_MS of `now`, the most changes first. */
  view(now: number): AskerView[] {
    const out: AskerView[] = [];
    for (const head of this.#byIp.values())
      for (let a: Asker | null = head; a !== null; a = a.next) {
        if (now - a.lastAsked > ASKER_IDLE_MS) continue;
        out.push({
          mac: a.mac,
          ip: a.ip,
          requests: a.requests,
          firstAnswerChanges: a.changes,
          changesPerHour: Math.round(a.perHour(now) * 10) / 10,
          lastChange: a.lastChange === -Infinity ? null : a.lastChange,
          firstSeen: a.firstSeen,
        });
      }
    return out.sort(
      (x, y) =>
        y.firstAnswerChanges - x.firstAnswerChanges ||
        y.requests - x.requests ||
        x.ip.localeCompare(y.ip) ||
        (x.mac ?? "").localeCompare(y.mac ?? ""),
    );
  }
}
