import { splitIpKey } from "../net/ip-key.js";
import { compareIP } from "../packet/addr.js";
import { CaptureReader } from "../capture/pcap.js";
import { decodeFrame, newFrameFields } from "../packet/frame.js";
import type { DecodeFailure } from "../packet/decode.js";
import { CapturePoint } from "./capture-point.js";
import type { FindingType, Handover, OpenFinding } from "./findings.js";
import type { AskerView } from "./askers.js";
import type { Lens } from "./ip-judgement.js";
import { Judge } from "./judge.js";
import { NO_CONTEXT, type IpContext } from "./rules.js";

/** Counts of what a capture held. */
export interface FrameCounts {
  frames: number;
  arpFrames: number;
  ndpFrames: number;
  dropped: Record<DecodeFailure["reason"], number>;
}

/** ResponderReport is one MAC that answered or announced for an IP. */
export interface ResponderReport {
  readonly mac: string;
  readonly replies: number;
  readonly gratuitous: number;
  readonly firstSeen: number;
  readonly lastSeen: number;
}

/** A FindingReport is one finding of the capture: open at its end (`active`) or cleared before it. */
export interface FindingReport extends OpenFinding {
  readonly active: boolean;
}

/** IpReport is everything the analysis knows about one IP. */
export interface IpReport {
  /** The address (IPv6 compressed as RFC 5952 writes it). */
  readonly ip: string;
  /** The 802.1Q VLAN its frames were tagged with; null when untagged. The same address on two VLANs is two reports. */
  readonly vlan: number | null;
  readonly family: 4 | 6;
  readonly responders: readonly ResponderReport[];
  readonly requests: number;
  readonly findings: readonly FindingReport[];
  /** Handovers, newest first. */
  readonly handovers: readonly Handover[];
  /** Who asked, and how often the first answer to it changed MAC (offline no MAC has a node), the most changes first. */
  readonly askers: readonly AskerView[];
}

/** A CaptureSummary is the whole result of `whohas analyze`. */
export interface CaptureSummary {
  readonly counts: FrameCounts;
  readonly ips: readonly IpReport[];
  /** Files that ended with an error, after what came before the error was analysed. */
  readonly errors: readonly { file: string; message: string }[];
}

export interface AnalysisOptions {
  /** Expected owner MACs per IP: any other answering MAC is `wrong-owner` (and announcing, `stale-announcer`). */
  readonly expectedOwners?: ReadonlyMap<string, readonly string[]>;
}

/** CAPTURE: the one capture point of a file (it sees every reply a client gets, not only one node's). */
const CAPTURE = "capture";
/** DRAIN_MS / JUDGE_MS: in capture time, how often the file's capture point is drained and its IPs judged. */
const DRAIN_MS = 100;
const JUDGE_MS = 1000;
/** MAX_HELD bounds what the capture point holds between drains (a capture with a million IPs in 100 ms still fits). */
const MAX_HELD = 1_000_000;

/**
 * A CaptureAnalysis runs capture files through the reader, the frame decoder, the same CapturePoint an agent folds
 * its frames with, and the same Judge the hub runs: `whohas analyze` gives the verdict the hub would give for the
 * same frames. Feed each file's bytes with push() and close it with endFile(); files are one stream of frames, in
 * the order given, judged in capture time.
 */
export class CaptureAnalysis {
  readonly counts: FrameCounts = {
    frames: 0,
    arpFrames: 0,
    ndpFrames: 0,
    dropped: { truncated: 0, malformed: 0, unsupported: 0, ignored: 0 },
  };
  readonly errors: { file: string; message: string }[] = [];
  readonly #point = new CapturePoint(MAX_HELD);
  readonly #judge = new Judge();
  readonly #fields = newFrameFields();
  readonly #owners: ReadonlyMap<string, readonly string[]>;
  /** A file sees every reply its host gets: whether a MAC answered is always known. Nodes are not known offline. */
  readonly #lens: Lens = { nodeOf: () => null, knowsNodes: false, watches: () => true };
  readonly #findings = new Map<string, Map<FindingType, FindingReport>>();
  #reader: CaptureReader | null = null;
  #file = "";
  #lastTs = 0;
  #nextDrain = 0;
  #nextJudge = 0;

  constructor(opts: AnalysisOptions = {}) {
    this.#owners = opts.expectedOwners ?? new Map();
  }

  /** startFile begins a new file (each has its own header). */
  startFile(name: string): void {
    this.#file = name;
    this.#reader = new CaptureReader((buf, start, end, linkType, tsMs) => {
      const c = this.counts;
      c.frames++;
      const err = decodeFrame(buf, linkType, this.#fields, start, end);
      if (err !== null) {
        c.dropped[err.reason]++;
        return;
      }
      if (this.#fields.family === 4) c.arpFrames++;
      else c.ndpFrames++;
      if (tsMs > this.#lastTs) this.#lastTs = tsMs;
      if (tsMs >= this.#nextDrain) this.#step(tsMs, false);
      this.#point.addFrame(this.#fields, CAPTURE, tsMs);
    });
  }

  /** push feeds bytes of the current file; false when the file is corrupt (the error is recorded, stop feeding it). */
  push(chunk: Uint8Array): boolean {
    return this.#guard(() => this.#reader?.push(chunk));
  }

  /** endFile closes the current file; false when it ended in the middle of a record (recorded). */
  endFile(): boolean {
    const ok = this.#guard(() => this.#reader?.end());
    this.#reader = null;
    return ok;
  }

  /** fail records an error about the current file that did not come from its contents (it could not be opened). */
  fail(message: string): void {
    this.errors.push({ file: this.#file, message });
    this.#reader = null;
  }

  #guard(f: () => void): boolean {
    try {
      f();
      return true;
    } catch (e) {
      this.errors.push({ file: this.#file, message: (e as Error).message });
      this.#reader = null;
      return false;
    }
  }

  #context(ip: string): IpContext {
    // An owner named for ADDRESS@VLAN holds in that VLAN; one named for the address alone, wherever it is seen.
    const macs = this.#owners.get(ip) ?? this.#owners.get(splitIpKey(ip).ip);
    return macs === undefined ? NO_CONTEXT : { ...NO_CONTEXT, owner: { node: null, macs } };
  }

  /** #step drains the capture point into the judge at capture time `now`, and judges what is due. */
  #step(now: number, end: boolean): void {
    this.#judge.ingestPoint(CAPTURE, this.#point, now, this.#lens, end);
    this.#nextDrain = now + DRAIN_MS;
    if (!end && now < this.#nextJudge) return;
    this.#nextJudge = now + JUDGE_MS;
    // ingest() woke every IP it touched: the awake ones are all that can have changed.
    for (const ip of this.#judge.awake()) this.#record(ip, this.#judge.judge(ip, now, this.#context(ip), this.#lens, end).transitions);
  }

  #record(ip: string, transitions: readonly { kind: string; finding: OpenFinding }[]): void {
    for (const t of transitions) {
      let m = this.#findings.get(ip);
      if (m === undefined) this.#findings.set(ip, (m = new Map<FindingType, FindingReport>()));
      m.set(t.finding.type, { ...t.finding, active: t.kind !== "cleared" });
    }
  }

  /** summary takes the last frames' requests as final (the capture ended) and reports every IP. */
  summary(): CaptureSummary {
    this.#step(this.#lastTs, true);
    const ips = [...this.#judge.counts.ips()].sort(compareIP).flatMap((ip) => {
      const v = this.#judge.view(ip, this.#lastTs, this.#lens);
      if (v === null) return [];
      const responders = [...v.responders]
        .sort((a, b) => b.replies + b.gratuitous - (a.replies + a.gratuitous) || a.mac.localeCompare(b.mac))
        .map((r) => ({ mac: r.mac, replies: r.replies, gratuitous: r.gratuitous, firstSeen: r.firstSeen, lastSeen: r.lastSeen }));
      const findings = [...(this.#findings.get(ip)?.values() ?? [])];
      return [{ ...splitIpKey(ip), responders, requests: v.requests, findings, handovers: v.handovers, askers: v.askers }];
    });
    return { counts: this.counts, ips, errors: this.errors };
  }
}

/** SEVERE_FINDINGS make `whohas analyze` exit 1: the incidents it exists to find. */
export const SEVERE_FINDINGS: readonly FindingType[] = ["multi-responder", "split-brain"];

/**
 * analyzeExitCode: 1 when any IP has a severe finding (the evidence stands even if a file was damaged after it),
 * else 2 when any input was unusable, else 0.
 */
export function analyzeExitCode(s: CaptureSummary): 0 | 1 | 2 {
  if (s.ips.some((ip) => ip.findings.some((f) => SEVERE_FINDINGS.includes(f.type)))) return 1;
  return s.errors.length > 0 ? 2 : 0;
}

const rfc3339 = (ms: number): string => new Date(ms).toISOString();

/** handoverJson is a handover as `analyze --json` and the hub's read API show it. */
export function handoverJson(h: Handover): unknown {
  return { from: h.from, to: h.to, at: h.at, gapMs: h.gapMs, unanswered: h.unanswered, announced: h.announced };
}

/**
 * askerJson is an asker as `analyze --json` and the hub's read API show it (times in epoch ms, as handovers'; the
 * rate per hour is over the last hour, or since the asker was first seen when shorter).
 */
export function askerJson(a: AskerView): unknown {
  return {
    mac: a.mac,
    ip: a.ip,
    requests: a.requests,
    firstAnswerChanges: a.firstAnswerChanges,
    changesPerHour: a.changesPerHour,
    lastChange: a.lastChange,
    firstSeen: a.firstSeen,
  };
}

/** toJson renders the documented `--json` shape (times in RFC 3339; handovers' `at` in epoch ms, as the read API). */
export function toJson(s: CaptureSummary): unknown {
  return {
    frames: s.counts.frames,
    arpFrames: s.counts.arpFrames,
    ndpFrames: s.counts.ndpFrames,
    dropped: s.counts.dropped,
    ips: s.ips.map((ip) => ({
      ip: ip.ip,
      vlan: ip.vlan,
      family: ip.family,
      responders: ip.responders.map((r) => ({
        mac: r.mac,
        replies: r.replies,
        gratuitous: r.gratuitous,
        firstSeen: rfc3339(r.firstSeen),
        lastSeen: rfc3339(r.lastSeen),
      })),
      requests: ip.requests,
      findings: ip.findings.map((f) => ({
        type: f.type,
        macs: f.macs,
        firstSeen: rfc3339(f.firstSeen),
        lastSeen: rfc3339(f.lastSeen),
        count: f.count,
        samples: f.samples.map(rfc3339),
        detail: f.detail,
        active: f.active,
      })),
      handovers: ip.handovers.map(handoverJson),
      askers: ip.askers.map(askerJson),
    })),
    errors: s.errors,
  };
}

/** toTable renders the human-readable report: one block per IP, worst first (errors go to stderr, not here). */
export function toTable(s: CaptureSummary): string {
  const lines: string[] = [];
  const c = s.counts;
  const dropped = Object.entries(c.dropped)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${n} ${k}`)
    .join(", ");
  lines.push(`${c.frames} frames: ${c.arpFrames} ARP, ${c.ndpFrames} NDP${dropped === "" ? "" : `, dropped ${dropped}`}`);
  const severe = s.ips.filter((ip) => ip.findings.some((f) => SEVERE_FINDINGS.includes(f.type)));
  const ordered = [...severe, ...s.ips.filter((ip) => !severe.includes(ip))];
  if (ordered.length === 0) lines.push("no IP was asked for or announced in this capture");
  for (const ip of ordered) {
    const flag = severe.includes(ip) ? "  <-- SEVERAL RESPONDERS" : "";
    lines.push(
      "",
      `${ip.ip}${ip.vlan === null ? "" : ` (VLAN ${ip.vlan})`}  requests ${ip.requests}, responders ${ip.responders.length}${flag}`,
    );
    for (const r of ip.responders) {
      lines.push(
        `  ${r.mac}  replies ${String(r.replies).padStart(7)}  gratuitous ${String(r.gratuitous).padStart(5)}  ${rfc3339(r.firstSeen)} .. ${rfc3339(r.lastSeen)}`,
      );
    }
    for (const h of [...ip.handovers].reverse()) {
      lines.push(
        `  > handover ${rfc3339(h.at)}: ${h.from.mac} -> ${h.to.mac}, gap ${Math.round(h.gapMs)} ms, ${h.unanswered} unanswered${h.announced === false ? ", NOT announced" : ""}`,
      );
    }
    for (const a of ip.askers) {
      if (a.firstAnswerChanges === 0) continue;
      lines.push(
        `  ~ asker ${a.ip}${a.mac === null ? "" : ` (${a.mac})`}: first answer changed ${a.firstAnswerChanges}x in ${a.requests} requests, last ${rfc3339(a.lastChange ?? 0)}`,
      );
    }
    for (const f of ip.findings)
      lines.push(`  ! ${f.type} (${f.count}x, first ${rfc3339(f.firstSeen)}${f.active ? "" : ", cleared"}): ${f.detail}`);
  }
  return lines.join("\n") + "\n";
}
