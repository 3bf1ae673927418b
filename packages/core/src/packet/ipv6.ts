import { type DecodeFailure, malformed, truncated } from "./decode.js";
import { u16, u8 } from "./read.js";

/** IPV6_HEADER_LEN is the fixed IPv6 header (RFC 8200 section 3). */
export const IPV6_HEADER_LEN = 40;
/** NEXT_HEADER_ICMPV6 is protocol 58. */
export const NEXT_HEADER_ICMPV6 = 58;

/** Ipv6Header locates the parts of an IPv6 packet within the frame; addresses stay in the frame's bytes. */
export interface Ipv6Header {
  readonly nextHeader: number;
  readonly hopLimit: number;
  /** Offsets of the source and destination addresses. */
  readonly src: number;
  readonly dst: number;
  /** Offset and length of the payload (what the header's payload length field covers). */
  readonly payload: number;
  readonly payloadLength: number;
}

/**
 * readIpv6Header checks an IPv6 header at `offset`.
 *
 *     0       4        12       16      18      19       20       24        40
 *     | ver 6 | class  | flow   | length | next  | hops   | source | destination |
 */
export function readIpv6Header(bytes: Uint8Array, offset: number): Ipv6Header | DecodeFailure {
  const have = bytes.length - offset;
  if (have < IPV6_HEADER_LEN) return truncated("ipv6", "header", IPV6_HEADER_LEN, Math.max(0, have));
  const version = u8(bytes, offset) >> 4;
  if (version !== 6) return malformed("ipv6", `version ${version} in an IPv6 EtherType frame`);
  const payloadLength = u16(bytes, offset + 4);
  if (have < IPV6_HEADER_LEN + payloadLength) return truncated("ipv6", "payload", IPV6_HEADER_LEN + payloadLength, have);
  return {
    nextHeader: u8(bytes, offset + 6),
    hopLimit: u8(bytes, offset + 7),
    src: offset + 8,
    dst: offset + 24,
    payload: offset + IPV6_HEADER_LEN,
    payloadLength,
  };
}

/**
 * icmpv6Checksum computes the ICMPv6 checksum (RFC 4443 section 2.3) over the pseudo-header (source, destination,
 * upper-layer length, next header 58) and the message, with the message's own checksum field taken as zero.
 */
export function icmpv6Checksum(bytes: Uint8Array, srcOff: number, dstOff: number, msgOff: number, msgLen: number): number {
  let sum = 0;
  for (let i = 0; i < 16; i += 2) sum += u16(bytes, srcOff + i) + u16(bytes, dstOff + i);
  sum += (msgLen >>> 16) + (msgLen & 0xffff) + NEXT_HEADER_ICMPV6;
  for (let i = 0; i < msgLen; i += 2) {
    if (i === 2) continue; // the checksum field
    sum += i + 1 < msgLen ? u16(bytes, msgOff + i) : u8(bytes, msgOff + i) << 8;
  }
  while (sum > 0xffff) sum = (sum & 0xffff) + Math.floor(sum / 0x10000);
  const c = ~sum & 0xffff;
  return c;
}
