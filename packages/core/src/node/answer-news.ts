import { isNews } from "../judge/findings.js";

/** MAX_NEWS_IPS bounds the IPs remembered (past it they start over: at worst one early send more per IP). */
const MAX_NEWS_IPS = 50_000;
/**
 * MAX_NEWS_MACS bounds the MACs remembered per IP: past it a MAC not remembered is news and is not kept (ARP from
 * made-up MACs needs no credentials; the agent's early sends are spaced whatever comes).
 */
export const MAX_NEWS_MACS = 64;

/**
 * AnswerNews tells, frame by frame on an agent, whether a MAC answering or announcing an IP is news (isNews: the
 * judge's own rule, which the hub applies to the reports); the agent sends such a frame's report at once rather than
 * at its next flush. IPv4 addresses are numbers, IPv6 ones text, MACs
 * numbers: nothing is made per frame.
 */
export class AnswerNews {
  readonly #last = new Map<number | string, Map<number, number>>();

  /** size is the (IP, MAC) pairs remembered. */
  get size(): number {
    let n = 0;
    for (const macs of this.#last.values()) n += macs.size;
    return n;
  }

  /** seen notes `mac` answering or announcing `ip` at `t` (ms); true when that is news. */
  seen(ip: number | string, mac: number, t: number): boolean {
    let macs = this.#last.get(ip);
    if (macs === undefined) {
      if (this.#last.size >= MAX_NEWS_IPS) this.#last.clear();
      this.#last.set(ip, (macs = new Map<number, number>()));
    }
    const before = macs.get(mac);
    if (before === undefined ? macs.size < MAX_NEWS_MACS : t > before) macs.set(mac, t);
    return before === undefined || isNews(before, t);
  }
}
