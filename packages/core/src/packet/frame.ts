import { type DecodeFailure, unsupported } from "./decode.js";
import { ARP_OP_REPLY, ARP_OP_REQUEST, newArpFields, readArp } from "./arp.js";
import { ETHERTYPE_ARP, ETHERTYPE_IPV6 } from "./ethernet.js";
import { type LinkFields, NO_MAC, decodeLink, newLinkFields } from "./link.js";
import { decodeNdp, linkLayerAddress } from "./ndp.js";
import { macToNumber, parseMac } from "./addr.js";

/**
 * ObservationKind is what a frame means for the IP it is about:
 * - ARP (RFC 826, RFC 5227): `request`, `reply`, `gratuitous-request` (an announcement: SPA = TPA), `gratuitous-reply`
 *   (SPA = TPA; Linux accepts it only when THA = SHA, Junos ignores it by default), `probe` (SPA 0.0.0.0).
 * - NDP (RFC 4861): `ns` (a solicitation), `ns-dad` (duplicate address detection: source ::), `na-solicited` (S=1, an
 *   answer), `na-unsolicited` (S=0, an announcement).
 * OBSERVATION_KINDS lists them once, for the capture point and the wire schema alike, so a new kind cannot reach one
 * and miss the other.
 */
export const OBSERVATION_KINDS = [
  "request",
  "reply",
  "gratuitous-request",
  "gratuitous-reply",
  "probe",
  "ns",
  "ns-dad",
  "na-solicited",
  "na-unsolicited",
] as const;
export type ObservationKind = (typeof OBSERVATION_KINDS)[number];

/** ObservationRole groups kinds by what they say about who owns the IP. */
export type ObservationRole = "ask" | "answer" | "announce";

/** roleOf tells whether a kind asks for the IP, answers a question, or announces unasked. */
export function roleOf(kind: ObservationKind): ObservationRole {
  switch (kind) {
    case "request":
    case "probe":
    case "ns":
    case "ns-dad":
      return "ask";
    case "reply":
    case "na-solicited":
      return "answer";
    case "gratuitous-request":
    case "gratuitous-reply":
    case "na-unsolicited":
      return "announce";
  }
}

/** IGNORED means a frame that is neither ARP nor NDP: counted, not analysed. */
export const IGNORED: DecodeFailure = { ok: false, reason: "ignored", message: "frame is neither ARP nor an NDP neighbor message" };

/**
 * FrameFields is one classified frame, written in place by decodeFrame: the ARP fast path allocates nothing, so a
 * file loop can run at millions of frames per second. IPv4 addresses are ipv4ToNumber values, IPv6 ones text; MACs
 * are macToNumber values (NO_MAC when absent).
 */
export interface FrameFields extends LinkFields {
  kind: ObservationKind;
  family: 4 | 6;
  /** The IP the frame is about (TPA of requests, SPA of replies, the NDP target). */
  ip4: number;
  ip6: string;
  /** The MAC the frame speaks for: the asker (requests) or the answer (replies, announcements, NA target LLA). */
  mac: number;
  /** The other party: the asker's IP of a request, the destination of a reply. */
  peer4: number;
  peer6: string;
  /** THA of ARP frames (NO_MAC for NDP). */
  targetMac: number;
  /** NA override flag (false otherwise). */
  override: boolean;
}

/** newFrameFields returns a FrameFields to reuse across frames. */
export function newFrameFields(): FrameFields {
  return {
    ...newLinkFields(),
    kind: "request",
    family: 4,
    ip4: 0,
    ip6: "",
    mac: NO_MAC,
    peer4: 0,
    peer6: "",
    targetMac: NO_MAC,
    override: false,
  };
}

const arp = newArpFields();

/**
 * decodeFrame decodes and classifies one frame of `linkType` into `out`; null on success, else why it was dropped.
 * It never throws: every read is bounds-checked first. The frame is bytes[start, end).
 */
export function decodeFrame(bytes: Uint8Array, linkType: number, out: FrameFields, start = 0, end = bytes.length): DecodeFailure | null {
  const linkErr = decodeLink(bytes, linkType, out, start, end);
  if (linkErr !== null) return linkErr;
  if (out.etherType === ETHERTYPE_ARP) {
    const err = readArp(bytes, out.payload, arp, end);
    if (err !== null) return err;
    out.family = 4;
    out.targetMac = arp.tha;
    out.mac = arp.sha;
    out.override = false;
    if (arp.op === ARP_OP_REQUEST) {
      out.kind = arp.spa === 0 ? "probe" : arp.spa === arp.tpa ? "gratuitous-request" : "request";
      out.ip4 = arp.tpa;
      out.peer4 = arp.spa;
    } else if (arp.op === ARP_OP_REPLY) {
      out.kind = arp.spa === arp.tpa ? "gratuitous-reply" : "reply";
      out.ip4 = arp.spa;
      out.peer4 = arp.tpa;
    } else {
      return unsupported("arp", `operation ${arp.op} is neither request nor reply`);
    }
    return null;
  }
  if (out.etherType === ETHERTYPE_IPV6) {
    const r = decodeNdp(end === bytes.length ? bytes : bytes.subarray(0, end), out.payload);
    if (!r.ok) return r.reason === "unsupported" ? IGNORED : r;
    const m = r.value;
    out.family = 6;
    out.ip6 = m.target;
    out.targetMac = NO_MAC;
    out.override = m.override;
    if (m.type === "ns") {
      const lla = linkLayerAddress(m, "source-lla");
      out.kind = m.src === "::" ? "ns-dad" : "ns";
      out.mac = lla === null ? out.src : macToNumber(parseMac(lla), 0);
      out.peer6 = m.src;
    } else {
      const lla = linkLayerAddress(m, "target-lla");
      out.kind = m.solicited ? "na-solicited" : "na-unsolicited";
      out.mac = lla === null ? out.src : macToNumber(parseMac(lla), 0);
      out.peer6 = m.dst;
    }
    return null;
  }
  return IGNORED;
}
