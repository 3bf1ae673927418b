import { ARP_OP_REPLY, ARP_OP_REQUEST, decodeArp } from "./arp.js";
import { ETHERTYPE_ARP, decodeEthernet } from "./ethernet.js";
import type { DecodeFailure } from "./decode.js";

/**
 * ArpKind is what an ARP frame means for the IP it is about (RFC 826, RFC 5227 section 2.1 and 3):
 * - `request`: who-has TPA, tell SPA.
 * - `reply`: SPA is-at SHA, sent to the requester.
 * - `gratuitous-request`: an announcement, a request with SPA = TPA (RFC 5227 "ARP Announcement").
 * - `gratuitous-reply`: a reply with SPA = TPA. Linux only accepts it when THA = SHA and Junos ignores it by
 *   default, so its THA is kept.
 * - `probe`: a request with SPA 0.0.0.0 (RFC 5227 "ARP Probe"), a host checking that an address is free.
 */
export type ArpKind = "request" | "reply" | "gratuitous-request" | "gratuitous-reply" | "probe";

/** An ArpObservation is one classified ARP frame, about one IP. */
export interface ArpObservation {
  readonly kind: ArpKind;
  /** The IP this frame is about: TPA for requests and probes, SPA for replies and announcements. */
  readonly ip: string;
  /** The MAC the frame speaks for: the answer (SHA) for replies and announcements, the asker (SHA) for requests. */
  readonly mac: string;
  /** For requests and probes, the asker's IP; for replies, the IP the reply goes to (TPA). */
  readonly peerIp: string;
  /** THA as sent: recorded for every frame, it decides whether Linux accepts a gratuitous reply. */
  readonly targetMac: string;
  readonly ethSrc: string;
  readonly ethDst: string;
  /** Outermost VLAN ID, or null when untagged. */
  readonly vlan: number | null;
  /**
   * arpwatch's "ethernet mismatch": the Ethernet source differs from the ARP sender MAC. Microsoft NLB does this on
   * purpose, so it is flagged, never dropped.
   */
  readonly ethernetMismatch: boolean;
}

/** A FrameOutcome says what became of one captured frame: an observation, or the reason it was dropped. */
export type FrameOutcome =
  | { readonly kind: "observed"; readonly obs: ArpObservation }
  | { readonly kind: "dropped"; readonly reason: "notArp" | DecodeFailure["reason"]; readonly message: string };

/** classifyArpFrame decodes an Ethernet frame and classifies the ARP packet in it. It never throws. */
export function classifyArpFrame(bytes: Uint8Array): FrameOutcome {
  const eth = decodeEthernet(bytes);
  if (!eth.ok) return { kind: "dropped", reason: eth.reason, message: eth.message };
  const { etherType, payloadOffset } = eth.value;
  if (etherType !== ETHERTYPE_ARP) {
    return { kind: "dropped", reason: "notArp", message: `ethernet: EtherType 0x${etherType.toString(16).padStart(4, "0")} is not ARP` };
  }
  const arp = decodeArp(bytes, payloadOffset);
  if (!arp.ok) return { kind: "dropped", reason: arp.reason, message: arp.message };
  const a = arp.value;
  let kind: ArpKind;
  if (a.op === ARP_OP_REQUEST) {
    kind = a.senderIp === "0.0.0.0" ? "probe" : a.senderIp === a.targetIp ? "gratuitous-request" : "request";
  } else if (a.op === ARP_OP_REPLY) {
    kind = a.senderIp === a.targetIp ? "gratuitous-reply" : "reply";
  } else {
    return { kind: "dropped", reason: "unsupported", message: `arp: operation ${a.op} is neither request nor reply` };
  }
  const asks = kind === "request" || kind === "probe";
  return {
    kind: "observed",
    obs: {
      kind,
      ip: asks ? a.targetIp : a.senderIp,
      mac: a.senderMac,
      peerIp: asks ? a.senderIp : a.targetIp,
      targetMac: a.targetMac,
      ethSrc: eth.value.src,
      ethDst: eth.value.dst,
      vlan: eth.value.vlans[0] ?? null,
      ethernetMismatch: eth.value.src !== a.senderMac,
    },
  };
}
