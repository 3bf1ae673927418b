// Shared test fixtures: addresses from the documentation ranges (RFC 5737, RFC 7042).
import { execFileSync } from "node:child_process";
import type { Lens } from "../judge/ip-judgement.js";
import { nodeOfPoint } from "../judge/judge.js";
import { decodeFrame, newFrameFields, type FrameFields } from "../packet/frame.js";
import { LINKTYPE_ETHERNET } from "../packet/link.js";
import { encodeNdpFrame, solicitedNodeMulticast } from "../packet/ndp.js";
export const CLIENT_MAC = "02:00:5e:00:00:01";
export const NODE_A_MAC = "02:00:5e:00:00:0a";
export const NODE_B_MAC = "02:00:5e:00:00:0b";
export const NODE_C_MAC = "02:00:5e:00:00:0c";
export const CLIENT_IP = "192.0.2.1";
export const VIP = "192.0.2.200";
// The same over IPv6 (RFC 3849).
export const CLIENT6 = "2001:db8::1";
export const VIP6 = "2001:db8::c8";

/** hubLens is the hub's lens over `nodeOf`: a node's capture points see only that node's replies. */
export function hubLens(nodeOf: (mac: string) => string | null): Lens {
  return { nodeOf, watches: (mac, points) => [...points].some((p) => nodeOfPoint(p) === nodeOf(mac)) };
}

/** frameFields decodes one Ethernet frame into fresh FrameFields, as an agent's capture does; a frame that fails throws. */
export function frameFields(frame: Uint8Array): FrameFields {
  const f = newFrameFields();
  const err = decodeFrame(frame, LINKTYPE_ETHERNET, f);
  if (err !== null) throw new Error(err.message);
  return f;
}

/**
 * dadProbe is a Duplicate Address Detection NS as a host sends it before using `target` (RFC 4862 5.4.2): from the
 * unspecified address to the target's solicited-node group, with no source link-layer address option (RFC 4861
 * 7.2.2: "If the source address of the packet is the unspecified address, the node MUST NOT include" it).
 */
export function dadProbe(mac: string, target = VIP6): Uint8Array {
  const group = solicitedNodeMulticast(target);
  return encodeNdpFrame({
    ethDst: group.mac,
    ethSrc: mac,
    type: "ns",
    src: "::",
    dst: group.ip,
    target,
    router: false,
    solicited: false,
    override: false,
    options: [],
  });
}

/** hex turns "ff ff 08 06 ..." into bytes; spaces, newlines and "# comments" are ignored. */
export function hex(s: string): Uint8Array {
  const clean = s.replace(/#.*$/gm, "").replace(/\s+/g, "");
  return Uint8Array.from(clean.match(/../g) ?? [], (h) => parseInt(h, 16));
}

/** has tells whether a command-line tool is installed (the independent readers, Wireshark's, are set up by the README). */
export function has(tool: string): boolean {
  try {
    execFileSync(tool, ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
