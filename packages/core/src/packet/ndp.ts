import { type DecodeFailure, type DecodeResult, malformed, ok, truncated, unsupported } from "./decode.js";
import { formatIPv6, formatMac, MAC_LEN, parseIPv6, parseMac } from "./addr.js";
import { ETHERNET_HEADER_LEN, ETHERTYPE_IPV6 } from "./ethernet.js";
import { IPV6_HEADER_LEN, NEXT_HEADER_ICMPV6, icmpv6Checksum, readIpv6Header } from "./ipv6.js";
import { u16, u8 } from "./read.js";

export const ICMPV6_NEIGHBOR_SOLICITATION = 135;
export const ICMPV6_NEIGHBOR_ADVERTISEMENT = 136;
/** NDP_HOP_LIMIT: RFC 4861 7.1.1/7.1.2, a receiver MUST discard NS/NA whose IP hop limit is not 255. */
export const NDP_HOP_LIMIT = 255;
/** NS and NA share a body: ICMPv6 header (4), reserved or flags (4), target address (16). */
export const NDP_BODY_LEN = 24;
export const NDP_OPT_SOURCE_LLA = 1;
export const NDP_OPT_TARGET_LLA = 2;
const NA_FLAG_ROUTER = 0x80;
const NA_FLAG_SOLICITED = 0x40;
const NA_FLAG_OVERRIDE = 0x20;

/** An NdpOption is one option of an NS or NA (RFC 4861 section 4.6); unknown ones are kept raw, never refused. */
export type NdpOption =
  | { readonly kind: "source-lla"; readonly mac: string }
  | { readonly kind: "target-lla"; readonly mac: string }
  | { readonly kind: "raw"; readonly type: number; readonly value: Uint8Array };

/** An NdpMessage is a Neighbor Solicitation or Advertisement with the IPv6 header fields that matter to NDP. */
export interface NdpMessage {
  readonly type: "ns" | "na";
  readonly src: string;
  readonly dst: string;
  readonly hopLimit: number;
  readonly target: string;
  /** NA flags (all false for NS). */
  readonly router: boolean;
  readonly solicited: boolean;
  readonly override: boolean;
  readonly options: readonly NdpOption[];
}

/** linkLayerAddress returns the MAC of the first option of `kind`, or null. */
export function linkLayerAddress(m: NdpMessage, kind: "source-lla" | "target-lla"): string | null {
  for (const o of m.options) if (o.kind === kind) return o.mac;
  return null;
}

function readOptions(bytes: Uint8Array, start: number, end: number): NdpOption[] | DecodeFailure {
  const out: NdpOption[] = [];
  let pos = start;
  while (pos < end) {
    if (end - pos < 2) return truncated("ndp", "option header", 2, end - pos);
    const type = u8(bytes, pos);
    const units = u8(bytes, pos + 1);
    // RFC 4861 4.6: "Nodes MUST silently discard an ND packet that contains an option with length zero."
    // Without this check an option loop never advances.
    if (units === 0) return malformed("ndp", `option type ${type} has length zero`);
    const len = units * 8;
    if (end - pos < len) return truncated("ndp", `option type ${type}`, len, end - pos);
    if ((type === NDP_OPT_SOURCE_LLA || type === NDP_OPT_TARGET_LLA) && len >= 2 + MAC_LEN) {
      out.push({ kind: type === NDP_OPT_SOURCE_LLA ? "source-lla" : "target-lla", mac: formatMac(bytes, pos + 2) });
    } else {
      out.push({ kind: "raw", type, value: bytes.slice(pos + 2, pos + len) });
    }
    pos += len;
  }
  return out;
}

/**
 * decodeNdp reads an IPv6 packet at `offset` holding an NS or NA. Other ICMPv6 types and other next headers are
 * `unsupported`; a bad checksum, hop limit or code is `malformed` (RFC 4861 7.1: such packets are discarded).
 *
 *     ICMPv6: | type 1 | code 1 | checksum 2 | reserved / R S O flags 4 | target 16 | options (8-byte units) ... |
 */
export function decodeNdp(bytes: Uint8Array, offset: number): DecodeResult<NdpMessage> {
  const ip = readIpv6Header(bytes, offset);
  if ("ok" in ip) return ip;
  if (ip.nextHeader !== NEXT_HEADER_ICMPV6) return unsupported("ipv6", `next header ${ip.nextHeader} is not ICMPv6`);
  const m = ip.payload;
  if (ip.payloadLength < 4) return truncated("icmpv6", "header", 4, ip.payloadLength);
  const type = u8(bytes, m);
  if (type !== ICMPV6_NEIGHBOR_SOLICITATION && type !== ICMPV6_NEIGHBOR_ADVERTISEMENT) {
    return unsupported("icmpv6", `type ${type} is not a neighbor solicitation or advertisement`);
  }
  if (ip.payloadLength < NDP_BODY_LEN) return truncated("ndp", "message", NDP_BODY_LEN, ip.payloadLength);
  const code = u8(bytes, m + 1);
  if (code !== 0) return malformed("ndp", `ICMPv6 code ${code}, NDP requires 0`);
  if (ip.hopLimit !== NDP_HOP_LIMIT) return malformed("ndp", `hop limit ${ip.hopLimit}, NDP requires 255`);
  const want = icmpv6Checksum(bytes, ip.src, ip.dst, m, ip.payloadLength);
  const got = u16(bytes, m + 2);
  if (want !== got)
    return malformed("icmpv6", `checksum 0x${got.toString(16).padStart(4, "0")}, computed 0x${want.toString(16).padStart(4, "0")}`);
  const options = readOptions(bytes, m + NDP_BODY_LEN, m + ip.payloadLength);
  if ("ok" in options) return options;
  const flags = type === ICMPV6_NEIGHBOR_ADVERTISEMENT ? u8(bytes, m + 4) : 0;
  return ok({
    type: type === ICMPV6_NEIGHBOR_SOLICITATION ? "ns" : "na",
    src: formatIPv6(bytes, ip.src),
    dst: formatIPv6(bytes, ip.dst),
    hopLimit: ip.hopLimit,
    target: formatIPv6(bytes, m + 8),
    router: (flags & NA_FLAG_ROUTER) !== 0,
    solicited: (flags & NA_FLAG_SOLICITED) !== 0,
    override: (flags & NA_FLAG_OVERRIDE) !== 0,
    options,
  });
}

/** NdpFrame is what encodeNdpFrame writes: Ethernet addresses plus an NdpMessage. */
export interface NdpFrame extends Omit<NdpMessage, "hopLimit"> {
  readonly ethDst: string;
  readonly ethSrc: string;
}

function parseIPv6Strict(s: string): Uint8Array {
  const b = parseIPv6(s);
  if (b === null) throw new TypeError(`not an IPv6 address: ${JSON.stringify(s)}`);
  return b;
}

/**
 * encodeNdpFrame writes an Ethernet II frame with an IPv6 header (hop limit 255, class and flow 0) and an NS or NA,
 * checksum computed. Raw options are written as given (their value must fill whole 8-byte units minus 2).
 *
 *     | eth 14 | IPv6 40 | type | code | checksum | flags/reserved 4 | target 16 | options |
 */
export function encodeNdpFrame(f: NdpFrame): Uint8Array {
  const optLen = f.options.reduce((n, o) => n + (o.kind === "raw" ? 2 + o.value.length : 8), 0);
  const msgLen = NDP_BODY_LEN + optLen;
  const out = new Uint8Array(ETHERNET_HEADER_LEN + IPV6_HEADER_LEN + msgLen);
  out.set(parseMac(f.ethDst), 0);
  out.set(parseMac(f.ethSrc), 6);
  out[12] = ETHERTYPE_IPV6 >> 8;
  out[13] = ETHERTYPE_IPV6 & 0xff;
  const ip = ETHERNET_HEADER_LEN;
  out[ip] = 0x60;
  out[ip + 4] = msgLen >> 8;
  out[ip + 5] = msgLen & 0xff;
  out[ip + 6] = NEXT_HEADER_ICMPV6;
  out[ip + 7] = NDP_HOP_LIMIT;
  out.set(parseIPv6Strict(f.src), ip + 8);
  out.set(parseIPv6Strict(f.dst), ip + 24);
  const m = ip + IPV6_HEADER_LEN;
  out[m] = f.type === "ns" ? ICMPV6_NEIGHBOR_SOLICITATION : ICMPV6_NEIGHBOR_ADVERTISEMENT;
  if (f.type === "na")
    out[m + 4] = (f.router ? NA_FLAG_ROUTER : 0) | (f.solicited ? NA_FLAG_SOLICITED : 0) | (f.override ? NA_FLAG_OVERRIDE : 0);
  out.set(parseIPv6Strict(f.target), m + 8);
  let pos = m + NDP_BODY_LEN;
  for (const o of f.options) {
    if (o.kind === "raw") {
      if ((2 + o.value.length) % 8 !== 0) throw new RangeError(`ndp: raw option type ${o.type} is not a whole number of 8-byte units`);
      out[pos] = o.type;
      out[pos + 1] = (2 + o.value.length) / 8;
      out.set(o.value, pos + 2);
      pos += 2 + o.value.length;
    } else {
      out[pos] = o.kind === "source-lla" ? NDP_OPT_SOURCE_LLA : NDP_OPT_TARGET_LLA;
      out[pos + 1] = 1;
      out.set(parseMac(o.mac), pos + 2);
      pos += 8;
    }
  }
  const c = icmpv6Checksum(out, ip + 8, ip + 24, m, msgLen);
  out[m + 2] = c >> 8;
  out[m + 3] = c & 0xff;
  return out;
}

/** solicitedNodeMulticast returns ff02::1:ffXX:XXXX for an address (RFC 4291 2.7.1) and its Ethernet group MAC. */
export function solicitedNodeMulticast(ip: string): { ip: string; mac: string } {
  const b = parseIPv6Strict(ip);
  const [x, y, z] = [b[13] ?? 0, b[14] ?? 0, b[15] ?? 0];
  const hex = (n: number) => n.toString(16).padStart(2, "0");
  return { ip: `ff02::1:ff${hex(x)}:${hex(y)}${hex(z)}`, mac: `33:33:ff:${hex(x)}:${hex(y)}:${hex(z)}` };
}

/** ALL_NODES is ff02::1 and its Ethernet group address (RFC 2464 section 7). */
export const ALL_NODES = { ip: "ff02::1", mac: "33:33:00:00:00:01" } as const;

/** newNeighborSolicitation builds the NS a client or probe sends: to the target's solicited-node group, with SLLA. */
export function newNeighborSolicitation(ownMac: string, ownIp: string, target: string): Uint8Array {
  const group = solicitedNodeMulticast(target);
  return encodeNdpFrame({
    ethDst: group.mac,
    ethSrc: ownMac,
    type: "ns",
    src: ownIp,
    dst: group.ip,
    target,
    router: false,
    solicited: false,
    override: false,
    options: [{ kind: "source-lla", mac: ownMac }],
  });
}

/**
 * newSolicitedAdvertisement builds the NA MetalLB's speaker answers an NS with (internal/layer2/ndp.go): unicast to
 * the solicitor, S=1, O=0, target LLA = own MAC. MetalLB sends from the interface's link-local address
 * (ndp.Listen(ifi, ndp.LinkLocal)), so that is `ownLinkLocal`, not the VIP.
 */
export function newSolicitedAdvertisement(ownMac: string, ownLinkLocal: string, vip: string, toMac: string, toIp: string): Uint8Array {
  return encodeNdpFrame({
    ethDst: toMac,
    ethSrc: ownMac,
    type: "na",
    src: ownLinkLocal,
    dst: toIp,
    target: vip,
    router: false,
    solicited: true,
    override: false,
    options: [{ kind: "target-lla", mac: ownMac }],
  });
}

/** newUnsolicitedAdvertisement builds MetalLB's gratuitous NA: from the link-local address to ff02::1, S=0, O=1. */
export function newUnsolicitedAdvertisement(ownMac: string, ownLinkLocal: string, vip: string): Uint8Array {
  return encodeNdpFrame({
    ethDst: ALL_NODES.mac,
    ethSrc: ownMac,
    type: "na",
    src: ownLinkLocal,
    dst: ALL_NODES.ip,
    target: vip,
    router: false,
    solicited: false,
    override: true,
    options: [{ kind: "target-lla", mac: ownMac }],
  });
}
