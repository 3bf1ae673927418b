// The evidence file: the raw frames several agents hold about one IP, merged into one pcapng a network team opens in
// Wireshark. Pure: frames in, bytes out; asking the agents and storing what they sent is the hub's part.
import type { EvidenceFrame } from "../wire.js";
import { sortPackets, writePcapng, type PcapngInterface, type PcapngPacket } from "../capture/pcapng-writer.js";
import { IPV6_LEN, ipv4ToNumber, isIPv4, parseIPv4, parseIPv6 } from "../packet/addr.js";
import { decodeFrame, newFrameFields, type FrameFields } from "../packet/frame.js";
import { LINKTYPE_ETHERNET } from "../packet/link.js";

/** NodeEvidence is what one node's agent sent: its frames, and whether it had to leave some out. */
export interface NodeEvidence {
  readonly node: string;
  readonly frames: readonly EvidenceFrame[];
  /** The agent held more than it sent (its answer was cut at a byte bound). */
  readonly truncated: boolean;
  /** The oldest frame the agent still held when asked (null: none); frames before it may be gone from its ring. */
  readonly heldFromMs: number | null;
}

/** A MissingNode is a node whose frames are not in the file, and why ("agent down", "no answer within 5 s"). */
export interface MissingNode {
  readonly node: string;
  readonly why: string;
}

/** What the file is about, written into its Section Header comment for whoever opens it later. */
export interface EvidenceSubject {
  /** One line: "multi-responder for 198.51.100.7 (incident 12)", or "198.51.100.7: frames asked for". */
  readonly title: string;
  /** Further lines: the finding, the nodes answering, the expected owner. */
  readonly lines: readonly string[];
  readonly fromMs: number;
  readonly toMs: number;
}

export interface EvidenceInput {
  readonly subject: EvidenceSubject;
  readonly nodes: readonly NodeEvidence[];
  readonly missing: readonly MissingNode[];
  /** shb_userappl, e.g. "whohas-hub 0.1.0". */
  readonly application: string;
}

/** frameKey identifies one captured frame: its capture time, interface and bytes. */
export function frameKey(f: EvidenceFrame): string {
  return `${f.tNs}|${f.iface}|${f.vlan ?? ""}|${f.data}`;
}

/**
 * mergeFrames returns the frames of `a` and `b` once each (asking twice, or paging from the last frame's time, gives
 * some frames again), in time order.
 */
export function mergeFrames(a: readonly EvidenceFrame[], b: readonly EvidenceFrame[]): EvidenceFrame[] {
  const seen = new Set<string>();
  const out: EvidenceFrame[] = [];
  for (const f of [...a, ...b]) {
    const k = frameKey(f);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(f);
  }
  return out.sort((x, y) => {
    const tx = BigInt(x.tNs);
    const ty = BigInt(y.tNs);
    return tx < ty ? -1 : tx > ty ? 1 : 0;
  });
}

/** capturedBytes is the sum of the frames' captured lengths (what they weigh before any file framing). */
export function capturedBytes(frames: readonly EvidenceFrame[]): number {
  let n = 0;
  for (const f of frames) n += base64Length(f.data);
  return n;
}

function base64Length(s: string): number {
  const pad = s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0;
  return (s.length / 4) * 3 - pad;
}

/** iso is a time as RFC 3339; a time no Date holds (an agent's nonsense) says so instead of throwing. */
const iso = (ms: number) => (Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : `(no valid time: ${ms})`);

/** MAX_LISTED: nodes named per line of the section comment; the rest are counted (a comment holds 64 KiB). */
const MAX_LISTED = 50;
const listed = (items: readonly string[]) =>
  items.length <= MAX_LISTED ? items : [...items.slice(0, MAX_LISTED), `and ${items.length - MAX_LISTED} more`];

/**
 * sectionComment is the file's first words: what it is about, the window, which nodes' frames it holds, which are
 * missing and why, and where a node's agent held less than the window asked for.
 */
export function sectionComment(input: EvidenceInput): string {
  const s = input.subject;
  const lines = [`whohas evidence: ${s.title}`, ...s.lines, `window: ${iso(s.fromMs)} to ${iso(s.toMs)}`];
  const held = input.nodes.map((n) => `${n.node} (${n.frames.length} frame${n.frames.length === 1 ? "" : "s"})`);
  lines.push(`frames from: ${held.length === 0 ? "no node" : listed(held).join(", ")}`);
  for (const m of listed(input.missing.map((m) => `${m.node}: ${m.why}`))) lines.push(`missing: ${m}`);
  const cut = input.nodes.filter((n) => n.truncated).map((n) => n.node);
  if (cut.length > 0) lines.push(`cut: ${listed(cut).join(", ")} held more frames than the file's bound; it has the earliest`);
  for (const n of listed(
    input.nodes
      .filter((n) => n.heldFromMs !== null && n.heldFromMs > s.fromMs)
      .map((n) => `${n.node}'s agent held frames only from ${iso(n.heldFromMs ?? 0)}`),
  ))
    lines.push(`partial: ${n} (older ones had left its ring)`);
  return lines.join("\n");
}

/**
 * evidenceFile writes the merged pcapng: one Interface Description Block per node and interface ("node-2/eth0"), the
 * frames of every node in time order as Enhanced Packet Blocks with nanosecond timestamps and a comment naming the
 * capturing node (and the VLAN the frame was captured in), the subject in the Section Header's comment.
 */
export function evidenceFile(input: EvidenceInput): Uint8Array {
  const interfaces: PcapngInterface[] = [];
  const index = new Map<string, number>();
  const packets: PcapngPacket[] = [];
  for (const n of [...input.nodes].sort((a, b) => a.node.localeCompare(b.node))) {
    for (const f of n.frames) {
      const name = `${n.node}/${f.iface}`;
      let i = index.get(name);
      if (i === undefined) {
        i = interfaces.length;
        index.set(name, i);
        interfaces.push({ name, description: `${f.iface} on node ${n.node}`, comment: `captured by the whohas agent on ${n.node}` });
      }
      packets.push({
        iface: i,
        tNs: BigInt(f.tNs),
        data: Buffer.from(f.data, "base64"),
        comment: f.vlan === null ? n.node : `${n.node}, VLAN ${f.vlan}`,
      });
    }
  }
  return writePcapng({ comment: sectionComment(input), application: input.application, interfaces, packets: sortPackets(packets) });
}

/** Offsets from the IPv6 header's start: its source address, and an NDP message's target address. */
const IPV6_SRC = 8;
const NDP_TARGET = 40 + 8;

/**
 * aboutIp makes the test of whether a decoded frame is about `ip`, as evidence selects frames: ARP with the IP as
 * sender or target, NDP with it as target or IPv6 source. It compares numbers and bytes, not text: `bytes` are those
 * `fields` were decoded from (fields.payload is an offset into them). An agent's ring and the hub's check of an
 * agent's answer use the same test.
 */
export function aboutIp(ip: string): (fields: FrameFields, bytes: Uint8Array) => boolean {
  if (isIPv4(ip)) {
    const want = ipv4ToNumber(parseIPv4(ip), 0);
    return (f) => f.family === 4 && (f.ip4 === want || f.peer4 === want);
  }
  const want = parseIPv6(ip);
  if (want === null) return () => false;
  const equal = (bytes: Uint8Array, at: number) => {
    if (at + IPV6_LEN > bytes.length) return false;
    for (let i = 0; i < IPV6_LEN; i++) if (bytes[at + i] !== want[i]) return false;
    return true;
  };
  return (f, bytes) => f.family === 6 && (equal(bytes, f.payload + NDP_TARGET) || equal(bytes, f.payload + IPV6_SRC));
}

/**
 * evidenceFilter makes the test of whether an evidence frame is one an agent may send for `ip` in `vlan` (null:
 * untagged or priority-tagged), prepared once for all the frames of an answer. The hub keeps only such frames, so an
 * agent cannot pass off other traffic as an incident's evidence.
 */
export function evidenceFilter(ip: string, vlan: number | null): (data: Uint8Array) => boolean {
  const f = newFrameFields();
  const about = aboutIp(ip);
  return (data) => decodeFrame(data, LINKTYPE_ETHERNET, f) === null && (vlan === null ? f.vlan <= 0 : f.vlan === vlan) && about(f, data);
}
