import { type DecodeResult, ok, truncated, malformed } from "./decode.js";
import { formatMac } from "./addr.js";
import { u16 } from "./read.js";

/** ETHERNET_HEADER_LEN is destination (6) + source (6) + EtherType (2). */
export const ETHERNET_HEADER_LEN = 14;
/** VLAN_TAG_LEN is one 802.1Q / 802.1ad tag: TPID (2) + TCI (2). */
export const VLAN_TAG_LEN = 4;
/** MAX_VLAN_TAGS bounds tag stacking; real networks use one (802.1Q) or two (802.1ad Q-in-Q). */
export const MAX_VLAN_TAGS = 4;

export const ETHERTYPE_IPV4 = 0x0800;
export const ETHERTYPE_ARP = 0x0806;
export const ETHERTYPE_IPV6 = 0x86dd;
export const TPID_8021Q = 0x8100;
export const TPID_8021AD = 0x88a8;
/** TPID_QINQ_LEGACY is the pre-standard Q-in-Q TPID still emitted by some switches. */
export const TPID_QINQ_LEGACY = 0x9100;

/** An EthernetFrame is the Ethernet II header of a frame with its VLAN tags, pointing into the original bytes. */
export interface EthernetFrame {
  readonly dst: string;
  readonly src: string;
  /** VLAN IDs outermost first; empty when untagged. */
  readonly vlans: readonly number[];
  readonly etherType: number;
  /** Offset of the payload within the bytes given to decodeEthernet. */
  readonly payloadOffset: number;
}

function isTpid(t: number): boolean {
  return t === TPID_8021Q || t === TPID_8021AD || t === TPID_QINQ_LEGACY;
}

/**
 * decodeEthernet reads an Ethernet II header and any 802.1Q / 802.1ad tags.
 *
 *     0                   6                   12      14
 *     | destination MAC   | source MAC        | type  | payload ...
 *                                             | TPID  | TCI   | type ... (per tag)
 *
 * 802.3 length fields (type < 0x0600) are reported as unsupported by the caller through `etherType`.
 */
export function decodeEthernet(bytes: Uint8Array): DecodeResult<EthernetFrame> {
  if (bytes.length < ETHERNET_HEADER_LEN) return truncated("ethernet", "header", ETHERNET_HEADER_LEN, bytes.length);
  let pos = 12;
  let type = u16(bytes, pos);
  const vlans: number[] = [];
  while (isTpid(type)) {
    if (vlans.length === MAX_VLAN_TAGS) return malformed("ethernet", `more than ${MAX_VLAN_TAGS} VLAN tags`);
    if (bytes.length < pos + 2 + VLAN_TAG_LEN) {
      return truncated("ethernet", "VLAN tag", pos + 2 + VLAN_TAG_LEN, bytes.length);
    }
    vlans.push(u16(bytes, pos + 2) & 0x0fff);
    pos += VLAN_TAG_LEN;
    type = u16(bytes, pos);
  }
  return ok({ dst: formatMac(bytes, 0), src: formatMac(bytes, 6), vlans, etherType: type, payloadOffset: pos + 2 });
}
