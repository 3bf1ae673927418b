import { describe, expect, it } from "vitest";
import { CaptureError, CaptureReader, pcapFileHeader, pcapRecord } from "./pcap.js";
import { LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL2 } from "../packet/link.js";
import { newArpRequest } from "../packet/arp.js";

const FRAME_A = newArpRequest("02:00:5e:00:00:01", "192.0.2.1", "192.0.2.200");
const FRAME_B = newArpRequest("02:00:5e:00:00:01", "192.0.2.1", "192.0.2.201").subarray(0, 42);

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

interface Got {
  data: string;
  link: number;
  ts: number;
  iface: number;
}

/** readAll feeds `file` in chunks of `chunk` bytes and collects packets. */
function readAll(file: Uint8Array, chunk = file.length): { got: Got[]; reader: CaptureReader } {
  const got: Got[] = [];
  const reader = new CaptureReader((b, s, e, link, ts, iface) =>
    got.push({ data: Buffer.from(b.subarray(s, e)).toString("hex"), link, ts, iface }),
  );
  for (let i = 0; i < file.length; i += chunk) reader.push(file.subarray(i, i + chunk));
  reader.end();
  return { got, reader };
}

const T0 = 1_700_000_000_123.456;
const PCAP_LE = concat(pcapFileHeader(LINKTYPE_ETHERNET), pcapRecord(FRAME_A, T0), pcapRecord(FRAME_B, T0 + 1.5));

/** toBigEndian rewrites a little-endian pcap produced by our writer as a big-endian one, field by field. */
function toBigEndian(le: Uint8Array): Uint8Array {
  const out = le.slice();
  const src = new DataView(le.buffer, le.byteOffset, le.byteLength);
  const dst = new DataView(out.buffer);
  const swap32 = (o: number) => dst.setUint32(o, src.getUint32(o, true), false);
  const swap16 = (o: number) => dst.setUint16(o, src.getUint16(o, true), false);
  [0, 8, 12, 16, 20].forEach(swap32);
  [4, 6].forEach(swap16);
  let o = 24;
  while (o < le.length) {
    const incl = src.getUint32(o + 8, true);
    [o, o + 4, o + 8, o + 12].forEach(swap32);
    o += 16 + incl;
  }
  return out;
}

/** pcapng builds a file from blocks; `le` picks the byte order the section is written in. */
function pcapng(le: boolean, blocks: { type: number; body: Uint8Array }[]): Uint8Array {
  const parts = blocks.map(({ type, body }) => {
    const padded = Math.ceil(body.length / 4) * 4;
    const out = new Uint8Array(12 + padded);
    const v = new DataView(out.buffer);
    v.setUint32(0, type, le);
    v.setUint32(4, out.length, le);
    out.set(body, 8);
    v.setUint32(out.length - 4, out.length, le);
    return out;
  });
  return concat(...parts);
}
function shbBody(le: boolean): Uint8Array {
  const b = new Uint8Array(16);
  const v = new DataView(b.buffer);
  v.setUint32(0, 0x1a2b3c4d, le);
  v.setUint16(4, 1, le);
  v.setBigInt64(8, -1n, le);
  return b;
}
function idbBody(le: boolean, link: number, tsresol?: number): Uint8Array {
  const opts = tsresol === undefined ? new Uint8Array(0) : new Uint8Array(12);
  if (tsresol !== undefined) {
    const o = new DataView(opts.buffer);
    o.setUint16(0, 9, le);
    o.setUint16(2, 1, le);
    opts[4] = tsresol;
  }
  const b = new Uint8Array(8 + opts.length);
  const v = new DataView(b.buffer);
  v.setUint16(0, link, le);
  v.setUint32(4, 262144, le);
  b.set(opts, 8);
  return b;
}
function epbBody(le: boolean, iface: number, units: bigint, data: Uint8Array): Uint8Array {
  const b = new Uint8Array(20 + data.length);
  const v = new DataView(b.buffer);
  v.setUint32(0, iface, le);
  v.setUint32(4, Number(units >> 32n), le);
  v.setUint32(8, Number(units & 0xffffffffn), le);
  v.setUint32(12, data.length, le);
  v.setUint32(16, data.length, le);
  b.set(data, 20);
  return b;
}

describe("CaptureReader: pcap", () => {
  it.each([1, 7, 16, 1 << 20])("reads both records fed in chunks of %i bytes", (chunk) => {
    const { got, reader } = readAll(PCAP_LE, chunk);
    expect(got.map((g) => g.data)).toEqual([Buffer.from(FRAME_A).toString("hex"), Buffer.from(FRAME_B).toString("hex")]);
    expect(got[0]?.ts).toBeCloseTo(T0, 3);
    expect(got[1]?.ts).toBeCloseTo(T0 + 1.5, 3);
    expect(reader.format).toBe("pcap");
    expect(reader.offset).toBe(PCAP_LE.length);
  });

  it("copies a partial record out of the caller's buffer, which the caller then reuses (a Node Buffer, as fs.readSync fills)", () => {
    const got: string[] = [];
    const r = new CaptureReader((b, s, e) => got.push(Buffer.from(b.subarray(s, e)).toString("hex")));
    const buf = Buffer.alloc(50);
    for (let i = 0; i < PCAP_LE.length; i += 50) {
      const n = Math.min(50, PCAP_LE.length - i);
      buf.set(PCAP_LE.subarray(i, i + n));
      r.push(buf.subarray(0, n));
      buf.fill(0xee);
    }
    r.end();
    expect(got).toEqual([Buffer.from(FRAME_A).toString("hex"), Buffer.from(FRAME_B).toString("hex")]);
  });

  it("reads big-endian files", () => {
    const { got } = readAll(toBigEndian(PCAP_LE), 5);
    expect(got).toHaveLength(2);
    expect(got[1]?.ts).toBeCloseTo(T0 + 1.5, 3);
  });

  it("reads nanosecond files", () => {
    const file = PCAP_LE.slice();
    new DataView(file.buffer).setUint32(0, 0xa1b23c4d, true);
    new DataView(file.buffer).setUint32(24 + 4, 123_456_789, true);
    const { got } = readAll(file);
    expect(got[0]?.ts).toBeCloseTo(1_700_000_000_000 + 123.456789, 4);
  });

  it("reports a truncated last record with its offset, after delivering the ones before it", () => {
    const got: number[] = [];
    const r = new CaptureReader((_b, s, e) => got.push(e - s));
    r.push(PCAP_LE.subarray(0, PCAP_LE.length - 10));
    expect(got).toEqual([60]);
    expect(() => r.end()).toThrow(new CaptureError(24 + 16 + 60, "file truncated: 48 bytes of an incomplete record"));
  });

  it("refuses a corrupt record length instead of buffering the rest of the file", () => {
    const file = PCAP_LE.slice();
    new DataView(file.buffer).setUint32(24 + 8, 0x7fffffff, true);
    const r = new CaptureReader(() => undefined);
    expect(() => r.push(file)).toThrow(/corrupt record: captured length 2147483647 exceeds 262144 at byte offset 24/);
  });

  it.each([
    { case: "an empty file", file: new Uint8Array(0), msg: /empty file/ },
    {
      case: "a text file",
      file: new TextEncoder().encode("hello, this is not a capture file"),
      msg: /not a pcap or pcapng file \(magic 0x68656c6c\)/,
    },
  ])("refuses $case", ({ file, msg }) => {
    expect(() => readAll(file)).toThrow(msg);
  });
});

describe("CaptureReader: pcapng", () => {
  it.each([true, false])("reads EPBs of two interfaces with their own link types and resolutions (little-endian %s)", (le) => {
    const file = pcapng(le, [
      { type: 0x0a0d0d0a, body: shbBody(le) },
      { type: 1, body: idbBody(le, LINKTYPE_ETHERNET) }, // default microseconds
      { type: 1, body: idbBody(le, LINKTYPE_LINUX_SLL2, 9) }, // nanoseconds
      { type: 6, body: epbBody(le, 0, 1_700_000_000_000_000n, FRAME_A) },
      { type: 5, body: new Uint8Array(8) }, // an interface statistics block: skipped
      { type: 6, body: epbBody(le, 1, 1_700_000_000_500_000_000n, FRAME_B) },
    ]);
    for (const chunk of [3, 64, file.length]) {
      const { got } = readAll(file, chunk);
      expect(got.map((g) => [g.link, g.iface, g.data.length / 2])).toEqual([
        [1, 0, 60],
        [276, 1, 42],
      ]);
      expect(got[0]?.ts).toBe(1_700_000_000_000);
      expect(got[1]?.ts).toBeCloseTo(1_700_000_000_500, 0);
    }
  });

  it("refuses a packet for an undeclared interface", () => {
    const file = pcapng(true, [
      { type: 0x0a0d0d0a, body: shbBody(true) },
      { type: 6, body: epbBody(true, 3, 0n, FRAME_A) },
    ]);
    expect(() => readAll(file)).toThrow(/names interface 3, which no interface block declared at byte offset 28/);
  });

  it("refuses blocks whose lengths disagree", () => {
    const file = pcapng(true, [
      { type: 0x0a0d0d0a, body: shbBody(true) },
      { type: 1, body: idbBody(true, 1) },
    ]);
    new DataView(file.buffer).setUint32(file.length - 4, 999, true);
    expect(() => readAll(file)).toThrow(/lengths disagree at byte offset 28/);
  });
});

describe("CaptureReader.timestampNs", () => {
  /** stamps reads `file` and collects the exact time of each packet. */
  function stamps(file: Uint8Array): bigint[] {
    const out: bigint[] = [];
    const r: CaptureReader = new CaptureReader(() => out.push(r.timestampNs()));
    r.push(file);
    r.end();
    return out;
  }

  it.each([true, false])("gives pcapng times in each interface's resolution as nanoseconds (little-endian %s)", (le) => {
    const file = pcapng(le, [
      { type: 0x0a0d0d0a, body: shbBody(le) },
      { type: 1, body: idbBody(le, LINKTYPE_ETHERNET) }, // default microseconds
      { type: 1, body: idbBody(le, LINKTYPE_ETHERNET, 9) }, // nanoseconds
      { type: 1, body: idbBody(le, LINKTYPE_ETHERNET, 0x80 | 10) }, // 2^-10 s
      { type: 6, body: epbBody(le, 0, 1_700_000_000_123_456n, FRAME_A) },
      { type: 6, body: epbBody(le, 1, 1_700_000_000_123_456_789n, FRAME_A) },
      { type: 6, body: epbBody(le, 2, 1024n * 1_700_000_000n + 1n, FRAME_A) },
    ]);
    // 1/1024 s is 976,562.5 ns: rounded down.
    expect(stamps(file)).toEqual([1_700_000_000_123_456_000n, 1_700_000_000_123_456_789n, 1_700_000_000_000_976_562n]);
  });

  it("gives pcap times, micro- and nanosecond files, as nanoseconds", () => {
    expect(stamps(PCAP_LE)).toEqual([1_700_000_000_123_456_000n, 1_700_000_000_124_956_000n]);
    const nanos = PCAP_LE.slice();
    new DataView(nanos.buffer).setUint32(0, 0xa1b23c4d, true);
    new DataView(nanos.buffer).setUint32(24 + 4, 123_456_789, true);
    expect(stamps(nanos)[0]).toBe(1_700_000_000_123_456_789n);
  });
});
