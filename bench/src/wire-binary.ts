// A compact binary frame for the agents' observations message, written only to be measured against the JSON the
// wire carries (wire-bench.ts): what the hub would save by decoding bytes instead of parsing text. It carries the
// same fields with the same rules, so that a decoded message is the object the hub's parser gives for the JSON.
// IPv4 only (the bench's traffic): an IPv6 address would be 16 bytes where the IPv4 one is 4.
import { OBSERVATION_KINDS, formatIPv4, formatMac, parseIPv4, parseMac, type ObservationAggregate, type RequestReport } from "@whohas/core";

/** What an observations message holds, as the hub reads it. */
export interface Observations {
  readonly dropped: number;
  readonly entries: readonly ObservationAggregate[];
  readonly requests: readonly RequestReport[];
}

const VERSION = 2;
const NO_VLAN = 0;
const HAS_TARGET = 1;
const HAS_SRC = 2;
const HAS_ASKER_MAC = 4;

/** The sizes of the fixed parts: the header, an aggregate, a request report (before its times and replies), a reply. */
const HEADER = 10;
const ENTRY = 51;
const REPORT = 22;
const REPLY = 12;

/** encodeObservations writes the message: fixed-size records, interface names once in a table. */
export function encodeObservations(m: Observations): Uint8Array {
  const ifaces = [...new Set([...m.entries.map((e) => e.iface), ...m.requests.map((r) => r.iface)])];
  let size = HEADER + ifaces.reduce((n, s) => n + 1 + Buffer.byteLength(s), 0) + m.entries.length * ENTRY;
  for (const r of m.requests) size += REPORT + r.times.length * 8 + r.replies.length * REPLY;
  const buf = new Uint8Array(size);
  const v = new DataView(buf.buffer);
  v.setUint8(0, VERSION);
  v.setUint32(1, m.dropped);
  v.setUint16(5, m.entries.length);
  v.setUint16(7, m.requests.length);
  v.setUint8(9, ifaces.length);
  let o = HEADER;
  for (const name of ifaces) {
    const bytes = Buffer.from(name);
    v.setUint8(o++, bytes.length);
    buf.set(bytes, o);
    o += bytes.length;
  }
  for (const e of m.entries) {
    buf.set(parseIPv4(e.ip), o);
    buf.set(parseMac(e.mac), o + 4);
    v.setUint8(o + 10, OBSERVATION_KINDS.indexOf(e.kind));
    v.setUint8(o + 11, ifaces.indexOf(e.iface));
    v.setUint16(o + 12, e.vlan ?? NO_VLAN);
    v.setUint32(o + 14, e.count);
    v.setFloat64(o + 18, e.firstSeen);
    v.setFloat64(o + 26, e.lastSeen);
    v.setUint8(o + 34, (e.targetMac === null ? 0 : HAS_TARGET) | (e.ethSrc === null ? 0 : HAS_SRC));
    if (e.targetMac !== null) buf.set(parseMac(e.targetMac), o + 35);
    v.setUint32(o + 41, e.ethernetMismatch);
    if (e.ethSrc !== null) buf.set(parseMac(e.ethSrc), o + 45);
    o += ENTRY;
  }
  for (const r of m.requests) {
    buf.set(parseIPv4(r.ip), o);
    buf.set(parseIPv4(r.asker), o + 4);
    v.setUint8(o + 8, ifaces.indexOf(r.iface));
    v.setUint16(o + 9, r.vlan ?? NO_VLAN);
    v.setUint8(o + 11, r.askerMac === undefined ? 0 : HAS_ASKER_MAC);
    if (r.askerMac !== undefined) buf.set(parseMac(r.askerMac), o + 12);
    v.setUint16(o + 18, r.times.length);
    v.setUint16(o + 20, r.replies.length);
    o += REPORT;
    for (const t of r.times) {
      v.setFloat64(o, t);
      o += 8;
    }
    for (const [i, mac, delay] of r.replies) {
      v.setUint16(o, i);
      buf.set(parseMac(mac), o + 2);
      v.setFloat32(o + 8, delay);
      o += REPLY;
    }
  }
  return buf;
}

/** A DecodeError says why a frame was refused, as the JSON parser's message does. */
export class DecodeError extends Error {}

/**
 * decodeObservations reads a frame into the objects the hub's JSON parser gives, with the same checks (a kind it
 * knows, a count of at least 1, whole milliseconds, reply delays within the window): the text of each address is
 * made here, as the judge reads them.
 */
export function decodeObservations(buf: Uint8Array): Observations {
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let o = HEADER;
  const need = (n: number) => {
    if (o + n > buf.length) throw new DecodeError("truncated");
  };
  need(0);
  if (v.getUint8(0) !== VERSION) throw new DecodeError("version");
  const dropped = v.getUint32(1);
  const nEntries = v.getUint16(5);
  const nRequests = v.getUint16(7);
  const ifaces = new Array<string>(v.getUint8(9));
  for (let i = 0; i < ifaces.length; i++) {
    need(1);
    const len = v.getUint8(o);
    need(1 + len);
    if (len === 0 || len > 15) throw new DecodeError("iface: invalid");
    ifaces[i] = Buffer.from(buf.buffer, buf.byteOffset + o + 1, len).toString("latin1");
    o += 1 + len;
  }
  need(nEntries * ENTRY);
  const entries = new Array<ObservationAggregate>(nEntries);
  for (let i = 0; i < nEntries; i++, o += ENTRY) {
    const kind = OBSERVATION_KINDS[v.getUint8(o + 10)];
    const iface = ifaces[v.getUint8(o + 11)];
    const vlan = v.getUint16(o + 12);
    const count = v.getUint32(o + 14);
    const firstSeen = v.getFloat64(o + 18);
    const lastSeen = v.getFloat64(o + 26);
    const flags = v.getUint8(o + 34);
    if (kind === undefined || iface === undefined || count < 1 || !Number.isSafeInteger(firstSeen) || !Number.isSafeInteger(lastSeen))
      throw new DecodeError(`entries.${i}: invalid`);
    if (vlan > 4094) throw new DecodeError(`entries.${i}.vlan: invalid`);
    entries[i] = {
      ip: formatIPv4(buf, o),
      mac: formatMac(buf, o + 4),
      kind,
      iface,
      vlan: vlan === NO_VLAN ? null : vlan,
      count,
      firstSeen,
      lastSeen,
      targetMac: (flags & HAS_TARGET) === 0 ? null : formatMac(buf, o + 35),
      ethernetMismatch: v.getUint32(o + 41),
      ethSrc: (flags & HAS_SRC) === 0 ? null : formatMac(buf, o + 45),
    };
  }
  const requests = new Array<RequestReport>(nRequests);
  for (let i = 0; i < nRequests; i++) {
    need(REPORT);
    const iface = ifaces[v.getUint8(o + 8)];
    const vlan = v.getUint16(o + 9);
    const flags = v.getUint8(o + 11);
    const nTimes = v.getUint16(o + 18);
    const nReplies = v.getUint16(o + 20);
    if (iface === undefined || vlan > 4094 || nTimes < 1) throw new DecodeError(`requests.${i}: invalid`);
    const r: RequestReport = {
      ip: formatIPv4(buf, o),
      asker: formatIPv4(buf, o + 4),
      iface,
      vlan: vlan === NO_VLAN ? null : vlan,
      times: new Array<number>(nTimes),
      replies: new Array<[number, string, number]>(nReplies),
    };
    if ((flags & HAS_ASKER_MAC) !== 0) r.askerMac = formatMac(buf, o + 12);
    o += REPORT;
    need(nTimes * 8 + nReplies * REPLY);
    for (let k = 0; k < nTimes; k++, o += 8) {
      const t = v.getFloat64(o);
      if (!Number.isSafeInteger(t) || t < 0) throw new DecodeError(`requests.${i}.times: invalid`);
      r.times[k] = t;
    }
    for (let k = 0; k < nReplies; k++, o += REPLY) {
      const index = v.getUint16(o);
      const delay = Math.round(v.getFloat32(o + 8) * 1000) / 1000;
      if (index >= nTimes || !(delay >= 0 && delay <= 1000)) throw new DecodeError(`requests.${i}.replies: invalid`);
      r.replies[k] = [index, formatMac(buf, o + 2), delay];
    }
    requests[i] = r;
  }
  return { dropped, entries, requests };
}
