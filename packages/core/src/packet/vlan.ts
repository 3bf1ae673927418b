import { ETHERNET_HEADER_LEN, TPID_8021Q, VLAN_TAG_LEN } from "./ethernet.js";
import { u16 } from "./read.js";

/**
 * VLAN_ID_MIN and VLAN_ID_MAX bound the VLAN IDs a frame can belong to. IEEE 802.1Q-2018 Table 9-2 reserves the
 * other two: 0 "indicates that the tag header contains only priority information; no VID is present in the frame",
 * and 0xFFF is reserved for implementation use.
 */
export const VLAN_ID_MIN = 1;
export const VLAN_ID_MAX = 4094;
/** VLAN_PRIORITY_MAX is the largest Priority Code Point (PCP, 3 bits). */
export const VLAN_PRIORITY_MAX = 7;
/** The MAC pair (destination 6, source 6) that every tag follows. */
const MACS_LEN = 12;
const VID_MASK = 0x0fff;

function checkVlanId(vlan: number): void {
  if (!Number.isInteger(vlan) || vlan < VLAN_ID_MIN || vlan > VLAN_ID_MAX)
    throw new RangeError(`vlan: VLAN ID ${vlan} is outside ${VLAN_ID_MIN}..${VLAN_ID_MAX}`);
}

function checkPriority(priority: number): void {
  if (!Number.isInteger(priority) || priority < 0 || priority > VLAN_PRIORITY_MAX)
    throw new RangeError(`vlan: priority ${priority} is outside 0..${VLAN_PRIORITY_MAX}`);
}

/**
 * tagFrame returns a copy of an Ethernet II frame with an 802.1Q tag inserted after the two MACs, as a trunk port
 * carries a frame of `vlan`. A frame that is already tagged gets a second, outer tag. DEI is 0.
 *
 *     untagged | dst 6 | src 6 | EtherType 2 | payload |
 *     tagged   | dst 6 | src 6 | TPID 0x8100 2 | PCP 3 bits | DEI 1 bit | VID 12 bits | EtherType 2 | payload |
 */
export function tagFrame(frame: Uint8Array, vlan: number, priority = 0): Uint8Array {
  checkVlanId(vlan);
  checkPriority(priority);
  if (frame.length < ETHERNET_HEADER_LEN)
    throw new RangeError(`vlan: a frame of ${frame.length} bytes has no Ethernet header (${ETHERNET_HEADER_LEN}) to tag`);
  const out = new Uint8Array(frame.length + VLAN_TAG_LEN);
  out.set(frame.subarray(0, MACS_LEN), 0);
  const tci = (priority << 13) | vlan;
  out[MACS_LEN] = TPID_8021Q >> 8;
  out[MACS_LEN + 1] = TPID_8021Q & 0xff;
  out[MACS_LEN + 2] = tci >> 8;
  out[MACS_LEN + 3] = tci & 0xff;
  out.set(frame.subarray(MACS_LEN), MACS_LEN + VLAN_TAG_LEN);
  return out;
}

/** An Untagged frame is what untagFrame returns: the outer tag's VLAN ID (null without one) and the rest. */
export interface Untagged {
  readonly vlan: number | null;
  readonly frame: Uint8Array;
}

/**
 * untagFrame removes one outer 802.1Q tag (TPID 0x8100) and returns its VLAN ID with a copy of the frame without it.
 * A frame without that tag comes back as it is (the same array) with `vlan` null; so does one that ends inside its
 * tag, for the decoders to refuse as truncated. 802.1ad service tags (0x88a8) are not 802.1Q tags: such frames come
 * back as they are. A priority tag (VID 0) is removed and `vlan` is null: no VID is present (802.1Q-2018 Table 9-2).
 */
export function untagFrame(frame: Uint8Array): Untagged {
  if (frame.length < MACS_LEN + VLAN_TAG_LEN + 2 || u16(frame, MACS_LEN) !== TPID_8021Q) return { vlan: null, frame };
  const vid = u16(frame, MACS_LEN + 2) & VID_MASK;
  const out = new Uint8Array(frame.length - VLAN_TAG_LEN);
  out.set(frame.subarray(0, MACS_LEN), 0);
  out.set(frame.subarray(MACS_LEN + VLAN_TAG_LEN), MACS_LEN);
  return { vlan: vid === 0 ? null : vid, frame: out };
}
