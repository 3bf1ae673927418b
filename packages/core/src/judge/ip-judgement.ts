import { roleOf } from "../packet/frame.js";
import type { ObservationAggregate } from "../wire.js";
import {
  ANNOUNCE_GRACE_MS,
  ANSWER_WINDOW_MS,
  isNews,
  FINAL_MS,
  FLIP_FLOP_MOVES,
  FLIP_FLOP_MS,
  MAX_HANDOVERS,
  PROBE_ANSWER_MS,
  REPLY_WINDOW_MS,
  type Handover,
  type LiveFinding,
} from "./findings.js";
import { Askers } from "./askers.js";
import { name, names, type Lens } from "./lens.js";
import { newMac, noteAnnouncement, type MacState } from "./mac-state.js";
import { RequestJoin, type JoinedRequest, type Replies } from "./requests.js";

export type { MacState } from "./mac-state.js";

/** A Move is the answers passing from one MAC to another. */
interface Move {
  readonly from: string;
  readonly to: string;
  readonly at: number;
}

/** Evidence gathered since the last judgement, per finding type. */
interface Evidence {
  macs: Set<string>;
  at: number;
  /** Written out only when taken: on a busy IP the latest of thousands is the one read. */
  detail: () => string;
}

const NO_HANDOVERS: readonly Handover[] = [];

/** newsFrom: `m` answering or announcing at `at` is news (isNews), after its latest reply or announcement. */
const newsFrom = (m: MacState, at: number): boolean => isNews(Math.max(m.lastReply, m.episodes?.[m.episodes.length - 1]?.last ?? 0), at);

export type { Lens } from "./lens.js";

/**
 * An IpJudgement is the judge's memory of one IP: its requests joined across capture points, who owns it now (the
 * single MAC answering), how it moved (handovers), what each MAC did, and the evidence of findings gathered since the
 * last judgement. Pure: time is what it is given.
 */
export class IpJudgement {
  readonly requests = new RequestJoin();
  /** Per asker, how often the first answer changed node; made at the first client request to become final. */
  askers: Askers | null = null;
  readonly macs = new Map<string, MacState>();
  /** The single MAC answering, and its latest reply; null before anyone answered. */
  owner: { mac: string; lastReply: number } | null = null;
  /** MACs that answered one request together with the owner during its tenure: a move to one is no clean handover. */
  #coAnswered: Set<string> | null = null;
  /** Final requests the owner would have seen and nobody answered, since the owner's last reply. */
  #unanswered = 0;
  /** Since when the IP has been asked without an answer (the first such final request), null while answered. */
  unansweredSince: number | null = null;
  /** The latest request seen (open or final); -Infinity: never. */
  lastAsked = -Infinity;
  /** The latest request answered by two or more MACs; -Infinity: never. */
  lastMulti = -Infinity;
  #moves: Move[] | null = null;
  /**
   * Urgent: what arrived may change the verdict at once (a new IP, an answer from another MAC than the owner, an
   * announcement, evidence): the hub judges it now rather than on its next round. The judge clears it.
   */
  urgent = true;
  /**
   * News: a MAC answered or announced the IP that had not within ANSWER_WINDOW_MS (a new responder, one back, a
   * takeover). The other capture points' reports of the same requests complete it: the hub asks their agents to send
   * at once rather than at their next flush. The judge clears it.
   */
  news = false;
  /** When the answers last completed a flip-flop, and between which MACs. */
  flip: { at: number; macs: [string, string] } | null = null;
  #handovers: Handover[] | null = null;
  /** Handovers found between two judgements (requests are settled as their reports arrive), for the next one. */
  #found: Handover[] | null = null;
  /** Handovers whose announcement is not checked yet (until the new owner's first reply + ANNOUNCE_GRACE_MS). */
  #unchecked: { handover: Handover; firstReply: number; since: number }[] | null = null;
  /** The latest gratuitous announcement, by whom. */
  lastAnnouncer: { mac: string; at: number } | null = null;
  /** The latest request answered by several MACs, for the multi-responder evidence's text. */
  #latestMulti: JoinedRequest | null = null;
  /** Made when there is some: tens of thousands of IPs are judged, few have evidence. */
  #evidenceByType: Map<"multi-responder" | "changed" | "ethernet-mismatch", Evidence> | null = null;

  constructor(readonly ip: string) {}

  #mac(mac: string): MacState {
    let m = this.macs.get(mac);
    if (m === undefined) this.macs.set(mac, (m = newMac(mac)));
    return m;
  }

  /**
   * sighting joins one capture point's report of one request at `t` by `asker` (its MAC: null when the report has
   * none), with the replies it saw; several MACs on one request is evidence at once.
   */
  sighting(point: string, asker: string, askerMac: string | null, t: number, replies: Replies, now: number, lens: Lens): void {
    const r = this.requests.add(point, asker, t, replies, now);
    if (r === null) return;
    if (r.askerMac === null) r.askerMac = askerMac;
    // whohas's own probe: who answers it counts, but it is no client asking (no request, race or silence counted).
    const own = r.own || lens.ownRequest?.(this.ip, asker, t) === true;
    r.own = own;
    if (!own && t > this.lastAsked) this.lastAsked = t;
    // Past its reply window a capture point has seen every reply it will see to this request: a MAC it would have
    // seen answer and did not has stopped answering (known now, not only once the request is final). Not so for a
    // probe: the prober's own node never answers it, and only clients' requests tell who stopped.
    if (!own && now - t > REPLY_WINDOW_MS) {
      for (const m of this.macs.values())
        if (m.lastReply > 0 && m.lastReply < t && r.replyAt(m.mac) === undefined && lens.watches(m.mac, [point]))
          m.lastMissed = Math.max(m.lastMissed, t);
    }
    for (let k = 0; k < replies.n; k++) {
      const mac = replies.macs[k] ?? "";
      const delay = replies.delays[k] ?? 0;
      const at = t + delay;
      if (this.owner?.mac !== mac) this.urgent = true;
      const m = this.#mac(mac);
      if (!own && newsFrom(m, at)) this.news = true;
      if (m.streakStart === 0 || m.lastMissed >= m.streakStart) m.streakStart = at;
      if (at > m.lastReply) m.lastReply = at;
      if (own) {
        if (m.probedSince === 0 || at - m.lastProbeReply > PROBE_ANSWER_MS) m.probedSince = at;
        if (at > m.lastProbeReply) m.lastProbeReply = at;
        continue;
      }
      m.delayCount++;
      m.delaySum += delay;
    }
    if (this.requests.added > 0 && r.replyCount >= 2 && !r.ambiguous) {
      this.lastMulti = Math.max(this.lastMulti, r.t);
      this.#multi(r, lens);
    }
  }

  /**
   * #multi keeps one request answered by several MACs as evidence. A flood brings one per request: the evidence
   * keeps the MACs, the earliest time and the latest request, and its text is written only when taken.
   */
  #multi(r: JoinedRequest, lens: Lens): void {
    const e = this.#evidenceByType?.get("multi-responder");
    if (e === undefined) {
      this.#latestMulti = r;
      this.#evidence("multi-responder", r.answerers(), r.t, () => {
        const latest = this.#latestMulti ?? r;
        const from = latest.own ? `whohas's probe from ${latest.asker}` : `one request from ${latest.asker}`;
        return `${from} for ${this.ip} was answered by ${names(latest.answerers(), lens)}: clients cache whichever wins the race`;
      });
      return;
    }
    this.urgent = true;
    for (let i = 0; i < r.replyCount; i++) e.macs.add(r.answerer(i));
    if (r.t < e.at) e.at = r.t;
    this.#latestMulti = r;
  }

  /** aggregate takes what counts cannot say elsewhere: announcements, and frames whose Ethernet source lies. */
  aggregate(e: ObservationAggregate, lens: Lens): void {
    if (roleOf(e.kind) === "announce") {
      this.urgent = true;
      const m = this.#mac(e.mac);
      if (newsFrom(m, e.firstSeen)) this.news = true;
      noteAnnouncement(m, e.firstSeen, e.lastSeen);
      if (this.lastAnnouncer === null || e.lastSeen >= this.lastAnnouncer.at) {
        this.lastAnnouncer = { mac: e.mac, at: e.lastSeen };
        m.lastAnnounceKind = e.kind;
        m.lastAnnounceTha = e.targetMac;
      }
    }
    // The texts are taken, not `e`: a capture point in this process hands the same object refilled for each aggregate.
    const { ethSrc, mac } = e;
    if (e.ethernetMismatch > 0 && ethSrc !== null) {
      this.#evidence(
        "ethernet-mismatch",
        [mac, ethSrc],
        e.lastSeen,
        () =>
          `Ethernet source ${ethSrc} sends ARP as ${name(mac, lens)} for ${this.ip} (Microsoft NLB does this on purpose; anything else is a misconfigured or spoofing host)`,
      );
    }
  }

  #evidence(type: "multi-responder" | "changed" | "ethernet-mismatch", macs: readonly string[], at: number, detail: () => string): void {
    this.urgent = true;
    this.#evidenceByType ??= new Map();
    const e = this.#evidenceByType.get(type);
    if (e === undefined) {
      this.#evidenceByType.set(type, { macs: new Set(macs), at, detail });
      return;
    }
    for (const m of macs) e.macs.add(m);
    e.at = Math.min(e.at, at);
    e.detail = detail;
  }

  /** takeEvidence returns the evidence gathered since the last call, as findings, and forgets it. */
  takeEvidence(): LiveFinding[] {
    const all = this.#evidenceByType;
    if (all === null) return [];
    this.#evidenceByType = null;
    const out = [...all].map(([type, e]) => ({ type, macs: [...e.macs].sort(), detail: e.detail(), at: e.at }));
    this.#latestMulti = null;
    return out;
  }

  /**
   * settle moves time to `now`: requests that became final are taken in order (who owns the IP, handovers, requests
   * left unanswered), and handovers whose grace passed are checked for their announcement. `end`: no more data will
   * come (a capture file ended), so everything is final now. Returns new handovers.
   */
  settle(now: number, lens: Lens, end = false): Handover[] {
    let out: Handover[] | null = this.#found;
    this.#found = null;
    for (const r of this.requests.finalize(now, end)) {
      const h = this.#take(r, lens);
      if (h !== null) (out ??= []).push(h);
    }
    const unchecked = this.#unchecked;
    if (unchecked === null || unchecked.length === 0) return out ?? [];
    for (let i = unchecked.length - 1; i >= 0; i--) {
      const u = unchecked[i];
      if (u === undefined || (!end && now - u.firstReply < ANNOUNCE_GRACE_MS)) continue;
      unchecked.splice(i, 1);
      const announced = this.#announcedBetween(u.handover.to.mac, u.since, u.firstReply + ANNOUNCE_GRACE_MS);
      const all = this.#handovers ?? [];
      const k = all.indexOf(u.handover);
      const checked = { ...u.handover, announced };
      if (k >= 0) all[k] = checked;
      if (!announced) {
        const { from, to } = u.handover;
        this.#evidence(
          "changed",
          [from.mac, to.mac],
          u.handover.at,
          () =>
            `${this.ip} moved from ${name(from.mac, lens)} to ${name(to.mac, lens)} without a gratuitous announcement from ${name(to.mac, lens)}: switches and clients that cached ${name(from.mac, lens)} keep sending there until they ask again`,
        );
      }
    }
    return out ?? [];
  }

  /**
   * settleEarly takes the requests that became final as reports arrive, so that they are not held until the IP is
   * judged; the handovers it finds wait for the next settle.
   */
  settleEarly(now: number, lens: Lens): void {
    for (const r of this.requests.finalize(now)) {
      const h = this.#take(r, lens);
      if (h !== null) (this.#found ??= []).push(h);
    }
  }

  /**
   * #take takes one request handed out as final: a client's counts for its asker (an ambiguous one as asked only);
   * one placed in order and not ambiguous decides who owns the IP.
   */
  #take(r: JoinedRequest, lens: Lens): Handover | null {
    if (r.late) return null;
    if (!r.own) (this.askers ??= new Askers()).take(r, lens);
    return r.ambiguous ? null : this.#final(r, lens);
  }

  /** handovers seen, newest first (at most MAX_HANDOVERS). */
  get handovers(): readonly Handover[] {
    return this.#handovers ?? NO_HANDOVERS;
  }

  #announcedBetween(mac: string, from: number, to: number): boolean {
    return (this.macs.get(mac)?.episodes ?? []).some((e) => e.last >= from && e.first <= to);
  }

  /** #final takes one final request: who answered it decides who owns the IP, and whether it moved. */
  #final(r: JoinedRequest, lens: Lens): Handover | null {
    // A probe of whohas's own tells who answers, not who owns the IP: its prober's node does not answer itself, so
    // another node's lone answer would look like a move, and its silence like a miss. Its prober hears every answer
    // to it (they are addressed to it): a MAC that answered earlier probes and not this one has stopped.
    if (r.own) {
      for (const m of this.macs.values()) if (m.probedSince > 0 && r.replyAt(m.mac) === undefined) m.probedSince = 0;
      return null;
    }
    // The capture points that saw it, listed only when a lens must be asked.
    let seen: string[] | null = null;
    // Who would have been seen answering and was not: their answers for this IP are older than this request.
    for (const m of this.macs.values())
      if (m.lastReply > 0 && r.replyAt(m.mac) === undefined && lens.watches(m.mac, (seen ??= r.points())))
        m.lastMissed = Math.max(m.lastMissed, r.t);
    const answers = r.replyCount;
    if (answers === 0) {
      // Unanswered, as far as the capture points can tell: the owner's node saw the request (else it is blind).
      if (this.owner === null || lens.watches(this.owner.mac, (seen ??= r.points()))) {
        this.#unanswered++;
        this.unansweredSince ??= r.t;
      }
      return null;
    }
    this.unansweredSince = null;
    if (answers >= 2) {
      const ownerReply = this.owner === null ? undefined : r.replyAt(this.owner.mac);
      if (this.owner !== null && ownerReply !== undefined) {
        this.owner.lastReply = ownerReply;
        this.#coAnswered ??= new Set();
        for (let i = 0; i < answers; i++) if (r.answerer(i) !== this.owner.mac) this.#coAnswered.add(r.answerer(i));
      }
      this.#unanswered = 0;
      return null;
    }
    const mac = r.answerer(0);
    const firstReply = r.replyAt(mac) ?? r.t;
    if (this.owner === null || this.owner.mac === mac) {
      if (this.owner === null) this.owner = { mac, lastReply: firstReply };
      else this.owner.lastReply = firstReply;
      this.#unanswered = 0;
      return null;
    }
    const old = this.owner;
    // The old owner's answer could not have been seen (its agent missed the request: down, lagging, just connected):
    // its silence says nothing of a moment, so nothing moved while its last answer is recent. One gone quiet for
    // longer has moved (a node whose link went down sees nothing either): the move counts toward a flip-flop, but
    // no handover is recorded, for nobody saw when it stopped.
    if (!lens.watches(old.mac, (seen ??= r.points()))) {
      if (firstReply - old.lastReply <= ANSWER_WINDOW_MS) return null;
      this.owner = { mac, lastReply: firstReply };
      this.#coAnswered = null;
      this.#unanswered = 0;
      this.#move({ from: old.mac, to: mac, at: firstReply });
      return null;
    }
    const clean = this.#coAnswered?.has(mac) !== true;
    this.owner = { mac, lastReply: firstReply };
    this.#coAnswered = null;
    this.#move({ from: old.mac, to: mac, at: firstReply });
    const unanswered = this.#unanswered;
    this.#unanswered = 0;
    if (!clean) return null;
    const announcedAt = (this.macs.get(mac)?.episodes ?? [])
      .filter((e) => e.last >= old.lastReply && e.first <= firstReply)
      .map((e) => Math.max(e.first, old.lastReply));
    const takeover = Math.min(firstReply, ...announcedAt);
    const h: Handover = {
      from: { mac: old.mac, node: lens.nodeOf(old.mac) },
      to: { mac, node: lens.nodeOf(mac) },
      at: takeover,
      gapMs: Math.max(0, takeover - old.lastReply),
      unanswered,
      announced: null,
    };
    const all = (this.#handovers ??= []);
    all.unshift(h);
    if (all.length > MAX_HANDOVERS) all.pop();
    (this.#unchecked ??= []).push({ handover: h, firstReply, since: old.lastReply });
    return h;
  }

  /** #move remembers the answers moving, and marks a flip-flop when they went back and forth FLIP_FLOP_MOVES times. */
  #move(m: Move): void {
    const moves = (this.#moves ??= []);
    moves.push(m);
    while (moves.length > 0 && m.at - (moves[0]?.at ?? 0) > FLIP_FLOP_MS) moves.shift();
    const pair = [m.from, m.to].sort();
    let n = 0;
    for (let i = moves.length - 1; i >= 0; i--) {
      const x = moves[i];
      if (x === undefined || [x.from, x.to].sort().join() !== pair.join()) break;
      n++;
    }
    if (n >= FLIP_FLOP_MOVES) this.flip = { at: m.at, macs: [pair[0] ?? "", pair[1] ?? ""] };
  }

  /** answeringSince is since when `mac` has answered without a miss (null when it does not answer now). */
  answeringSince(mac: string, now: number): number | null {
    const m = this.macs.get(mac);
    return m === undefined || !this.answering(mac, now) ? null : m.streakStart;
  }

  /**
   * answering tells whether `mac` answers now: it answered within ANSWER_WINDOW_MS (or announced, for an IP nobody
   * asks), and no request its node would have seen has gone unanswered by it since.
   */
  answering(mac: string, now: number): boolean {
    const m = this.macs.get(mac);
    if (m === undefined) return false;
    const lastAnnounce = m.episodes?.[m.episodes.length - 1]?.last ?? 0;
    const claim = Math.max(m.lastReply, this.lastAsked === -Infinity ? lastAnnounce : 0);
    return now - claim <= ANSWER_WINDOW_MS && claim >= m.lastMissed;
  }

  /**
   * answersProbes tells whether `mac` has answered whohas's own probes for at least `forMs`, the latest within
   * PROBE_ANSWER_MS: what a background probe learns of a host that answers no request the agents see (it answers
   * off-cluster clients by unicast).
   */
  answersProbes(mac: string, now: number, forMs: number): boolean {
    const m = this.macs.get(mac);
    return m !== undefined && m.probedSince > 0 && now - m.lastProbeReply <= PROBE_ANSWER_MS && m.lastProbeReply - m.probedSince >= forMs;
  }

  /** idle: nothing left to settle or hand out (the judge may stop looking at it until it hears of it again). */
  idle(now: number): boolean {
    return (
      !this.requests.pending &&
      (this.#unchecked?.length ?? 0) === 0 &&
      this.#evidenceByType === null &&
      now - this.lastAsked > ANSWER_WINDOW_MS + FINAL_MS
    );
  }
}
