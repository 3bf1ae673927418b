import { formatIPv4Number, formatMacNumber } from "../packet/addr.js";
import { type FrameFields, roleOf } from "../packet/frame.js";
import { NO_MAC } from "../packet/link.js";
import {
  CLEAR_AFTER_MS,
  FLIP_FLOP_MS,
  type Finding,
  type FindingType,
  MAX_EVIDENCE_TIMES,
  NO_RESPONDER_MS,
  REQUEST_WINDOW_MS,
  SPLIT_BRAIN_MS,
} from "./findings.js";

const NO_CHANGES: readonly Change[] = Object.freeze([]);

/** SWEEP_MS: how often (in observed time) stale requests and quiet findings are looked at. */
const SWEEP_MS = 1000;

/** IpKey is an IPv4 address as a number, or IPv6 text: cheap to hash, formatted only for output. */
type IpKey = number | string;

interface Responder {
  replies: number;
  gratuitous: number;
  firstSeen: number;
  lastSeen: number;
  lastGratuitous: number;
}

/** An open request: one asker's last question, and the MACs that answered it within REQUEST_WINDOW_MS. */
interface OpenRequest {
  t: number;
  first: number;
  second: number;
}

interface FindingState {
  type: FindingType;
  macs: number[];
  firstSeen: number;
  lastSeen: number;
  count: number;
  samples: number[];
  detail: string;
  active: boolean;
}

interface IpState {
  key: IpKey;
  responders: Map<number, Responder>;
  requests: number;
  firstRequest: number;
  lastRequest: number;
  lastAnswer: number;
  /** Time of the first request since the last answer; null when answered or never asked. */
  unansweredSince: number | null;
  open: Map<IpKey, OpenRequest>;
  current: number;
  previous: number;
  changedAt: number;
  findings: Map<FindingType, FindingState>;
  /** The last observation's fields, to make an identical repeat a no-op. */
  last: { kind: string; mac: number; peer: IpKey; t: number; src: number };
}

/** A Change is what one step changed, for the hub to push (STYLE 16). */
export type Change =
  | { readonly kind: "ip-added"; readonly ip: string }
  | { readonly kind: "responder-added"; readonly ip: string; readonly mac: string }
  | { readonly kind: "finding-raised"; readonly ip: string; readonly finding: FindingType }
  | { readonly kind: "finding-cleared"; readonly ip: string; readonly finding: FindingType };

/** ResponderReport is one MAC that answered or announced for an IP. */
export interface ResponderReport {
  readonly mac: string;
  readonly replies: number;
  readonly gratuitous: number;
  readonly firstSeen: number;
  readonly lastSeen: number;
}

/** IpReport is everything the analysis knows about one IP. */
export interface IpReport {
  readonly ip: string;
  readonly responders: readonly ResponderReport[];
  readonly requests: number;
  readonly findings: readonly Finding[];
}

export interface AnalyzerOptions {
  /** Expected owner MACs per IP (text): any other answering MAC raises `wrong-owner`. */
  readonly expectedOwners?: ReadonlyMap<string, readonly string[]>;
}

function ipText(k: IpKey): string {
  return typeof k === "number" ? formatIPv4Number(k) : k;
}

/**
 * An Analyzer turns classified frames into per-IP state and findings. Pure: time is the frames' own timestamps (or
 * what `tick` is given). Each step returns what it changed; an identical repeat of the last frame for an IP changes
 * nothing. The ARP path allocates only when something new appears (a new IP, responder, asker or finding).
 */
export class Analyzer {
  readonly #ips = new Map<IpKey, IpState>();
  readonly #owners = new Map<IpKey, Set<number>>();
  #now = 0;
  #nextSweep = 0;
  #pending: Change[] | null = null;

  constructor(opts: AnalyzerOptions = {}) {
    for (const [ip, macs] of opts.expectedOwners ?? []) {
      const key = /^\d+\.\d+\.\d+\.\d+$/.test(ip) ? ip.split(".").reduce((n, o) => n * 256 + Number(o), 0) : ip;
      this.#owners.set(key, new Set(macs.map((m) => parseInt(m.replaceAll(":", ""), 16))));
    }
  }

  /** observe folds one classified frame seen at `t` (ms). */
  observe(f: FrameFields, t: number): readonly Change[] {
    if (t > this.#now) this.#now = t;
    const key: IpKey = f.family === 4 ? f.ip4 : f.ip6;
    let s = this.#ips.get(key);
    if (s === undefined) {
      s = {
        key, responders: new Map(), requests: 0, firstRequest: 0, lastRequest: 0, lastAnswer: 0, unansweredSince: null, open: new Map(),
        current: NO_MAC, previous: NO_MAC, changedAt: 0, findings: new Map(), last: { kind: "", mac: NO_MAC, peer: "", t: -1, src: NO_MAC },
      };
      this.#ips.set(key, s);
      this.#emit({ kind: "ip-added", ip: ipText(key) });
    }
    const peer: IpKey = f.family === 4 ? f.peer4 : f.peer6;
    const last = s.last;
    if (last.t === t && last.kind === f.kind && last.mac === f.mac && last.peer === peer && last.src === f.src) return this.#take();
    last.t = t;
    last.kind = f.kind;
    last.mac = f.mac;
    last.peer = peer;
    last.src = f.src;
    const role = roleOf(f.kind);
    if (role === "ask") {
      if (f.kind === "request" || f.kind === "ns") this.#ask(s, peer, t);
    } else {
      this.#answer(s, f, peer, t, role === "announce");
    }
    if (f.family === 4 && f.src !== NO_MAC && f.src !== f.mac) {
      this.#raise(s, "ethernet-mismatch", f.mac, f.src, t);
    }
    if (t >= this.#nextSweep) this.#sweep(t);
    return this.#take();
  }

  /** tick advances time without a frame (the hub calls it once a second): no-responder and clearing happen here. */
  tick(now: number): readonly Change[] {
    if (now > this.#now) this.#now = now;
    this.#sweep(this.#now);
    return this.#take();
  }

  #emit(c: Change): void {
    (this.#pending ??= []).push(c);
  }

  /** #take hands out the changes of this step; steps that change nothing share one empty array (no allocation). */
  #take(): readonly Change[] {
    const out = this.#pending ?? NO_CHANGES;
    this.#pending = null;
    return out;
  }

  /** #sweep closes stale requests and clears quiet findings on every IP; observe runs it once per second of time. */
  #sweep(now: number): void {
    this.#nextSweep = now + SWEEP_MS;
    for (const s of this.#ips.values()) this.#expire(s, now);
  }

  #ask(s: IpState, peer: IpKey, t: number): void {
    s.requests++;
    if (s.firstRequest === 0) s.firstRequest = t;
    s.lastRequest = t;
    s.unansweredSince ??= t;
    this.#checkUnanswered(s, t, true);
    const o = s.open.get(peer);
    if (o === undefined) {
      s.open.set(peer, { t, first: NO_MAC, second: NO_MAC });
      return;
    }
    o.t = t;
    o.first = NO_MAC;
    o.second = NO_MAC;
  }

  /**
   * #checkUnanswered raises no-responder when requests have gone unanswered for NO_RESPONDER_MS. Each further
   * unanswered request is more evidence (it keeps the finding from clearing); the clock alone only raises it once.
   */
  #checkUnanswered(s: IpState, now: number, fromRequest: boolean): void {
    const since = s.unansweredSince;
    if (since === null || now - since < NO_RESPONDER_MS) return;
    const f = s.findings.get("no-responder");
    if (!fromRequest && f?.active === true && f.lastSeen >= since) return;
    this.#raise(s, "no-responder", NO_MAC, NO_MAC, now, since);
  }

  #answer(s: IpState, f: FrameFields, peer: IpKey, t: number, announce: boolean): void {
    const mac = f.mac;
    let r = s.responders.get(mac);
    if (r === undefined) {
      r = { replies: 0, gratuitous: 0, firstSeen: t, lastSeen: t, lastGratuitous: -Infinity };
      s.responders.set(mac, r);
      this.#emit({ kind: "responder-added", ip: ipText(s.key), mac: formatMacNumber(mac) });
    }
    if (t < r.firstSeen) r.firstSeen = t;
    if (t > r.lastSeen) r.lastSeen = t;
    s.lastAnswer = t;
    s.unansweredSince = null;
    if (announce) {
      r.gratuitous++;
      this.#splitBrain(s, mac, t);
      r.lastGratuitous = t;
    } else {
      r.replies++;
      const o = s.open.get(peer);
      if (o !== undefined && t - o.t <= REQUEST_WINDOW_MS && t >= o.t) {
        if (o.first === NO_MAC) o.first = mac;
        else if (mac !== o.first && mac !== o.second) {
          // A second (or third...) MAC answering the same question: the seed symptom. Each extra answer is evidence.
          if (o.second === NO_MAC) o.second = mac;
          this.#raise(s, "multi-responder", o.first, mac, t, peer);
        }
      }
    }
    this.#track(s, mac, t);
    const owners = this.#owners.get(s.key);
    if (owners !== undefined && !owners.has(mac)) {
      this.#raise(s, "wrong-owner", mac, NO_MAC, t);
    }
  }

  /** #track follows the IP's current MAC like arpwatch: a new MAC is `changed`, the previous one back is `flip-flop`. */
  #track(s: IpState, mac: number, t: number): void {
    if (s.current === mac) return;
    if (s.current !== NO_MAC) {
      const old = s.current;
      if (mac === s.previous && t - s.changedAt <= FLIP_FLOP_MS) {
        this.#raise(s, "flip-flop", old, mac, t);
      } else {
        this.#raise(s, "changed", old, mac, t);
      }
      s.previous = old;
      s.changedAt = t;
    }
    s.current = mac;
  }

  #splitBrain(s: IpState, mac: number, t: number): void {
    for (const [other, r] of s.responders) {
      if (other !== mac && t - r.lastGratuitous <= SPLIT_BRAIN_MS) {
        this.#raise(s, "split-brain", other, mac, t);
        return;
      }
    }
  }

  /**
   * #raise records evidence of a finding. `m1` and `m2` are the MACs involved (NO_MAC for none) and `extra` what the
   * detail line needs; the common case, more evidence for an active finding, allocates nothing.
   */
  #raise(s: IpState, type: FindingType, m1: number, m2: number, t: number, extra: number | string = 0): void {
    const f = s.findings.get(type);
    if (f === undefined) {
      const macs = [m1, m2].filter((m) => m !== NO_MAC);
      s.findings.set(type, { type, macs, firstSeen: t, lastSeen: t, count: 1, samples: [t], detail: this.#describe(type, m1, m2, extra, s.key), active: true });
      this.#emit({ kind: "finding-raised", ip: ipText(s.key), finding: type });
      return;
    }
    f.count++;
    if (t > f.lastSeen) f.lastSeen = t;
    if (m1 !== NO_MAC && !f.macs.includes(m1)) f.macs.push(m1);
    if (m2 !== NO_MAC && !f.macs.includes(m2)) f.macs.push(m2);
    if (f.samples.length < MAX_EVIDENCE_TIMES) f.samples.push(t);
    if (!f.active) {
      f.active = true;
      f.firstSeen = t;
      this.#emit({ kind: "finding-raised", ip: ipText(s.key), finding: type });
    }
  }

  /** #describe writes a finding's detail line, once, when it is first raised. */
  #describe(type: FindingType, m1: number, m2: number, extra: number | string, key: IpKey): string {
    const a = m1 === NO_MAC ? "" : formatMacNumber(m1);
    const b = m2 === NO_MAC ? "" : formatMacNumber(m2);
    switch (type) {
      case "multi-responder":
        return `one request from ${ipText(extra)} answered by ${a} and ${b}`;
      case "no-responder":
        return `asked since ${new Date(Number(extra)).toISOString()}, no answer for ${NO_RESPONDER_MS / 1000} s`;
      case "changed":
        return `changed from ${a} to ${b}`;
      case "flip-flop":
        return `back from ${a} to ${b}`;
      case "split-brain":
        return `${a} and ${b} both announced within ${SPLIT_BRAIN_MS / 1000} s`;
      case "ethernet-mismatch":
        return `Ethernet source ${b} sends ARP as ${a}`;
      case "wrong-owner":
        return `${a} answered, the expected owner is ${[...(this.#owners.get(key) ?? [])].map(formatMacNumber).join(" or ")}`;
      case "silent-drop":
      case "capture-lost":
      case "agent-down":
      case "strictarp-drift":
        // Judged by the hub from the cluster and its agents (live-findings.ts); frames alone cannot show them.
        return type;
    }
  }

  #expire(s: IpState, now: number): void {
    this.#checkUnanswered(s, now, false);
    for (const f of s.findings.values()) {
      if (f.active && now - f.lastSeen >= CLEAR_AFTER_MS) {
        f.active = false;
        this.#emit({ kind: "finding-cleared", ip: ipText(s.key), finding: f.type });
      }
    }
  }

  /** report renders every IP, IPv4 first, each sorted numerically. */
  report(): IpReport[] {
    const keys = [...this.#ips.keys()].sort((a, b) =>
      typeof a === "number" ? (typeof b === "number" ? a - b : -1) : typeof b === "number" ? 1 : a.localeCompare(b),
    );
    return keys.map((k) => {
      const s = this.#ips.get(k);
      if (s === undefined) throw new Error("unreachable");
      const ip = ipText(k);
      return {
        ip,
        requests: s.requests,
        responders: [...s.responders.entries()]
          .sort((a, b) => b[1].replies + b[1].gratuitous - (a[1].replies + a[1].gratuitous) || a[0] - b[0])
          .map(([mac, r]) => ({ mac: formatMacNumber(mac), replies: r.replies, gratuitous: r.gratuitous, firstSeen: r.firstSeen, lastSeen: r.lastSeen })),
        findings: [...s.findings.values()].map((f) => ({
          type: f.type,
          ip,
          macs: f.macs.map(formatMacNumber),
          firstSeen: f.firstSeen,
          lastSeen: f.lastSeen,
          count: f.count,
          samples: [...f.samples],
          detail: f.detail,
          active: f.active,
        })),
      };
    });
  }
}

/** A RaceSample is one capture point's view of one request: which MAC answered and after how long, on its own clock. */
export interface RaceSample {
  readonly capturePoint: string;
  readonly mac: string;
  readonly latencyMs: number;
}

/**
 * raceWinner says which MAC answered one request first. Each capture point measures request -> reply on its own
 * clock, so clock skew between nodes cancels out; the smallest latency wins (ties: the lower MAC, for determinism).
 */
export function raceWinner(samples: readonly RaceSample[]): string | null {
  let best: RaceSample | null = null;
  for (const s of samples) {
    if (best === null || s.latencyMs < best.latencyMs || (s.latencyMs === best.latencyMs && s.mac < best.mac)) best = s;
  }
  return best?.mac ?? null;
}
