import { macToNumber, parseMac } from "../packet/addr.js";
import { NO_MAC } from "../packet/link.js";
import type { RequestReport } from "../wire.js";
import { MAX_REQUEST_TIMES, REPLY_WINDOW_MS } from "./findings.js";
import { KeyTable } from "./key-table.js";
import { SightingSlab } from "./sighting-slab.js";
import { IDLE_MS, IpNumbers, LinkIds, TimeQueue, ipKey, ipText, macText, type IpKey } from "./point-keys.js";

/**
 * A sighting is one request this capture point saw, and the replies it saw to it: a slot of the SightingSlab. Its
 * replies are drained once it has one (so a second responder is known at once) and again for replies that come
 * later, or once when its window passes unanswered.
 */

/** isDue: a request with replies not drained yet, or one not drained whose window is over (all of them when `final`). */
const isDue = (slab: SightingSlab, s: number, now: number, final: boolean): boolean =>
  slab.n(s) > slab.sent(s) || (!slab.drained(s) && (final || now - slab.t(s) > REPLY_WINDOW_MS));

/** reported: a request drained with all its replies, whose window is over: nothing more can come of it. */
const reported = (slab: SightingSlab, s: number, now: number): boolean =>
  slab.drained(s) && slab.n(s) === slab.sent(s) && now - slab.t(s) > REPLY_WINDOW_MS;

/** Asked is what one capture point holds of one asker's requests for one IP on one link. */
interface Asked {
  /** Its id in the KeyTable of askers. */
  readonly id: number;
  /** The link: the interface, or "NAME/VLAN" for a VLAN on it. */
  readonly link: string;
  readonly ip: IpKey;
  readonly asker: IpKey;
  /** The MAC its latest request came from (NO_MAC: none known), reported as the asker's MAC. */
  mac: number;
  /** Its sightings (slots), in time order; drained ones stay until their window is over, to time late replies. */
  readonly list: number[];
  /** The latest request: an asker silent for IDLE_MS is forgotten (most ask again every second: they are kept). */
  last: number;
  /** In the due queue (something to report); forgotten: no longer in the table. */
  due: boolean;
  gone: boolean;
}

/**
 * A RequestVisitor takes what a drain reports, asker by asker: `asker` once (with how many requests and replies
 * follow), then `request` for each of its requests, with the replies not reported before: `replies` from `from` to
 * `to`, flat (MAC, delay in ms, MAC, delay...). Times are whole milliseconds, as the wire carries them; delays are
 * rounded by wireDelay.
 */
export interface RequestVisitor {
  asker(link: string, ip: IpKey, asker: IpKey, mac: number, requests: number, replies: number): void;
  request(t: number, replies: ArrayLike<number>, from: number, to: number): void;
}

/** wireDelay is a reply delay as the wire carries it: milliseconds to the microsecond. */
export const wireDelay = (ms: number): number => Math.round(ms * 1000) / 1000;

/** WireReports makes what a drain reports into RequestReports: what an agent sends. */
class WireReports implements RequestVisitor {
  readonly out: RequestReport[] = [];
  #report: RequestReport | null = null;
  #i = 0;
  #j = 0;

  constructor(readonly where: LinkWhere) {}

  asker(link: string, ip: IpKey, asker: IpKey, mac: number, requests: number, replies: number): void {
    const { iface, vlan } = this.where(link);
    // Arrays of their exact size: an array grown by push keeps room for sixteen, and there is one per request.
    const r: RequestReport = {
      ip: ipText(ip),
      asker: ipText(asker),
      iface,
      vlan,
      times: new Array<number>(requests),
      replies: new Array<[number, string, number]>(replies),
    };
    if (mac !== NO_MAC) r.askerMac = macText(mac);
    this.out.push(r);
    this.#report = r;
    this.#i = 0;
    this.#j = 0;
  }

  request(t: number, replies: ArrayLike<number>, from: number, to: number): void {
    const r = this.#report;
    if (r === null) return;
    const i = this.#i++;
    r.times[i] = t;
    const out = r.replies;
    for (let k = from; k < to; k += 2) out[this.#j++] = [i, macText(replies[k] ?? 0), wireDelay(replies[k + 1] ?? 0)];
  }
}

/** SWEEP_MS: how often requests reported and over leave memory (a drain only looks at what has something new). */
const SWEEP_MS = 1000;

/** Where a link is: its interface, and its VLAN (null when untagged). */
export type LinkWhere = (link: string) => { readonly iface: string; readonly vlan: number | null };

/**
 * RequestSightings is the request side of a capture point: the requests it saw, per link, IP and asker, with the
 * replies it saw to each within REPLY_WINDOW_MS; drained as RequestReports, which tell the judge who answered what.
 * Bounded: past `maxHeld` requests a new one is dropped and counted.
 */
export class RequestSightings {
  /** Per link, IP and asker: the requests seen whose reply window is still open or that are not drained yet. */
  readonly #keys = new KeyTable();
  readonly #slab = new SightingSlab();
  readonly #byId: (Asked | undefined)[] = [];
  readonly #linkIds = new LinkIds();
  readonly #ipNumbers = new IpNumbers();
  /**
   * The Asked with something to report (a request or a reply not drained yet), in the order they became due. A drain
   * walks these, not every asker of every IP (most have nothing new at any one drain).
   */
  #due: Asked[] = [];
  /**
   * The sweep's work, in time order: each request's asker once its window may have passed (#recent, with the
   * request's time), and askers left with no request (#emptied, with when they emptied). The sweep pops what is due
   * from their heads instead of visiting every asker of every IP.
   */
  readonly #recent = new TimeQueue<Asked>();
  readonly #emptied = new TimeQueue<Asked>();
  #swept = -Infinity;
  /** The asker of the latest request: its replies follow it, and find it without a lookup. */
  #latest: Asked | null = null;
  #held = 0;
  #dropped = 0;

  constructor(
    readonly maxHeld: number,
    readonly where: LinkWhere,
  ) {}

  /**
   * held is the number of requests held: waiting for replies or for the next drain, and reported ones until the
   * sweep after their window (at most SWEEP_MS later).
   */
  get held(): number {
    return this.#held;
  }

  /** takeDropped returns the requests dropped at the bound since the last call. */
  takeDropped(): number {
    const n = this.#dropped;
    this.#dropped = 0;
    return n;
  }

  /** #find is what is held of `asker`'s requests for `ip` on `link`, if anything. */
  #find(link: string, ip: IpKey, asker: IpKey): Asked | undefined {
    const numbers = this.#ipNumbers;
    const ipn = numbers.of(ip);
    const askern = numbers.of(asker);
    if (ipn < 0 || askern < 0) return undefined;
    const id = this.#keys.find(ipn, askern, this.#linkIds.of(link));
    return id < 0 ? undefined : this.#byId[id];
  }

  #askedOf(link: string, ip: IpKey, asker: IpKey): Asked {
    const found = this.#find(link, ip, asker);
    if (found !== undefined) return found;
    const numbers = this.#ipNumbers;
    const id = this.#keys.add(numbers.hold(ip), numbers.hold(asker), this.#linkIds.of(link));
    const a: Asked = { id, link, ip, asker, mac: NO_MAC, list: [], last: -Infinity, due: false, gone: false };
    this.#byId[id] = a;
    return a;
  }

  /** #markDue queues `a` for the next drain (once: a flag, not a hash, on the path of every frame). */
  #markDue(a: Asked): void {
    if (a.due) return;
    a.due = true;
    this.#due.push(a);
  }

  /** ask notes a request from `mac`: a new sighting for its asker (the latest one is what replies answer). */
  ask(link: string, ip: IpKey, asker: IpKey, mac: number, now: number): void {
    if (this.#held >= this.maxHeld) {
      this.#dropped++;
      return;
    }
    const a = this.#askedOf(link, ip, asker);
    this.#latest = a;
    a.list.push(this.#slab.add(now));
    if (now >= a.last) {
      a.last = now;
      if (mac !== NO_MAC) a.mac = mac;
    }
    this.#held++;
    this.#markDue(a);
    this.#recent.push(a, now);
  }

  /** answer attaches a reply to the asker's latest request within REPLY_WINDOW_MS (once per MAC). */
  answer(link: string, ip: IpKey, asker: IpKey, mac: number, now: number): void {
    const latest = this.#latest;
    const a = latest !== null && latest.ip === ip && latest.asker === asker && latest.link === link ? latest : this.#find(link, ip, asker);
    if (a === undefined) return;
    const list = a.list;
    const slab = this.#slab;
    for (let i = list.length - 1; i >= 0; i--) {
      const s = list[i] ?? 0;
      const t = slab.t(s);
      if (t > now) continue;
      if (now - t > REPLY_WINDOW_MS) return;
      if (slab.replied(s, mac)) return;
      slab.reply(s, mac, now - t);
      this.#markDue(a);
      return;
    }
  }

  /** putBack takes back a report that could not be sent (on `link`), so that nothing is lost or counted twice. */
  putBack(r: RequestReport, link: string): void {
    const replies = new Map<number, number[]>();
    for (const [i, mac, delay] of r.replies) replies.set(i, [...(replies.get(i) ?? []), macToNumber(parseMac(mac), 0), delay]);
    const a = this.#askedOf(link, ipKey(r.ip), ipKey(r.asker));
    if (a.mac === NO_MAC && r.askerMac !== undefined) a.mac = macToNumber(parseMac(r.askerMac), 0);
    const list = a.list;
    const slab = this.#slab;
    for (const [i, t] of r.times.entries()) {
      const s = slab.add(t);
      const rs = replies.get(i) ?? [];
      for (let k = 0; k < rs.length; k += 2) slab.reply(s, rs[k] ?? 0, rs[k + 1] ?? 0);
      list.push(s);
      this.#held++;
      this.#recent.push(a, t);
    }
    this.#markDue(a);
    list.sort((x, y) => slab.t(x) - slab.t(y));
  }

  /**
   * drain returns up to `max` reports: requests with replies not drained yet, and those whose window is over at
   * `now` even unanswered (every node's report of a request no one answered is how the hub counts requests left
   * unanswered); `final` reports every request (the end of a capture file).
   */
  drain(max: number, now: number, final: boolean): RequestReport[] {
    const reports = new WireReports(this.where);
    this.drainTo(reports, max, now, final);
    return reports.out;
  }

  /**
   * drainTo hands what drain() reports to `to`, asker by asker, without making reports: how a capture point feeds the
   * judge in the same process (`whohas analyze`). Returns how many askers it reported.
   */
  drainTo(to: RequestVisitor, max: number, now: number, final: boolean): number {
    let reported = 0;
    const slab = this.#slab;
    const due = this.#due;
    this.#due = [];
    for (let n = 0; n < due.length; n++) {
      const a = due[n];
      if (a === undefined || a.gone) continue;
      if (reported === max) {
        // The rest waits for the next drain, in order.
        for (const b of due.slice(n)) if (!b.gone) this.#due.push(b);
        break;
      }
      const list = a.list;
      let count = 0;
      let dueReplies = 0;
      let waiting = false;
      for (const s of list) {
        if (!isDue(slab, s, now, final)) {
          if (!slab.drained(s)) waiting = true;
          continue;
        }
        if (count === MAX_REQUEST_TIMES) {
          waiting = true;
          break;
        }
        count++;
        dueReplies += (slab.n(s) - slab.sent(s)) / 2;
      }
      if (count > 0) {
        to.asker(a.link, a.ip, a.asker, a.mac, count, dueReplies);
        let i = 0;
        for (const s of list) {
          if (i === count) break;
          if (!isDue(slab, s, now, final)) continue;
          const { list: replies, base } = slab.replies(s);
          to.request(Math.round(slab.t(s)), replies, base + slab.sent(s), base + slab.n(s));
          slab.markDrained(s);
          i++;
        }
        reported++;
      }
      // Nothing left to report until a request or a reply comes (ask and answer queue it again).
      if (waiting) this.#due.push(a);
      else a.due = false;
    }
    if (final || now - this.#swept >= SWEEP_MS) this.#sweep(now, final);
    return reported;
  }

  /**
   * #sweep forgets requests whose window is over and that were reported (the latest ones stay to time replies), and
   * the askers left with none for IDLE_MS; at the end of a capture (`final`), every reported request and every
   * asker left with none.
   */
  #sweep(now: number, final: boolean): void {
    this.#swept = now;
    if (final) {
      for (const a of this.#byId) if (a !== undefined) this.#trim(a, now, true);
      return;
    }
    const recent = this.#recent;
    while (recent.dueBy(now - REPLY_WINDOW_MS)) {
      const a = recent.pop();
      // A request not reported yet (a drain was full) is looked at again after the next window.
      if (!a.gone && this.#trim(a, now, false)) recent.push(a, now);
    }
    const emptied = this.#emptied;
    while (emptied.dueBy(now - IDLE_MS)) {
      const a = emptied.pop();
      // An asker that asked again since is queued again from #recent when it empties.
      if (!a.gone && a.list.length === 0 && now - a.last > IDLE_MS) this.#forget(a);
    }
  }

  /**
   * #trim drops the reported requests of `a` whose window is over (every reported one when `final`); returns whether
   * one over its window is still to report. An asker left with none is queued to be forgotten (at once when `final`).
   */
  #trim(a: Asked, now: number, final: boolean): boolean {
    const list = a.list;
    const slab = this.#slab;
    let keep = 0;
    let unreported = false;
    for (const s of list) {
      if (final ? slab.drained(s) && slab.n(s) === slab.sent(s) : reported(slab, s, now)) {
        slab.free(s);
        continue;
      }
      if (now - slab.t(s) > REPLY_WINDOW_MS) unreported = true;
      list[keep++] = s;
    }
    if (keep < list.length) {
      this.#held -= list.length - keep;
      // Popped, not `list.length = keep`: an array cut to length 0 drops its storage, and most askers' lists go from
      // one request to none and back every time they ask.
      while (list.length > keep) list.pop();
      if (keep === 0 && !final) this.#emptied.push(a, now);
    }
    if (keep === 0 && final) this.#forget(a);
    return unreported;
  }

  #forget(a: Asked): void {
    if (a.gone) return;
    a.gone = true;
    if (this.#latest === a) this.#latest = null;
    this.#byId[a.id] = undefined;
    this.#keys.remove(a.id);
    this.#ipNumbers.release(a.ip);
    this.#ipNumbers.release(a.asker);
  }
}
