import { formatIPv4Number, formatMacNumber } from "./addr.js";
import type { DecodeFailure } from "./decode.js";
import { type FrameFields, type ObservationKind, decodeFrame, newFrameFields } from "./frame.js";
import { LINKTYPE_ETHERNET, NO_MAC } from "./link.js";

/** An Observation is one classified ARP or NDP frame, about one IP, with textual addresses. */
export interface Observation {
  readonly kind: ObservationKind;
  /** The IP this frame is about: TPA for requests and probes, SPA for replies and announcements, the NDP target. */
  readonly ip: string;
  /** The MAC the frame speaks for: the answer for replies and announcements, the asker for requests. */
  readonly mac: string;
  /** For requests, the asker's IP; for replies, the IP the reply goes to. */
  readonly peerIp: string;
  /** THA as sent (ARP); it decides whether Linux accepts a gratuitous reply. Null for NDP. */
  readonly targetMac: string | null;
  /** Link source; null when the capture's link header has none. */
  readonly ethSrc: string | null;
  readonly ethDst: string | null;
  /** Outermost VLAN ID, or null when untagged. */
  readonly vlan: number | null;
  /**
   * arpwatch's "ethernet mismatch": the link source differs from the ARP sender MAC. Microsoft NLB does this on
   * purpose, so it is flagged, never dropped. Always false for NDP.
   */
  readonly ethernetMismatch: boolean;
}

/** A FrameOutcome says what became of one frame: an observation, or the reason it was dropped. */
export type FrameOutcome =
  | { readonly kind: "observed"; readonly obs: Observation }
  | { readonly kind: "dropped"; readonly reason: DecodeFailure["reason"]; readonly message: string };

const mac = (n: number): string | null => (n === NO_MAC ? null : formatMacNumber(n));

/** toObservation renders decoded FrameFields with textual addresses. */
export function toObservation(f: FrameFields): Observation {
  const v4 = f.family === 4;
  return {
    kind: f.kind,
    ip: v4 ? formatIPv4Number(f.ip4) : f.ip6,
    mac: formatMacNumber(f.mac),
    peerIp: v4 ? formatIPv4Number(f.peer4) : f.peer6,
    targetMac: v4 ? mac(f.targetMac) : null,
    ethSrc: mac(f.src),
    ethDst: mac(f.dst),
    vlan: f.vlan === -1 ? null : f.vlan,
    ethernetMismatch: v4 && f.src !== NO_MAC && f.src !== f.mac,
  };
}

/** classifyFrame decodes and classifies one frame (Ethernet unless `linkType` says otherwise). It never throws. */
export function classifyFrame(bytes: Uint8Array, linkType: number = LINKTYPE_ETHERNET): FrameOutcome {
  const f = newFrameFields();
  const err = decodeFrame(bytes, linkType, f);
  if (err !== null) return { kind: "dropped", reason: err.reason, message: err.message };
  return { kind: "observed", obs: toObservation(f) };
}
