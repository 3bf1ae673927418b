import { type DecodeResult, ok, truncated, malformed, unsupported } from "./decode.js";
import { BROADCAST_MAC, MAC_LEN, ZERO_MAC, formatIPv4, formatMac, parseIPv4, parseMac } from "./addr.js";
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

/**
 * decodeArp reads an ARP packet at `offset`. ARP for anything but IPv4 over Ethernet is `unsupported`;
 * a packet whose length fields disagree with its hardware/protocol types is `malformed`.
 */
export function decodeArp(bytes: Uint8Array, offset = 0): DecodeResult<Arp> {
  const have = bytes.length - offset;
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
  return ok({
    op: u16(bytes, offset + 6),
    senderMac: formatMac(bytes, o),
    senderIp: formatIPv4(bytes, o + 6),
    targetMac: formatMac(bytes, o + 10),
    targetIp: formatIPv4(bytes, o + 16),
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
