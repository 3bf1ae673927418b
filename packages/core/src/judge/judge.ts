import { ipKey as ipOnLink, keyBatch, keyOnLink } from "../net/ip-key.js";
import type { ObservationAggregate, RequestReport } from "../wire.js";
import { ANSWER_WINDOW_MS, CLEAR_AFTER_MS, FINAL_MS, STALE_ANNOUNCER_MS, type Handover, type OpenFinding } from "./findings.js";
import type { AskerView } from "./askers.js";
import { IpJudgement, type Lens } from "./ip-judgement.js";
import { IpTable, type CountsView, type ResponderCounts } from "./ip-table.js";
import type { CapturePoint } from "./capture-point.js";
import { ipText, macText, type IpKey } from "./point-keys.js";
import { ReplyList } from "./requests.js";
import { wireDelay, type RequestVisitor } from "./request-sightings.js";
import { isOwnEntry } from "./own-requests.js";
import { NO_MAC } from "../packet/link.js";
import { findingsNow, type IpContext } from "./rules.js";
import { FindingTracker } from "./tracker.js";
import { JudgedVerdict, STATES, stateLetter, type Answering, type IpState, type Verdict } from "./verdict.js";

/** A Batch is what one capture point reports at a time (an agent's observations message, a drained capture file). */
export interface Batch {
  readonly entries: readonly ObservationAggregate[];
  readonly requests: readonly RequestReport[];
}

/** A ResponderView is one MAC that answered or announced for an IP, with the judge's word on it. */
export interface ResponderView extends ResponderCounts {
  /** It answers now: it answered within ANSWER_WINDOW_MS and has not let a request it would have seen go since. */
  readonly answering: boolean;
  /** Mean delay from a request to this MAC's reply, as the capture points that saw both timed it. */
  readonly meanLatencyMs: number | null;
  /** Its latest gratuitous announcement: the frame kind and its THA (Linux takes a gratuitous reply only with THA = SHA). */
  readonly lastAnnouncement: { readonly kind: string; readonly targetMac: string | null } | null;
}

/** An IpView is one IP as the judge sees it: the counts, who answers now, its state, its handovers. */
export interface IpView extends Omit<CountsView, "responders"> {
  readonly state: IpState;
  readonly responders: readonly ResponderView[];
  /** While nobody answers: since when the IP has been asked for without an answer (else null). */
  readonly unansweredSince: number | null;
  /**
   * The answering MAC with the shortest mean reply delay: the one that tends to win the race, so the one clients
   * tend to cache. Passive and statistical; a probe times every request exactly.
   */
  readonly fastest: string | null;
  /** Handovers seen, newest first (at most MAX_HANDOVERS). */
  readonly handovers: readonly Handover[];
  /**
   * Who asks for it (at most MAX_ASKERS, those that asked within ASKER_IDLE_MS), the most first-answer changes first:
   * each change is an asker re-learning the IP from another node, and its connections through the old one dropping.
   */
  readonly askers: readonly AskerView[];
  /** First-answer changes ever counted on this IP, forgotten askers included (only grows while the IP is held). */
  readonly firstAnswerChanges: number;
}

/** What a batch brought: the IPs it touched, the urgent ones to judge at once, and those with news (IpJudgement.news). */
export interface Ingested {
  readonly touched: Set<string>;
  readonly urgent: Set<string>;
  readonly news: ReadonlySet<string>;
}
const NO_NEWS: ReadonlySet<string> = new Set();

/** An OwnTest tells whether asker's request for ip at t was whohas's own probe. */
type OwnTest = (ip: string, asker: string, t: number) => boolean;

/** ownOf is the lens's test for whohas's own probes, null when it has none. */
const ownOf = (lens: Lens): OwnTest | null =>
  lens.ownRequest === undefined ? null : (ip: string, asker: string, t: number) => lens.ownRequest?.(ip, asker, t) === true;

/** QUIET_MS: an IP with nothing pending and nothing open is left alone this long after its last request or announcement. */
const QUIET_MS = STALE_ANNOUNCER_MS + ANSWER_WINDOW_MS;

/** pointOf names a capture point: a node's interface (a node may capture on several segments). */
export const pointOf = (node: string, iface: string): string => `${node}/${iface}`;

/** nodeOfPoint is the node of a capture point. */
export const nodeOfPoint = (point: string): string => point.slice(0, point.lastIndexOf("/"));

/**
 * The Judge is whohas' one engine: every capture point's reports go in (`ingest`), and `judge` says, per IP, what is
 * wrong now and what changed (findings with hysteresis, handovers). The hub feeds it the agents' messages and judges
 * IPs as their data arrives and once a second; `whohas analyze` feeds it a capture file through the same
 * CapturePoint an agent uses. Pure: time, the cluster (IpContext) and the MACs' owners (Lens) are given.
 */
/** MAX_TEXTS bounds the interned IP and MAC texts (past it they start over). */
const MAX_TEXTS = 400_000;

export class Judge {
  readonly counts: IpTable;
  readonly #ips = new Map<string, IpJudgement>();
  readonly #tracker: FindingTracker;
  /** IPs that may change with time alone (pending requests, recent activity, open findings). */
  readonly #awake = new Set<string>();
  /**
   * lateSightings counts capture points' reports of a request that came FINAL_MS or more after it: the request was
   * already taken in order without them (they count as asked, and as evidence of several answers, but a MAC they
   * would have shown silent was not). A count that grows says reports come too late: a hub that reads late, agents
   * whose clocks run behind its own, or a pace too slow for the link.
   */
  lateSightings = 0;

  constructor(opts: { readonly maxMacsPerIp?: number; readonly clearAfterMs?: number } = {}) {
    this.counts = new IpTable({ maxMacsPerIp: opts.maxMacsPerIp });
    this.#tracker = new FindingTracker(opts.clearAfterMs ?? CLEAR_AFTER_MS);
  }

  /** The name of each capture point, made once (every request of every report names one). */
  readonly #points = new Map<string, string>();

  /** The last capture point named: a batch's reports mostly name one. */
  #lastPoint = { node: "", iface: "", point: "" };

  #point(node: string, iface: string): string {
    const last = this.#lastPoint;
    if (last.node === node && last.iface === iface) return last.point;
    const k = `${node}\0${iface}`;
    let p = this.#points.get(k);
    if (p === undefined) {
      if (this.#points.size > 100_000) this.#points.clear();
      this.#points.set(k, (p = pointOf(node, iface)));
    }
    this.#lastPoint = { node, iface, point: p };
    return p;
  }

  /**
   * One copy of each IP and MAC text: tens of thousands of IPs are reported many times a minute, and each parsed
   * message brings its own copies, which the judge and the store would keep. Bounded like #points.
   */
  readonly #texts = new Map<string, string>();

  #text(s: string): string {
    const t = this.#texts.get(s);
    if (t !== undefined) return t;
    if (this.#texts.size >= MAX_TEXTS) this.#texts.clear();
    this.#texts.set(s, s);
    return s;
  }

  /**
   * intern replaces, in place, the IP and MAC texts of a batch just parsed by the copies the judge already holds, so
   * that what the caller keeps of the batch (the store's minute buckets) shares them too; addresses seen in a VLAN
   * become their IP keys (keyBatch) first.
   */
  intern(batch: Batch): void {
    keyBatch(batch);
    for (const e of batch.entries as ObservationAggregate[]) {
      e.ip = this.#text(e.ip);
      e.mac = this.#text(e.mac);
    }
    for (const r of batch.requests as RequestReport[]) {
      r.ip = this.#text(r.ip);
      r.asker = this.#text(r.asker);
      if (r.askerMac !== undefined) r.askerMac = this.#text(r.askerMac);
      for (const reply of r.replies) reply[1] = this.#text(reply[1]);
    }
  }

  #judgement(ip: string): IpJudgement {
    let j = this.#ips.get(ip);
    if (j === undefined) this.#ips.set(ip, (j = new IpJudgement(ip)));
    return j;
  }

  /**
   * ingest takes one batch of the capture points of `node` and returns the IPs it touched, and among them the urgent
   * ones: those whose verdict may have moved at once (a new IP, an answer from another MAC than the owner, an
   * announcement, evidence), to judge now; the others change only with time and are judged on the next round.
   */
  ingest(node: string, batch: Batch, now: number, lens: Lens): Ingested {
    const touched = this.#entries(node, batch.entries, lens);
    const replies = this.#replies;
    for (const r of batch.requests) {
      touched.add(r.ip);
      const j = this.#judgement(r.ip);
      const point = this.#point(node, r.iface);
      const askerMac = r.askerMac ?? null;
      for (let i = 0; i < r.times.length; i++) {
        if (now - (r.times[i] ?? 0) >= FINAL_MS) this.lateSightings++;
        // Replies are few (one per MAC that answered): each request picks its own from the report's list.
        replies.clear();
        for (const reply of r.replies) if (reply[0] === i) replies.add(reply[1], reply[2]);
        j.sighting(point, r.asker, askerMac, r.times[i] ?? 0, replies, now, lens);
      }
      j.settleEarly(now, lens);
    }
    return this.#wake(touched);
  }

  /** The replies of the request being joined (one at a time: the judge is single-threaded). */
  readonly #replies = new ReplyList();

  /**
   * ingestPoint drains `point`, a capture point of `node` in this process, straight into the judge: what ingest()
   * does with the batch its drain() would give, without making the batch (`whohas analyze`). `final`: the capture
   * ended, every request is reported. Returns the frames the point dropped at its bound.
   */
  ingestPoint(node: string, point: CapturePoint, now: number, lens: Lens, final: boolean): number {
    const touched = new Set<string>();
    const own = ownOf(lens);
    point.drainEntriesTo(
      (e) => {
        keyOnLink(e);
        this.#entry(node, e, own, lens, touched);
      },
      Number.MAX_SAFE_INTEGER,
      now,
    );
    const replies = this.#replies;
    let j: IpJudgement | null = null;
    let ip = "";
    let asker = "";
    let askerMac: string | null = null;
    let at = "";
    let left = 0;
    // A drain reports an IP's askers one after the other: the IP's key, judgement and point are made once for them.
    let lastLink = "";
    let lastIp: IpKey = -1;
    const feed: RequestVisitor = {
      asker: (link: string, ipk: IpKey, askerk: IpKey, mac: number, requests: number) => {
        if (j === null || link !== lastLink || ipk !== lastIp) {
          const where = point.where(link);
          ip = ipOnLink(ipText(ipk), where.vlan);
          touched.add(ip);
          j = this.#judgement(ip);
          at = this.#point(node, where.iface);
          lastLink = link;
          lastIp = ipk;
        }
        asker = ipText(askerk);
        askerMac = mac === NO_MAC ? null : macText(mac);
        left = requests;
      },
      request: (t: number, flat: ArrayLike<number>, from: number, to: number) => {
        if (j === null) return;
        replies.clear();
        for (let k = from; k < to; k += 2) replies.add(macText(flat[k] ?? 0), wireDelay(flat[k + 1] ?? 0));
        j.sighting(at, asker, askerMac, t, replies, now, lens);
        if (--left === 0) j.settleEarly(now, lens);
      },
    };
    point.drainRequests(feed, Number.MAX_SAFE_INTEGER, now, final);
    this.#wake(touched);
    return point.takeDropped(now);
  }

  /** #entries takes a batch's aggregates (less those of whohas's own probes): the counts, and the judge's notes. */
  #entries(node: string, all: readonly ObservationAggregate[], lens: Lens): Set<string> {
    const touched = new Set<string>();
    const own = ownOf(lens);
    for (const e of all) this.#entry(node, e, own, lens, touched);
    return touched;
  }

  /** #entry takes one aggregate, already keyed, unless it counts only whohas's own probes (`own`: null when none). */
  #entry(node: string, e: ObservationAggregate, own: OwnTest | null, lens: Lens, touched: Set<string>): void {
    if (own !== null && isOwnEntry(e, own)) return;
    this.counts.applyOne(node, e, touched);
    this.#judgement(e.ip).aggregate(e, lens);
  }

  /** #wake keeps the IPs touched awake, and returns them with the urgent and news ones among them (cleared as they go). */
  #wake(touched: Set<string>): Ingested {
    const urgent = new Set<string>();
    let news: Set<string> | null = null;
    for (const ip of touched) {
      this.#awake.add(ip);
      const j = this.#ips.get(ip);
      if (j === undefined) continue;
      if (j.news) {
        j.news = false;
        (news ??= new Set()).add(ip);
      }
      if (!j.urgent) continue;
      j.urgent = false;
      urgent.add(ip);
    }
    return { touched, urgent, news: news ?? NO_NEWS };
  }

  /** restore adds counts read back from storage (history only: verdicts start from the live data). */
  restore(entries: readonly ObservationAggregate[]): void {
    this.counts.restore(entries);
  }

  /** reopen holds findings read back from storage open again (a restarted hub continues its incidents). */
  reopen(open: readonly OpenFinding[]): void {
    this.#tracker.restore(open);
    for (const f of open) this.#awake.add(f.ip);
  }

  /**
   * judge settles one IP at `now` (final requests taken in order, handovers checked) and feeds what is wrong now to
   * the hysteresis: returns the findings opened, updated or cleared, and the handovers seen.
   */
  judge(ip: string, now: number, ctx: IpContext, lens: Lens, end = false): Verdict {
    const j = this.#ips.get(ip);
    const handovers = j?.settle(now, lens, end) ?? [];
    const responders = this.#answeringNow(ip, j, now, lens);
    // Who captured the IP matters only when some capture point is down (is the IP blind?).
    const capturedBy = ctx.downNodes.size === 0 ? [] : this.counts.capturePoints(ip);
    const present = findingsNow(ip, j, { responders, capturedBy }, ctx, now, lens);
    const transitions = this.#tracker.update(ip, now, present);
    const quiet = (j === undefined || j.idle(now)) && now - this.counts.lastActivity(ip) > QUIET_MS && !this.#tracker.has(ip);
    if (quiet) this.#awake.delete(ip);
    return new JudgedVerdict(transitions, handovers, j, responders, now);
  }

  /** awake lists the IPs to judge on each round (the others change only when data about them arrives). */
  awake(): IterableIterator<string> {
    return this.#awake.values();
  }

  /** wake makes every IP judged on the next rounds (the cluster or the agents changed: every verdict may move). */
  wakeAll(): void {
    for (const ip of this.counts.ips()) this.#awake.add(ip);
  }

  /** open lists the open findings of `ip`, or of every IP. */
  open(ip?: string): OpenFinding[] {
    return this.#tracker.open(ip);
  }

  /** holds tells whether `ip` has an open finding. */
  holds(ip: string): boolean {
    return this.#tracker.has(ip);
  }

  /** forget lets go of `ip` entirely (it left the live view). */
  forget(ip: string): void {
    this.counts.remove(ip);
    this.#ips.delete(ip);
    this.#awake.delete(ip);
  }

  /** view renders one IP at `now` with the verdicts: who answers now, the state, the fastest, the handovers. */
  view(ip: string, now: number, lens: Lens): IpView | null {
    const v = this.counts.view(ip, (mac) => lens.nodeOf(mac));
    if (v === null) return null;
    const j = this.#ips.get(ip);
    const responders = this.#responders(j, v.responders, now);
    // Stable order for people reading a live table: answering first, then by node, then MAC.
    responders.sort(
      (a, b) => Number(b.answering) - Number(a.answering) || (a.node ?? "~").localeCompare(b.node ?? "~") || a.mac.localeCompare(b.mac),
    );
    let fastest: { mac: string; ms: number } | null = null;
    for (const r of responders) {
      const ms = r.meanLatencyMs;
      if (r.answering && ms !== null && (fastest === null || ms < fastest.ms)) fastest = { mac: r.mac, ms };
    }
    return {
      ...v,
      state: this.#state(j, responders, now),
      responders,
      fastest: fastest?.mac ?? null,
      unansweredSince: j?.unansweredSince ?? null,
      handovers: j?.handovers ?? [],
      askers: j?.askers?.view(now) ?? [],
      firstAnswerChanges: j?.askers?.total ?? 0,
    };
  }

  /** firstAnswerChanges is the changes ever counted on `ip`, without building its view (metrics read every IP). */
  firstAnswerChanges(ip: string): number {
    return this.#ips.get(ip)?.askers?.total ?? 0;
  }

  /** stateOf is an IP's state at `now`, without building its view or key (metrics count every IP on each scrape). */
  stateOf(ip: string, now: number): IpState {
    const j = this.#ips.get(ip);
    return STATES[stateLetter(j, this.#answeringMacs(ip, j, now), now)];
  }

  /** answeringCount is how many MACs answer for `ip` at `now`. */
  answeringCount(ip: string, now: number): number {
    return this.#answeringMacs(ip, this.#ips.get(ip), now);
  }

  /** The array #answeringMacs fills from its start: read it before the next call (never shortened, see recentMacs). */
  readonly #answering: string[] = [];

  /**
   * #answeringMacs writes the MACs answering `ip` now into #answering from its start, without building its view, and
   * returns how many.
   */
  #answeringMacs(ip: string, j: IpJudgement | undefined, now: number): number {
    const out = this.#answering;
    const n = this.counts.recentMacs(ip, now, out);
    if (j === undefined) return n;
    let keep = 0;
    for (let i = 0; i < n; i++) {
      const mac = out[i] ?? "";
      if (j.macs.has(mac) ? j.answering(mac, now) : true) out[keep++] = mac;
    }
    return keep;
  }

  /** #answeringNow is #answeringMacs with each MAC's node, as the rules read them. */
  #answeringNow(ip: string, j: IpJudgement | undefined, now: number, lens: Lens): Answering[] {
    const n = this.#answeringMacs(ip, j, now);
    const macs = this.#answering;
    const out = new Array<Answering>(n);
    for (let i = 0; i < n; i++) {
      const mac = macs[i] ?? "";
      out[i] = { mac, node: lens.nodeOf(mac), answering: true };
    }
    return out;
  }

  /**
   * #responders puts the judge's "answering now" into the counted responders (a MAC the requests say nothing of keeps
   * the counts' answer: it answered within ANSWER_WINDOW_MS), with the mean reply delay its capture points timed.
   */
  #responders(j: IpJudgement | undefined, list: readonly ResponderCounts[], now: number): ResponderView[] {
    return list.map((r) => {
      const m = j?.macs.get(r.mac);
      const answering = m === undefined || j === undefined ? now - r.lastSeen <= ANSWER_WINDOW_MS : j.answering(r.mac, now);
      const meanLatencyMs = m === undefined || m.delayCount === 0 ? null : m.delaySum / m.delayCount;
      const lastAnnouncement = m?.lastAnnounceKind == null ? null : { kind: m.lastAnnounceKind, targetMac: m.lastAnnounceTha };
      return { ...r, answering, meanLatencyMs, lastAnnouncement };
    });
  }

  #state(j: IpJudgement | undefined, responders: readonly ResponderView[], now: number): IpState {
    return STATES[stateLetter(j, responders.some((r) => r.answering) ? 1 : 0, now)];
  }
}
