// How the lab carries VLANs. This kernel has no 802.1Q module, so there are no VLAN devices: a VLAN travels as a trunk
// port carries it, as tagged frames on the untagged veths, and the lab's requester and speakers add and remove the
// tags in user space. The node kernels drop tagged frames: with no VLAN device for a non-zero VID, Linux marks the
// frame PACKET_OTHERHOST in __netif_receive_skb_core and neither ARP nor NDP answers it. Measured here with tcpdump in
// the client namespace: a tagged ARP request for a node's own address, or for a VIP on its kube-ipvs0, gets no reply
// (dual-stack.test.ts keeps checking it).
import {
  VLAN_ID_MAX,
  VLAN_ID_MIN,
  goIPString,
  gratuitousFrames,
  ipKey,
  isIPv4,
  newArpRequest,
  newNeighborSolicitation,
  normalizeIpKey,
  speakerDecision,
  splitIpKey,
  tagFrame,
  untagFrame,
  type SpeakerDecision,
  type SpeakerInterface,
} from "@whohas/core";

/** A VlanIp is an address as the lab names it on the wire: untagged (vlan null), or on one VLAN. */
export interface VlanIp {
  readonly ip: string;
  readonly vlan: number | null;
}

/**
 * parseVlanIp reads "IP" or "IP@VLAN" ("198.18.0.230@30", "2001:2::230@40") as core's IP keys do, the IP in the form
 * Go and core's decoders print (RFC 5952 for IPv6), so that two spellings of one address name the same thing.
 */
export function parseVlanIp(text: string): VlanIp {
  const key = normalizeIpKey(text);
  if (key !== null) {
    const { ip, vlan } = splitIpKey(key);
    return { ip, vlan };
  }
  const at = text.lastIndexOf("@");
  if (at === -1 || goIPString(text.slice(0, at)) === null) throw new TypeError(`not an IP address, or IP@VLAN: ${JSON.stringify(text)}`);
  throw new RangeError(
    `VLAN ${JSON.stringify(text.slice(at + 1))} in ${JSON.stringify(text)} is not a VLAN ID (${VLAN_ID_MIN}..${VLAN_ID_MAX})`,
  );
}

/** vlanIpText writes a VlanIp back as "IP" or "IP@VLAN": its IP key. */
export function vlanIpText(v: VlanIp): string {
  return ipKey(v.ip, v.vlan);
}

const tagged = (frame: Uint8Array, vlan: number | null): Uint8Array => (vlan === null ? frame : tagFrame(frame, vlan));

/** A Requester is who asks: the client's MAC and its addresses of each family. */
export interface Requester {
  readonly mac: string;
  readonly ip: string;
  readonly ip6: string | null;
}

/**
 * requestFor is the frame a client sends to find `target`: a broadcast ARP request for IPv4, a Neighbor Solicitation
 * to the solicited-node group for IPv6; inside an 802.1Q tag when the target is on a VLAN.
 */
export function requestFor(from: Requester, target: VlanIp): Uint8Array {
  if (isIPv4(target.ip)) return tagged(newArpRequest(from.mac, from.ip, target.ip), target.vlan);
  if (from.ip6 === null) throw new TypeError(`asking for ${vlanIpText(target)} needs an IPv6 address to ask from`);
  return tagged(newNeighborSolicitation(from.mac, from.ip6, target.ip), target.vlan);
}

/**
 * trunkDecision answers a frame heard on a trunk: core's speaker decides on the untagged frame, for the (VLAN,
 * address) pairs `owns` accepts (written as vlanIpText), and the reply goes back in the request's tag. An untagged
 * entry answers untagged requests only, and an entry on a VLAN only requests tagged with that VLAN, as a speaker
 * attached to that VLAN's interface would.
 */
export function trunkDecision(iface: SpeakerInterface, owns: (key: string) => boolean, frame: Uint8Array): SpeakerDecision {
  const { vlan, frame: inner } = untagFrame(frame);
  const d = speakerDecision(iface, (ip) => owns(vlanIpText({ ip, vlan })), inner);
  return d.kind === "reply" ? { ...d, frame: tagged(d.frame, vlan) } : d;
}

/** trunkGratuitous is one of MetalLB's gratuitous bursts for an owned entry, tagged when it is on a VLAN. */
export function trunkGratuitous(iface: SpeakerInterface, owned: VlanIp): Uint8Array[] {
  return gratuitousFrames(iface, owned.ip).map((f) => tagged(f, owned.vlan));
}
