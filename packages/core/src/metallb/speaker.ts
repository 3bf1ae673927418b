import { ARP_OP_REPLY, ARP_OP_REQUEST, newArpReply, newGratuitousArp } from "../packet/arp.js";
import { BROADCAST_MAC, isIPv4 } from "../packet/addr.js";
import { classifyFrame } from "../packet/classify.js";
import { decodeNdp, linkLayerAddress, newSolicitedAdvertisement, newUnsolicitedAdvertisement } from "../packet/ndp.js";
import { decodeEthernet } from "../packet/link.js";
import { ETHERTYPE_ARP, ETHERTYPE_IPV6 } from "../packet/ethernet.js";

/**
 * SpeakerDropReason mirrors MetalLB's dropReason (internal/layer2): why a speaker did not answer a frame.
 * - `error`: the frame could not be decoded.
 * - `arpReply`: an ARP frame that is not a request.
 * - `ethernetDestination`: a request neither broadcast nor sent to this interface's MAC.
 * - `announceIP`: a request for an IP this speaker does not announce.
 * - `messageType`: an NDP message that is not a Neighbor Solicitation.
 * - `noSourceLL`: an NS without a source link-layer option (duplicate address detection probes are never answered).
 */
export type SpeakerDropReason = "error" | "arpReply" | "ethernetDestination" | "announceIP" | "messageType" | "noSourceLL";

/** A SpeakerInterface is the link a speaker answers on. */
export interface SpeakerInterface {
  readonly name: string;
  readonly mac: string;
  /** The interface's IPv6 link-local address: NDP answers come from it (ndp.Listen with ndp.LinkLocal). */
  readonly linkLocal: string | null;
}

/** A SpeakerDecision is a frame to send back, or why not: handlers return a drop reason. */
export type SpeakerDecision =
  | { readonly kind: "reply"; readonly ip: string; readonly frame: Uint8Array }
  | { readonly kind: "drop"; readonly reason: SpeakerDropReason };

const drop = (reason: SpeakerDropReason): SpeakerDecision => ({ kind: "drop", reason });

/** arpDecision answers an ARP request the way MetalLB's arpResponder.processRequest does. */
export function arpDecision(iface: SpeakerInterface, announces: (ip: string) => boolean, frame: Uint8Array): SpeakerDecision {
  const out = classifyFrame(frame);
  if (out.kind === "dropped") return drop("error");
  const o = out.obs;
  // Only requests (announcements and probes are requests too, as in MetalLB, which checks the operation alone).
  if (o.kind !== "request" && o.kind !== "gratuitous-request" && o.kind !== "probe") return drop("arpReply");
  if (o.ethDst !== BROADCAST_MAC && o.ethDst !== iface.mac) return drop("ethernetDestination");
  if (!announces(o.ip)) return drop("announceIP");
  return { kind: "reply", ip: o.ip, frame: newArpReply(iface.mac, o.ip, o.mac, o.peerIp) };
}

/** ndpDecision answers a Neighbor Solicitation the way MetalLB's ndpResponder.processRequest does. */
export function ndpDecision(iface: SpeakerInterface, announces: (ip: string) => boolean, frame: Uint8Array): SpeakerDecision {
  const eth = decodeEthernet(frame);
  if (!eth.ok || eth.value.etherType !== ETHERTYPE_IPV6) return drop("error");
  const m = decodeNdp(frame, eth.value.payloadOffset);
  if (!m.ok) return drop(m.reason === "unsupported" ? "messageType" : "error");
  if (m.value.type !== "ns") return drop("messageType");
  const sll = linkLayerAddress(m.value, "source-lla");
  if (sll === null) return drop("noSourceLL");
  if (!announces(m.value.target)) return drop("announceIP");
  if (iface.linkLocal === null) return drop("error");
  return {
    kind: "reply",
    ip: m.value.target,
    frame: newSolicitedAdvertisement(iface.mac, iface.linkLocal, m.value.target, sll, m.value.src),
  };
}

/** decide routes a frame to the ARP or NDP responder by EtherType. */
export function speakerDecision(iface: SpeakerInterface, announces: (ip: string) => boolean, frame: Uint8Array): SpeakerDecision {
  const eth = decodeEthernet(frame);
  if (!eth.ok) return drop("error");
  if (eth.value.etherType === ETHERTYPE_ARP) return arpDecision(iface, announces, frame);
  if (eth.value.etherType === ETHERTYPE_IPV6) return ndpDecision(iface, announces, frame);
  return drop("error");
}

/** gratuitousFrames is one burst: ARP request then reply for IPv4 (arp.go Gratuitous), one unsolicited NA for IPv6. */
export function gratuitousFrames(iface: SpeakerInterface, ip: string): Uint8Array[] {
  if (isIPv4(ip)) return [newGratuitousArp(ARP_OP_REQUEST, iface.mac, ip), newGratuitousArp(ARP_OP_REPLY, iface.mac, ip)];
  if (iface.linkLocal === null) return [];
  return [newUnsolicitedAdvertisement(iface.mac, iface.linkLocal, ip)];
}

/**
 * GRATUITOUS_WINDOW_MS and GRATUITOUS_TICK_MS: after MetalLB PR #736 (v0.10.0) every SetBalancer call extends the
 * announcing window to 5 s from now, and one sender loop ticks every 1.1 s: longer than Linux's 1 s ARP locktime,
 * so that each burst updates the neighbour caches instead of being ignored (metallb/metallb#172).
 */
export const GRATUITOUS_WINDOW_MS = 5000;
export const GRATUITOUS_TICK_MS = 1100;

/**
 * A GratuitousScheduler decides when a speaker sends gratuitous bursts, as MetalLB's announcer spamLoop does. It owns
 * no timer: the caller calls set() on each SetBalancer and tick() every GRATUITOUS_TICK_MS, and sends the bursts for
 * the IPs returned.
 */
export class GratuitousScheduler {
  readonly #until = new Map<string, number>();

  /** set extends the IP's window; returns true when the IP was not being announced, so a burst goes out at once. */
  set(ip: string, now: number): boolean {
    const fresh = !this.#until.has(ip);
    this.#until.set(ip, now + GRATUITOUS_WINDOW_MS);
    return fresh;
  }

  /** tick returns the IPs to announce now and forgets those whose window has passed. */
  tick(now: number): string[] {
    const out: string[] = [];
    for (const [ip, until] of this.#until) {
      if (now > until) this.#until.delete(ip);
      else out.push(ip);
    }
    return out;
  }

  /** delete stops announcing at once; MetalLB sends no goodbye frame on withdraw. */
  delete(ip: string): void {
    this.#until.delete(ip);
  }
}
