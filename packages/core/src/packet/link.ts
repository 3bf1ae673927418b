import { type DecodeFailure, type DecodeResult, malformed, ok, truncated, unsupported } from "./decode.js";
import { formatMacNumber, macToNumber } from "./addr.js";
import { u16, u8 } from "./read.js";
import { ETHERNET_HEADER_LEN, MAX_VLAN_TAGS, TPID_8021AD, TPID_8021Q, TPID_QINQ_LEGACY, VLAN_TAG_LEN } from "./ethernet.js";

/** Link-layer header types of capture files (tcpdump.org/linktypes.html). */
export const LINKTYPE_ETHERNET = 1;
/** LINKTYPE_LINUX_SLL is Linux "cooked" capture v1, what `tcpdump -i any` writes on older libpcap. */
export const LINKTYPE_LINUX_SLL = 113;
/** LINKTYPE_LINUX_SLL2 is Linux "cooked" capture v2, what `tcpdump -i any` writes since libpcap 1.10. */
export const LINKTYPE_LINUX_SLL2 = 276;

export const SLL_HEADER_LEN = 16;
export const SLL2_HEADER_LEN = 20;
/** ARPHRD_ETHER is the Linux hardware type of Ethernet links in cooked headers. */
const ARPHRD_ETHER = 1;

/** NO_MAC marks a link address the header does not carry (cooked captures have no destination). */
export const NO_MAC = -1;

/**
 * LinkFields is the link layer of one frame, written in place by decodeLink so that the capture and file loops
 * allocate nothing per frame. MACs are macToNumber values.
 */
export interface LinkFields {
  src: number;
  dst: number;
  /** Outermost VLAN ID, or -1 when untagged. */
  vlan: number;
  etherType: number;
  /** Where the network-layer payload starts. */
  payload: number;
}

/** newLinkFields returns a LinkFields to reuse across frames. */
export function newLinkFields(): LinkFields {
  return { src: NO_MAC, dst: NO_MAC, vlan: -1, etherType: 0, payload: 0 };
}

function isTpid(t: number): boolean {
  return t === TPID_8021Q || t === TPID_8021AD || t === TPID_QINQ_LEGACY;
}

/**
 * decodeLink reads the link header of `linkType` and any VLAN tags into `out`; returns null on success.
 *
 *     Ethernet II   | dst 6 | src 6 | type 2 |                     (type = TPID: | TCI 2 | type 2 | per tag)
 *     SLL  (v1)     | pkttype 2 | hatype 2 | halen 2 | addr 8 | protocol 2 |
 *     SLL2          | protocol 2 | reserved 2 | ifindex 4 | hatype 2 | pkttype 1 | halen 1 | addr 8 |
 *
 * Cooked headers carry only the sender's address, so `dst` is NO_MAC there. The frame is bytes[start, end): a file
 * reader passes its own buffer and offsets instead of a view per packet.
 */
export function decodeLink(bytes: Uint8Array, linkType: number, out: LinkFields, start = 0, end = bytes.length): DecodeFailure | null {
  const have = end - start;
  let pos: number;
  let type: number;
  out.vlan = -1;
  if (linkType === LINKTYPE_ETHERNET) {
    if (have < ETHERNET_HEADER_LEN) return truncated("ethernet", "header", ETHERNET_HEADER_LEN, have);
    out.dst = macToNumber(bytes, start);
    out.src = macToNumber(bytes, start + 6);
    pos = start + 12;
    type = u16(bytes, pos);
  } else if (linkType === LINKTYPE_LINUX_SLL || linkType === LINKTYPE_LINUX_SLL2) {
    const v2 = linkType === LINKTYPE_LINUX_SLL2;
    const len = v2 ? SLL2_HEADER_LEN : SLL_HEADER_LEN;
    const name = v2 ? "sll2" : "sll";
    if (have < len) return truncated(name, "header", len, have);
    const hatype = u16(bytes, start + (v2 ? 8 : 2));
    const halen = v2 ? u8(bytes, start + 11) : u16(bytes, start + 4);
    if (hatype !== ARPHRD_ETHER) return unsupported(name, `hardware type ${hatype} is not Ethernet`);
    out.src = halen === 6 ? macToNumber(bytes, start + (v2 ? 12 : 6)) : NO_MAC;
    out.dst = NO_MAC;
    pos = start + (v2 ? 0 : 14);
    type = u16(bytes, pos);
    if (v2) {
      // SLL2 puts the protocol first; VLAN tags, when present, follow the cooked header.
      if (!isTpid(type)) {
        out.etherType = type;
        out.payload = start + len;
        return null;
      }
      pos = start + len - 2;
    }
  } else {
    return unsupported("link", `link type ${linkType} is not Ethernet, SLL or SLL2`);
  }
  let tags = 0;
  while (isTpid(type)) {
    if (tags === MAX_VLAN_TAGS) return malformed("ethernet", `more than ${MAX_VLAN_TAGS} VLAN tags`);
    const need = pos - start + 2 + VLAN_TAG_LEN;
    if (have < need) return truncated("ethernet", "VLAN tag", need, have);
    if (tags === 0) out.vlan = u16(bytes, pos + 2) & 0x0fff;
    tags++;
    pos += VLAN_TAG_LEN;
    type = u16(bytes, pos);
  }
  out.etherType = type;
  out.payload = pos + 2;
  return null;
}

/** An EthernetFrame is the Ethernet II header of a frame with its VLAN tags. */
export interface EthernetFrame {
  readonly dst: string;
  readonly src: string;
  /** Outermost VLAN ID, or null when untagged. */
  readonly vlan: number | null;
  readonly etherType: number;
  /** Offset of the payload within the bytes given to decodeEthernet. */
  readonly payloadOffset: number;
}

/**
 * decodeEthernet reads an Ethernet II header and any 802.1Q / 802.1ad tags (see decodeLink for the layout).
 * 802.3 length fields (type < 0x0600) come back as `etherType` for the caller to refuse.
 */
export function decodeEthernet(bytes: Uint8Array): DecodeResult<EthernetFrame> {
  const f = newLinkFields();
  const err = decodeLink(bytes, LINKTYPE_ETHERNET, f);
  if (err !== null) return err;
  return ok({
    dst: formatMacNumber(f.dst),
    src: formatMacNumber(f.src),
    vlan: f.vlan === -1 ? null : f.vlan,
    etherType: f.etherType,
    payloadOffset: f.payload,
  });
}
