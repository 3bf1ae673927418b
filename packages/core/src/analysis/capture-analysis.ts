import { CaptureReader } from "../capture/pcap.js";
import { decodeFrame, newFrameFields } from "../packet/frame.js";
import type { DecodeFailure } from "../packet/decode.js";
import { Analyzer, type AnalyzerOptions, type IpReport } from "./analyzer.js";
import type { FindingType } from "./findings.js";

/** Counts of what a capture held. */
export interface FrameCounts {
  frames: number;
  arpFrames: number;
  ndpFrames: number;
  dropped: Record<DecodeFailure["reason"], number>;
}

/** A CaptureSummary is the whole result of `whohas analyze`. */
export interface CaptureSummary {
  readonly counts: FrameCounts;
  readonly ips: readonly IpReport[];
  /** Files that ended with an error, after what came before the error was analysed. */
  readonly errors: readonly { file: string; message: string }[];
}

/**
 * A CaptureAnalysis runs capture files through the reader, the frame decoder and the analyzer. Feed each file's bytes
 * with push() and close it with endFile(); files are analysed as one stream of frames, in the order given.
 */
export class CaptureAnalysis {
  readonly counts: FrameCounts = { frames: 0, arpFrames: 0, ndpFrames: 0, dropped: { truncated: 0, malformed: 0, unsupported: 0, ignored: 0 } };
  readonly errors: { file: string; message: string }[] = [];
  readonly #analyzer: Analyzer;
  readonly #fields = newFrameFields();
  #reader: CaptureReader | null = null;
  #file = "";
  #lastTs = 0;

  constructor(opts: AnalyzerOptions = {}) {
    this.#analyzer = new Analyzer(opts);
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
      this.#analyzer.observe(this.#fields, tsMs);
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

  /** summary closes open questions at the last frame's time (no-responder) and reports. */
  summary(): CaptureSummary {
    this.#analyzer.tick(this.#lastTs);
    return { counts: this.counts, ips: this.#analyzer.report(), errors: this.errors };
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

/** toJson renders the documented `--json` shape (times in RFC 3339). */
export function toJson(s: CaptureSummary): unknown {
  return {
    frames: s.counts.frames,
    arpFrames: s.counts.arpFrames,
    ndpFrames: s.counts.ndpFrames,
    dropped: s.counts.dropped,
    ips: s.ips.map((ip) => ({
      ip: ip.ip,
      responders: ip.responders.map((r) => ({ mac: r.mac, replies: r.replies, gratuitous: r.gratuitous, firstSeen: rfc3339(r.firstSeen), lastSeen: rfc3339(r.lastSeen) })),
      requests: ip.requests,
      findings: ip.findings.map((f) => ({ type: f.type, macs: f.macs, firstSeen: rfc3339(f.firstSeen), lastSeen: rfc3339(f.lastSeen), count: f.count, samples: f.samples.map(rfc3339), detail: f.detail })),
    })),
    errors: s.errors,
  };
}

/** toTable renders the human-readable report: one block per IP, worst first (errors go to stderr, not here). */
export function toTable(s: CaptureSummary): string {
  const lines: string[] = [];
  const c = s.counts;
  const dropped = Object.entries(c.dropped).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(", ");
  lines.push(`${c.frames} frames: ${c.arpFrames} ARP, ${c.ndpFrames} NDP${dropped === "" ? "" : `, dropped ${dropped}`}`);
  const severe = s.ips.filter((ip) => ip.findings.some((f) => SEVERE_FINDINGS.includes(f.type)));
  const ordered = [...severe, ...s.ips.filter((ip) => !severe.includes(ip))];
  if (ordered.length === 0) lines.push("no IP was asked for or announced in this capture");
  for (const ip of ordered) {
    const flag = severe.includes(ip) ? "  <-- SEVERAL RESPONDERS" : "";
    lines.push("", `${ip.ip}  requests ${ip.requests}, responders ${ip.responders.length}${flag}`);
    for (const r of ip.responders) {
      lines.push(`  ${r.mac}  replies ${String(r.replies).padStart(7)}  gratuitous ${String(r.gratuitous).padStart(5)}  ${rfc3339(r.firstSeen)} .. ${rfc3339(r.lastSeen)}`);
    }
    for (const f of ip.findings) lines.push(`  ! ${f.type} (${f.count}x, first ${rfc3339(f.firstSeen)}): ${f.detail}`);
  }
  return lines.join("\n") + "\n";
}
