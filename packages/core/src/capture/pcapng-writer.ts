// A pcapng writer: one section, one Interface Description Block per capture point, and Enhanced Packet Blocks with
// nanosecond timestamps and a comment each, as draft-ietf-opsawg-pcapng describes them. Wireshark, tshark and
// capinfos read what it writes; so does CaptureReader. Pure: it returns the bytes, the caller stores or sends them.
import { LINKTYPE_ETHERNET } from "../packet/link.js";
import { MAX_RECORD_LEN, PCAPNG_SHB } from "./pcap.js";

const BYTE_ORDER_MAGIC = 0x1a2b3c4d;
const BLOCK_IDB = 1;
const BLOCK_EPB = 6;
const OPT_ENDOFOPT = 0;
const OPT_COMMENT = 1;
const SHB_USERAPPL = 4;
const IF_NAME = 2;
const IF_DESCRIPTION = 3;
const IF_TSRESOL = 9;
/** TSRESOL_NANOS: if_tsresol 9 says timestamps count 10^-9 s, nanoseconds since the epoch. */
const TSRESOL_NANOS = 9;
/** Fixed parts of each block, from its Block Type to its trailing Block Total Length. */
const SHB_FIXED = 28;
const IDB_FIXED = 20;
const EPB_FIXED = 32;
/** An option's value is at most 65,535 bytes: its length is a 16-bit field. */
const MAX_OPTION_LEN = 0xffff;
const MAX_TIMESTAMP_NS = (1n << 64n) - 1n;

/** A PcapngError says why a file could not be written, prefixed "pcapng:". */
export class PcapngError extends Error {
  constructor(message: string) {
    super(`pcapng: ${message}`);
    this.name = "PcapngError";
  }
}

/** A PcapngInterface is one capture point: written as an Interface Description Block, referred to by its index. */
export interface PcapngInterface {
  /** if_name, e.g. "node-2/eth0": Wireshark shows it as frame.interface_name. */
  readonly name: string;
  readonly description?: string;
  readonly comment?: string;
  /** LINKTYPE_ETHERNET unless said otherwise. */
  readonly linkType?: number;
}

/** A PcapngPacket is one captured frame on interface `iface` (an index into the file's interfaces). */
export interface PcapngPacket {
  readonly iface: number;
  /** Capture time in nanoseconds since the epoch. */
  readonly tNs: bigint;
  readonly data: Uint8Array;
  /** The frame's length on the wire when `data` is a truncated capture of it (default: data.length). */
  readonly originalLength?: number;
  readonly comment?: string;
}

/** A PcapngFile is what writePcapng writes: one section, its interfaces, and packets in the order given. */
export interface PcapngFile {
  /** The section's opt_comment: what the file is, for whoever opens it later. */
  readonly comment?: string;
  /** shb_userappl: the application that wrote the file. */
  readonly application?: string;
  readonly interfaces: readonly PcapngInterface[];
  readonly packets: readonly PcapngPacket[];
}

const utf8 = new TextEncoder();

/** An Option is one encoded TLV; `value` is written padded to 32 bits. */
interface Option {
  readonly code: number;
  readonly value: Uint8Array;
}

function text(code: number, s: string | undefined, what: string): Option[] {
  if (s === undefined) return [];
  // TextEncoder writes valid UTF-8 whatever the string holds (a lone surrogate becomes U+FFFD), as the draft requires.
  const value = utf8.encode(s);
  if (value.length > MAX_OPTION_LEN) throw new PcapngError(`${what} is ${value.length} bytes of UTF-8, more than an option holds (65535)`);
  return [{ code, value }];
}

const pad4 = (n: number) => (n + 3) & ~3;

/** optionsLen is the bytes of `opts` with their opt_endofopt; none at all when there are no options. */
function optionsLen(opts: readonly Option[]): number {
  return opts.length === 0 ? 0 : opts.reduce((n, o) => n + 4 + pad4(o.value.length), 4);
}

/**
 * writeOptions writes `opts` and the closing opt_endofopt at `at` and returns where they end:
 *
 *     | code 2 | length 2 | value, zero-padded to 32 bits |  ...  | 0 (opt_endofopt) 2 | 0 2 |
 *
 * "Code that writes pcapng files MUST put an opt_endofopt option at the end of an option list" (section 3.5).
 */
function writeOptions(out: Uint8Array, v: DataView, at: number, opts: readonly Option[]): number {
  if (opts.length === 0) return at;
  for (const o of opts) {
    v.setUint16(at, o.code, true);
    v.setUint16(at + 2, o.value.length, true);
    out.set(o.value, at + 4);
    at += 4 + pad4(o.value.length);
  }
  v.setUint16(at, OPT_ENDOFOPT, true);
  v.setUint16(at + 2, 0, true);
  return at + 4;
}

/** A Block is laid out before anything is written, so that the file is one allocation. */
interface Block {
  readonly len: number;
  readonly write: (out: Uint8Array, v: DataView, at: number) => void;
}

/** framed writes a block's Block Type and both copies of its Block Total Length around its body. */
function framed(type: number, len: number, body: (out: Uint8Array, v: DataView, at: number) => number): Block {
  return {
    len,
    write: (out, v, at) => {
      v.setUint32(at, type, true);
      v.setUint32(at + 4, len, true);
      const end = body(out, v, at + 8);
      if (end !== at + len - 4) throw new Error(`pcapng: block of type ${type} laid out as ${len} bytes, written as ${end + 4 - at}`);
      v.setUint32(at + len - 4, len, true);
    },
  };
}

/**
 * shb lays out the Section Header Block:
 *
 *     | 0x0A0D0D0A 4 | total length 4 | byte-order magic 0x1A2B3C4D 4 | major 1 2 | minor 0 2 |
 *     | section length 8 (-1: not given) | options | total length 4 |
 *
 * "Writers of pcapng files MUST NOT write SHBs with a Major Version other than 1 or a Minor Version other than 0"
 * (section 4.1).
 */
function shb(file: PcapngFile): Block {
  const opts = [...text(OPT_COMMENT, file.comment, "the section comment"), ...text(SHB_USERAPPL, file.application, "the application")];
  return framed(PCAPNG_SHB, SHB_FIXED + optionsLen(opts), (out, v, at) => {
    v.setUint32(at, BYTE_ORDER_MAGIC, true);
    v.setUint16(at + 4, 1, true);
    v.setUint16(at + 6, 0, true);
    v.setBigInt64(at + 8, -1n, true);
    return writeOptions(out, v, at + 16, opts);
  });
}

/**
 * idb lays out an Interface Description Block:
 *
 *     | 1 4 | total length 4 | link type 2 | reserved 0 2 | snaplen 4 | options | total length 4 |
 *
 * with if_name, if_description, opt_comment and if_tsresol = 9 (nanoseconds).
 */
function idb(i: PcapngInterface, n: number): Block {
  const opts = [
    ...text(IF_NAME, i.name, `interface ${n}'s name`),
    ...text(IF_DESCRIPTION, i.description, `interface ${n}'s description`),
    ...text(OPT_COMMENT, i.comment, `interface ${n}'s comment`),
    { code: IF_TSRESOL, value: Uint8Array.of(TSRESOL_NANOS) },
  ];
  const linkType = i.linkType ?? LINKTYPE_ETHERNET;
  if (!Number.isInteger(linkType) || linkType < 0 || linkType > 0xffff) throw new PcapngError(`interface ${n}: link type ${linkType}`);
  return framed(BLOCK_IDB, IDB_FIXED + optionsLen(opts), (out, v, at) => {
    v.setUint16(at, linkType, true);
    v.setUint16(at + 2, 0, true);
    v.setUint32(at + 4, MAX_RECORD_LEN, true);
    return writeOptions(out, v, at + 8, opts);
  });
}

/**
 * epb lays out an Enhanced Packet Block:
 *
 *     | 6 4 | total length 4 | interface id 4 | timestamp upper 32 bits 4 | timestamp lower 32 bits 4 |
 *     | captured length 4 | original length 4 | packet data, zero-padded to 32 bits | options | total length 4 |
 *
 * The timestamp counts units of the interface's if_tsresol (nanoseconds here) since 1970-01-01 00:00:00 UTC.
 */
function epb(p: PcapngPacket, n: number, interfaces: number): Block {
  if (!Number.isInteger(p.iface) || p.iface < 0 || p.iface >= interfaces)
    throw new PcapngError(`packet ${n} names interface ${p.iface}, and the file has ${interfaces}`);
  if (p.tNs < 0n || p.tNs > MAX_TIMESTAMP_NS) throw new PcapngError(`packet ${n}: timestamp ${p.tNs} ns does not fit 64 bits`);
  const captured = p.data.length;
  if (captured > MAX_RECORD_LEN) throw new PcapngError(`packet ${n} is ${captured} bytes, more than the snaplen ${MAX_RECORD_LEN}`);
  const original = p.originalLength ?? captured;
  if (!Number.isInteger(original) || original < captured || original > 0xffffffff)
    throw new PcapngError(`packet ${n}: original length ${original} is less than its ${captured} captured bytes`);
  const opts = text(OPT_COMMENT, p.comment, `packet ${n}'s comment`);
  return framed(BLOCK_EPB, EPB_FIXED + pad4(captured) + optionsLen(opts), (out, v, at) => {
    v.setUint32(at, p.iface, true);
    v.setUint32(at + 4, Number(p.tNs >> 32n), true);
    v.setUint32(at + 8, Number(p.tNs & 0xffffffffn), true);
    v.setUint32(at + 12, captured, true);
    v.setUint32(at + 16, original, true);
    out.set(p.data, at + 20);
    return writeOptions(out, v, at + 20 + pad4(captured), opts);
  });
}

/**
 * writePcapng writes one little-endian pcapng file: a Section Header Block, an Interface Description Block per
 * interface (in order: a packet's `iface` is an index into them) and an Enhanced Packet Block per packet, in the order
 * given (sortPackets puts them in time order). Throws PcapngError for a packet naming no interface, a timestamp
 * outside 64 bits, or a string too long for an option.
 */
export function writePcapng(file: PcapngFile): Uint8Array {
  const blocks = [shb(file), ...file.interfaces.map((i, n) => idb(i, n)), ...file.packets.map((p, n) => epb(p, n, file.interfaces.length))];
  // Zero-filled: the draft wants padding octets zero (section 3.6.2).
  const out = new Uint8Array(blocks.reduce((n, b) => n + b.len, 0));
  const v = new DataView(out.buffer);
  let at = 0;
  for (const b of blocks) {
    b.write(out, v, at);
    at += b.len;
  }
  return out;
}

/**
 * sortPackets returns the packets in time order, those of equal time in the order given (a stable sort), as frames
 * merged from several nodes should appear. The input is left as it is.
 */
export function sortPackets<P extends { readonly tNs: bigint }>(packets: readonly P[]): P[] {
  return [...packets].sort((a, b) => (a.tNs < b.tNs ? -1 : a.tNs > b.tNs ? 1 : 0));
}
