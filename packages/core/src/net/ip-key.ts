import { goIPString, isIP } from "../packet/addr.js";

/**
 * An IP key names an address on one link: the address itself when it was seen untagged, `ADDRESS@VLAN` when it was
 * seen inside an 802.1Q tag. The same address on two VLANs is two keys (two broadcast domains, two sets of
 * responders); the hub and the analyzer judge, store and list keys, and show the address and its VLAN apart.
 */
export function ipKey(ip: string, vlan: number | null | undefined): string {
  return vlan === null || vlan === undefined ? ip : `${ip}@${vlan}`;
}

/** An IpKeyParts is a key taken apart: the address, its VLAN (null: untagged) and its family. */
export interface IpKeyParts {
  readonly ip: string;
  readonly vlan: number | null;
  readonly family: 4 | 6;
}

/** splitIpKey takes a key apart (a bare address is its own key, untagged). */
export function splitIpKey(key: string): IpKeyParts {
  const at = key.lastIndexOf("@");
  const ip = at < 0 ? key : key.slice(0, at);
  const vlan = at < 0 ? null : Number(key.slice(at + 1));
  return { ip, vlan, family: ip.includes(":") ? 6 : 4 };
}

/** isVlanId: an 802.1Q VLAN id that names a VLAN (0 is a priority tag on the native VLAN, 4095 is reserved). */
export function isVlanId(n: number): boolean {
  return Number.isInteger(n) && n >= 1 && n <= 4094;
}

/** isIpKey: an address, optionally followed by @ and a VLAN id. */
export function isIpKey(s: string): boolean {
  const at = s.lastIndexOf("@");
  if (at < 0) return isIP(s);
  const vlan = s.slice(at + 1);
  return /^[1-9]\d{0,3}$/.test(vlan) && isVlanId(Number(vlan)) && isIP(s.slice(0, at));
}

/**
 * keyBatch turns, in place, the addresses of an agent's batch into IP keys: an entry or a request report seen inside
 * a VLAN tag gets its VLAN in its `ip`, and its `vlan` is cleared, so a batch keyed twice stays the same.
 */
export function keyBatch(batch: {
  readonly entries: readonly { ip: string; vlan?: number | null }[];
  readonly requests: readonly { ip: string; vlan?: number | null }[];
}): void {
  for (const e of batch.entries) keyOnLink(e);
  for (const r of batch.requests) keyOnLink(r);
}

/** keyOnLink turns, in place, the address of one entry or request report into its IP key, as keyBatch does. */
export function keyOnLink(x: { ip: string; vlan?: number | null }): void {
  if (x.vlan === null || x.vlan === undefined) return;
  x.ip = ipKey(x.ip, x.vlan);
  x.vlan = null;
}

/**
 * normalizeIpKey writes a key as the judge knows it: IPv6 compressed (RFC 5952), an IPv4-mapped IPv6 as IPv4, the
 * VLAN without leading zeros; null when it is not an address, optionally with @VLAN.
 */
export function normalizeIpKey(s: string): string | null {
  const at = s.lastIndexOf("@");
  const ip = goIPString(at < 0 ? s : s.slice(0, at));
  if (ip === null) return null;
  if (at < 0) return ip;
  const text = s.slice(at + 1);
  const vlan = Number(text);
  return /^\d{1,4}$/.test(text) && isVlanId(vlan) ? ipKey(ip, vlan) : null;
}
