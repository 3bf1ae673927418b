// Capture files: a streaming reader for pcap and pcapng, and a pcap writer. Pure: the caller feeds bytes in chunks
// of any size (a file, stdin) and gets packets back; nothing here touches the file system.

/** PCAP_MAGIC_MICROS / PCAP_MAGIC_NANOS open a classic pcap file (written in the writer's byte order). */
export const PCAP_MAGIC_MICROS = 0xa1b2c3d4;
export const PCAP_MAGIC_NANOS = 0xa1b23c4d;
export const PCAP_HEADER_LEN = 24;
export const PCAP_RECORD_HEADER_LEN = 16;
/** PCAPNG_SHB is the Section Header Block type, also the first four bytes of every pcapng file. */
export const PCAPNG_SHB = 0x0a0d0d0a;
const PCAPNG_BYTE_ORDER_MAGIC = 0x1a2b3c4d;
const PCAPNG_IDB = 1;
const PCAPNG_SPB = 3;
const PCAPNG_EPB = 6;
const PCAPNG_OPT_END = 0;
const PCAPNG_OPT_IF_TSRESOL = 9;
/**
 * MAX_RECORD_LEN bounds one packet (libpcap's MAXIMUM_SNAPLEN is 262144); a larger length field means the file is
 * corrupt, and trusting it would make the reader buffer the rest of the file looking for the end of one packet.
 */
export const MAX_RECORD_LEN = 262_144;
/** MAX_BLOCK_LEN bounds one pcapng block for the same reason (a packet plus generous options). */
export const MAX_BLOCK_LEN = MAX_RECORD_LEN + 65_536;

/** A CaptureError says what is wrong with a capture file and at which byte offset. */
export class CaptureError extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(`${message} at byte offset ${offset}`);
    this.name = "CaptureError";
  }
}

/**
 * OnPacket receives each packet as buf[start, end): the reader's own buffer, valid only during the call (copy what
 * you keep), passed with offsets so that millions of packets cost no view object each. `tsMs` is the capture time in
 * milliseconds since the epoch (fractional: micro- and nanoseconds kept as far as a double allows).
 */
export type OnPacket = (buf: Uint8Array, start: number, end: number, linkType: number, tsMs: number, iface: number) => void;

interface Iface {
  linkType: number;
  /** Timestamp units per millisecond, and per second. */
  unitsPerMs: number;
  unitsPerSec: number;
}

/** A CaptureReader parses pcap or pcapng from chunks pushed in order. */
export class CaptureReader {
  #buf: Uint8Array = new Uint8Array(0);
  #view = new DataView(this.#buf.buffer);
  #pos = 0;
  /** Bytes of the file before #buf[0]. */
  #base = 0;
  #format: "unknown" | "pcap" | "pcapng" = "unknown";
  #le = true;
  #linkType = 0;
  #unitsPerMs = 1000;
  #ifaces: Iface[] = [];
  #packets = 0;
  /** The timestamp of the packet being delivered, as the file holds it (see timestampNs). */
  #tsHi = 0;
  #tsLo = 0;
  #tsUnitsPerSec = 1;
  /** pcap keeps seconds and a fraction of a second; pcapng a 64-bit count of units. */
  #tsSplit = false;

  constructor(readonly onPacket: OnPacket) {}

  /** format is known after the first bytes. */
  get format(): "unknown" | "pcap" | "pcapng" {
    return this.#format;
  }

  /** packets counts the packets delivered so far. */
  get packets(): number {
    return this.#packets;
  }

  /**
   * timestampNs is the exact capture time of the packet being delivered, in nanoseconds since the epoch (rounded
   * down where the file counts finer units). Call it only from within OnPacket: its `tsMs`, a double, cannot hold
   * nanoseconds since the epoch, and this costs a few BigInts, which the packet loop should not pay when unused.
   */
  timestampNs(): bigint {
    const perSec = BigInt(this.#tsUnitsPerSec);
    if (this.#tsSplit) return BigInt(this.#tsHi) * 1_000_000_000n + (BigInt(this.#tsLo) * 1_000_000_000n) / perSec;
    return (((BigInt(this.#tsHi) << 32n) | BigInt(this.#tsLo)) * 1_000_000_000n) / perSec;
  }

  /** offset is the file offset up to which everything was parsed. */
  get offset(): number {
    return this.#base + this.#pos;
  }

  /**
   * push parses as much of `chunk` (after what was left over) as forms whole records. Throws CaptureError. The
   * caller may reuse `chunk` once push returns: an incomplete record at its end is copied out. Records are read in
   * place; only a record split across two chunks is copied.
   */
  push(input: Uint8Array): void {
    // A plain Uint8Array view: Node Buffer's subarray (one per packet below) costs several times more.
    const chunk = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    const carried = this.#buf.length;
    if (carried > 0) {
      // Complete the split record from the head of the chunk: one record at most needs MAX_BLOCK_LEN bytes.
      const k = Math.min(chunk.length, MAX_BLOCK_LEN + 64);
      const head = new Uint8Array(carried + k);
      head.set(this.#buf, 0);
      head.set(chunk.subarray(0, k), carried);
      this.#setBuf(head, 0);
      this.#parse();
      if (this.#pos < carried || k === chunk.length) {
        this.#keepRest();
        return;
      }
      // Everything carried is consumed: go on inside the chunk itself.
      const start = this.#pos - carried;
      this.#base += carried;
      this.#setBuf(chunk, start);
    } else {
      this.#setBuf(chunk, 0);
    }
    this.#parse();
    this.#keepRest();
  }

  #parse(): void {
    try {
      if (this.#format === "unknown" && !this.#sniff()) return;
      if (this.#format === "pcap") this.#pcapRecords();
      else this.#pcapngBlocks();
    } catch (e) {
      this.#keepRest();
      throw e;
    }
  }

  /** #keepRest copies the unparsed tail out of the current buffer: copy, never view (Buffer#slice is a view). */
  #keepRest(): void {
    const rest = new Uint8Array(this.#buf.length - this.#pos);
    rest.set(this.#buf.subarray(this.#pos));
    this.#base += this.#pos;
    this.#setBuf(rest, 0);
  }

  #setBuf(b: Uint8Array, pos: number): void {
    this.#buf = b;
    this.#pos = pos;
    this.#view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  /** end checks that the input stopped at a record boundary. Throws CaptureError for a truncated file. */
  end(): void {
    const left = this.#buf.length - this.#pos;
    if (this.#format === "unknown")
      throw new CaptureError(
        this.offset,
        left === 0 ? "empty file: not a pcap or pcapng capture" : `file too short (${left} bytes) for a capture header`,
      );
    if (left > 0)
      throw new CaptureError(this.offset, `file truncated: ${left} bytes of an incomplete ${this.#format === "pcap" ? "record" : "block"}`);
  }

  #u32(at: number): number {
    return this.#view.getUint32(at, this.#le);
  }

  #sniff(): boolean {
    if (this.#buf.length < 4) return false;
    const be = this.#view.getUint32(0, false);
    if (be === PCAPNG_SHB) {
      this.#format = "pcapng";
      return true;
    }
    const le = this.#view.getUint32(0, true);
    const units = (m: number) => (m === PCAP_MAGIC_MICROS ? 1000 : m === PCAP_MAGIC_NANOS ? 1_000_000 : 0);
    if (units(be) === 0 && units(le) === 0) {
      throw new CaptureError(0, `not a pcap or pcapng file (magic 0x${be.toString(16).padStart(8, "0")})`);
    }
    if (this.#buf.length < PCAP_HEADER_LEN) return false;
    this.#le = units(le) !== 0;
    this.#unitsPerMs = units(this.#le ? le : be);
    this.#format = "pcap";
    this.#tsSplit = true;
    this.#tsUnitsPerSec = this.#unitsPerMs * 1000;
    // The upper bits of the link type field carry FCS information (pcap-savefile(5)).
    this.#linkType = this.#u32(20) & 0x0fffffff;
    this.#pos = PCAP_HEADER_LEN;
    return true;
  }

  #pcapRecords(): void {
    const buf = this.#buf;
    const end = buf.length;
    const unitsPerMs = this.#unitsPerMs;
    const link = this.#linkType;
    let pos = this.#pos;
    while (end - pos >= PCAP_RECORD_HEADER_LEN) {
      const incl = this.#u32(pos + 8);
      if (incl > MAX_RECORD_LEN) {
        this.#pos = pos;
        throw new CaptureError(this.offset, `corrupt record: captured length ${incl} exceeds ${MAX_RECORD_LEN}`);
      }
      if (end - pos - PCAP_RECORD_HEADER_LEN < incl) break;
      const sec = this.#u32(pos);
      const frac = this.#u32(pos + 4);
      const tsMs = sec * 1000 + frac / unitsPerMs;
      this.#tsHi = sec;
      this.#tsLo = frac;
      const start = pos + PCAP_RECORD_HEADER_LEN;
      pos = start + incl;
      this.#pos = pos;
      this.#packets++;
      this.onPacket(buf, start, start + incl, link, tsMs, 0);
    }
    this.#pos = pos;
  }

  #pcapngBlocks(): void {
    const buf = this.#buf;
    for (;;) {
      const pos = this.#pos;
      if (buf.length - pos < 12) return;
      const typeBE = this.#view.getUint32(pos, false);
      if (typeBE === PCAPNG_SHB) {
        const bom = this.#view.getUint32(pos + 8, true);
        if (bom === PCAPNG_BYTE_ORDER_MAGIC) this.#le = true;
        else if (this.#view.getUint32(pos + 8, false) === PCAPNG_BYTE_ORDER_MAGIC) this.#le = false;
        else throw new CaptureError(this.offset, "corrupt pcapng section header: bad byte-order magic");
        this.#ifaces = [];
      }
      const type = this.#u32(pos);
      const len = this.#u32(pos + 4);
      if (len < 12 || len % 4 !== 0 || len > MAX_BLOCK_LEN) {
        throw new CaptureError(this.offset, `corrupt pcapng block: type ${type} with length ${len}`);
      }
      if (buf.length - pos < len) return;
      if (this.#u32(pos + len - 4) !== len) throw new CaptureError(this.offset, `corrupt pcapng block: type ${type} lengths disagree`);
      if (type === PCAPNG_IDB) this.#idb(pos, len);
      else if (type === PCAPNG_EPB) this.#epb(pos, len);
      else if (type === PCAPNG_SPB) this.#spb(pos, len);
      this.#pos = pos + len;
    }
  }

  #idb(pos: number, len: number): void {
    if (len < 20) throw new CaptureError(this.offset, "corrupt pcapng interface block: too short");
    const linkType = this.#view.getUint16(pos + 8, this.#le);
    let unitsPerSec = 1_000_000;
    let o = pos + 16;
    const end = pos + len - 4;
    while (end - o >= 4) {
      const code = this.#view.getUint16(o, this.#le);
      const olen = this.#view.getUint16(o + 2, this.#le);
      if (code === PCAPNG_OPT_END) break;
      if (o + 4 + olen > end) throw new CaptureError(this.offset, "corrupt pcapng interface block: option overruns the block");
      if (code === PCAPNG_OPT_IF_TSRESOL && olen >= 1) {
        const r = this.#buf[o + 4] ?? 6;
        unitsPerSec = r & 0x80 ? 2 ** (r & 0x7f) : 10 ** r;
      }
      o += 4 + Math.ceil(olen / 4) * 4;
    }
    this.#ifaces.push({ linkType, unitsPerMs: unitsPerSec / 1000, unitsPerSec });
  }

  #epb(pos: number, len: number): void {
    if (len < 32) throw new CaptureError(this.offset, "corrupt pcapng packet block: too short");
    const id = this.#u32(pos + 8);
    const iface = this.#ifaces[id];
    if (iface === undefined)
      throw new CaptureError(this.offset, `pcapng packet block names interface ${id}, which no interface block declared`);
    const captured = this.#u32(pos + 20);
    if (28 + captured > len - 4)
      throw new CaptureError(this.offset, `corrupt pcapng packet block: captured length ${captured} overruns the block`);
    const hi = this.#u32(pos + 12);
    const lo = this.#u32(pos + 16);
    const units = hi * 4294967296 + lo;
    this.#tsHi = hi;
    this.#tsLo = lo;
    this.#tsUnitsPerSec = iface.unitsPerSec;
    this.#packets++;
    this.onPacket(this.#buf, pos + 28, pos + 28 + captured, iface.linkType, units / iface.unitsPerMs, id);
  }

  #spb(pos: number, len: number): void {
    const iface = this.#ifaces[0];
    if (iface === undefined) throw new CaptureError(this.offset, "pcapng simple packet block before any interface block");
    const orig = this.#u32(pos + 8);
    const captured = Math.min(orig, len - 16);
    this.#tsHi = 0;
    this.#tsLo = 0;
    this.#packets++;
    // Simple packet blocks carry no timestamp.
    this.onPacket(this.#buf, pos + 12, pos + 12 + captured, iface.linkType, 0, 0);
  }
}

/** pcapFileHeader is the 24-byte header of a little-endian pcap file (microsecond timestamps unless `nanos`). */
export function pcapFileHeader(linkType: number, snaplen = MAX_RECORD_LEN, nanos = false): Uint8Array {
  const out = new Uint8Array(PCAP_HEADER_LEN);
  const v = new DataView(out.buffer);
  v.setUint32(0, nanos ? PCAP_MAGIC_NANOS : PCAP_MAGIC_MICROS, true);
  v.setUint16(4, 2, true);
  v.setUint16(6, 4, true);
  v.setUint32(16, snaplen, true);
  v.setUint32(20, linkType, true);
  return out;
}

/** pcapRecord is one little-endian record header plus the packet, timestamped `tsMs` (microsecond resolution). */
export function pcapRecord(data: Uint8Array, tsMs: number): Uint8Array {
  const out = new Uint8Array(PCAP_RECORD_HEADER_LEN + data.length);
  const v = new DataView(out.buffer);
  const micros = Math.round(tsMs * 1000);
  const sec = Math.floor(micros / 1_000_000);
  v.setUint32(0, sec, true);
  v.setUint32(4, micros - sec * 1_000_000, true);
  v.setUint32(8, data.length, true);
  v.setUint32(12, data.length, true);
  out.set(data, PCAP_RECORD_HEADER_LEN);
  return out;
}
