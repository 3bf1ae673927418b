import { type DecodeFailure, type DecodeResult, ok, truncated, malformed, unsupported } from "./decode.js";
import {
  BROADCAST_MAC,
  MAC_LEN,
  ZERO_MAC,
  formatIPv4Number,
  formatMacNumber,
  ipv4ToNumber,
  macToNumber,
  parseIPv4,
  parseMac,
} from "./addr.js";
import { ETHERNET_HEADER_LEN, ETHERTYPE_ARP, ETHERTYPE_IPV4 } from "./ethernet.js";
import { u16, u8 } from "./read.js";

/** ARP_HEADER_LEN is the fixed part of an ARP packet: htype, ptype, hlen, plen, op. */
export const ARP_HEADER_LEN = 8;
/** ARP_IPV4_LEN is a whole ARP packet for IPv4 over Ethernet (RFC 826): 8 + 2 × (6 + 4). */
export const ARP_IPV4_LEN = 28;
/** ARP_HTYPE_ETHERNET is hardware type 1 (Ethernet, 10Mb). */
export const ARP_HTYPE_ETHERNET = 1;
export const ARP_OP_REQUEST = 1;
export const ARP_OP_REPLY = 2;
/**
 * MIN_FRAME_LEN is the shortest Ethernet frame without FCS. MetalLB pads its ARP frames to it
 * (mdlayher/ethernet MarshalBinary), and so do we so that our frames are byte-identical.
 */
export const MIN_FRAME_LEN = 60;

/** An Arp is an ARP packet for IPv4 over Ethernet, as described in RFC 826. */
export interface Arp {
  readonly op: number;
  /** Sender hardware address (SHA). */
  readonly senderMac: string;
  /** Sender protocol address (SPA). */
  readonly senderIp: string;
  /** Target hardware address (THA). */
  readonly targetMac: string;
  /** Target protocol address (TPA). */
  readonly targetIp: string;
}

/** ArpFields is an ARP packet as numbers (macToNumber / ipv4ToNumber), written in place by readArp. */
export interface ArpFields {
  op: number;
  sha: number;
  spa: number;
  tha: number;
  tpa: number;
}

/** newArpFields returns an ArpFields to reuse across frames. */
export function newArpFields(): ArpFields {
  return { op: 0, sha: 0, spa: 0, tha: 0, tpa: 0 };
}

/**
 * readArp reads an ARP packet at `offset` into `out` without allocating; null on success. ARP for anything but IPv4
 * over Ethernet is `unsupported`; a packet whose length fields disagree with its types is `malformed`.
 *
 *     0      2      4    5    6    8     14    18    24    28
 *     | htype| ptype| hlen| plen| op | SHA | SPA | THA | TPA |
 */
export function readArp(bytes: Uint8Array, offset: number, out: ArpFields, end = bytes.length): DecodeFailure | null {
  const have = end - offset;
  if (have < ARP_HEADER_LEN) return truncated("arp", "header", ARP_HEADER_LEN, Math.max(0, have));
  const htype = u16(bytes, offset);
  const ptype = u16(bytes, offset + 2);
  const hlen = u8(bytes, offset + 4);
  const plen = u8(bytes, offset + 5);
  if (htype !== ARP_HTYPE_ETHERNET) return unsupported("arp", `hardware type ${htype} is not Ethernet`);
  if (ptype !== ETHERTYPE_IPV4) return unsupported("arp", `protocol type 0x${ptype.toString(16).padStart(4, "0")} is not IPv4`);
  if (hlen !== MAC_LEN || plen !== 4) {
    return malformed("arp", `Ethernet/IPv4 ARP with hardware length ${hlen} and protocol length ${plen} (want 6 and 4)`);
  }
  // Lengths come from the header: check the whole packet before reading any address.
  if (have < ARP_IPV4_LEN) return truncated("arp", "Ethernet/IPv4 packet", ARP_IPV4_LEN, have);
  const o = offset + ARP_HEADER_LEN;
  out.op = u16(bytes, offset + 6);
  out.sha = macToNumber(bytes, o);
  out.spa = ipv4ToNumber(bytes, o + 6);
  out.tha = macToNumber(bytes, o + 10);
  out.tpa = ipv4ToNumber(bytes, o + 16);
  return null;
}

/** decodeArp reads an ARP packet at `offset` into an Arp with textual addresses. */
export function decodeArp(bytes: Uint8Array, offset = 0): DecodeResult<Arp> {
  const f = newArpFields();
  const err = readArp(bytes, offset, f);
  if (err !== null) return err;
  return ok({
    op: f.op,
    senderMac: formatMacNumber(f.sha),
    senderIp: formatIPv4Number(f.spa),
    targetMac: formatMacNumber(f.tha),
    targetIp: formatIPv4Number(f.tpa),
  });
}

/** An ArpFrame is an Arp together with the Ethernet addresses it travels between. */
export interface ArpFrame extends Arp {
  readonly ethDst: string;
  readonly ethSrc: string;
}

/**
 * encodeArpFrame writes an Ethernet II frame carrying one ARP packet, padded with zeros to MIN_FRAME_LEN.
 *
 *     0        6        12     14     16     18   19   20   22     28     32     38     42          60
 *     | dst    | src    | 0806 | 0001 | 0800 | 6  | 4  | op | SHA  | SPA  | THA  | TPA  | zero pad  |
 */
export function encodeArpFrame(f: ArpFrame): Uint8Array {
  const out = new Uint8Array(MIN_FRAME_LEN);
  out.set(parseMac(f.ethDst), 0);
  out.set(parseMac(f.ethSrc), 6);
  out[12] = ETHERTYPE_ARP >> 8;
  out[13] = ETHERTYPE_ARP & 0xff;
  const o = ETHERNET_HEADER_LEN;
  out[o + 1] = ARP_HTYPE_ETHERNET;
  out[o + 2] = ETHERTYPE_IPV4 >> 8;
  out[o + 4] = MAC_LEN;
  out[o + 5] = 4;
  out[o + 6] = f.op >> 8;
  out[o + 7] = f.op & 0xff;
  out.set(parseMac(f.senderMac), o + 8);
  out.set(parseIPv4(f.senderIp), o + 14);
  out.set(parseMac(f.targetMac), o + 18);
  out.set(parseIPv4(f.targetIp), o + 24);
  return out;
}

/**
 * newArpRequest builds the broadcast "who has `targetIp`? tell `senderIp`" frame a client, router or probe sends.
 * Every request is broadcast: a unicast re-check (what arping does after the first reply) would hide other responders.
 */
export function newArpRequest(senderMac: string, senderIp: string, targetIp: string): Uint8Array {
  return encodeArpFrame({
    ethDst: BROADCAST_MAC,
    ethSrc: senderMac,
    op: ARP_OP_REQUEST,
    senderMac,
    senderIp,
    targetMac: ZERO_MAC,
    targetIp,
  });
}

/**
 * newArpReply builds the reply MetalLB's speaker sends (internal/layer2/arp.go): Ethernet to the requester, from the
 * interface; SHA = own MAC, SPA = the VIP, THA/TPA = the requester.
 */
export function newArpReply(ownMac: string, vip: string, requesterMac: string, requesterIp: string): Uint8Array {
  return encodeArpFrame({
    ethDst: requesterMac,
    ethSrc: ownMac,
    op: ARP_OP_REPLY,
    senderMac: ownMac,
    senderIp: vip,
    targetMac: requesterMac,
    targetIp: requesterIp,
  });
}

/**
 * newGratuitousArp builds one half of MetalLB's gratuitous burst (arp.go `gratuitous`): a broadcast frame with
 * SHA = own MAC, SPA = TPA = the VIP and THA = ff:ff:ff:ff:ff:ff, as a request (`op` 1) or a reply (`op` 2).
 */
export function newGratuitousArp(op: typeof ARP_OP_REQUEST | typeof ARP_OP_REPLY, ownMac: string, vip: string): Uint8Array {
  return encodeArpFrame({
    ethDst: BROADCAST_MAC,
    ethSrc: ownMac,
    op,
    senderMac: ownMac,
    senderIp: vip,
    targetMac: BROADCAST_MAC,
    targetIp: vip,
  });
}
