// Textual forms of link-layer and IPv4 addresses, read straight out of a frame without copying it.

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** MAC_LEN is the length of an Ethernet (EUI-48) address. */
export const MAC_LEN = 6;

/** BROADCAST_MAC is the all-ones Ethernet address. */
export const BROADCAST_MAC = "ff:ff:ff:ff:ff:ff";

/** ZERO_MAC is the all-zero Ethernet address, what RFC 5227 probes and most requests put in THA. */
export const ZERO_MAC = "00:00:00:00:00:00";

/** formatMac renders six bytes at `offset` as lowercase colon-separated hex. The caller has checked the bounds. */
export function formatMac(bytes: Uint8Array, offset: number): string {
  let s = HEX[bytes[offset] ?? 0] ?? "00";
  for (let i = 1; i < MAC_LEN; i++) s += ":" + (HEX[bytes[offset + i] ?? 0] ?? "00");
  return s;
}

/** formatIPv4 renders four bytes at `offset` as a dotted quad. The caller has checked the bounds. */
export function formatIPv4(bytes: Uint8Array, offset: number): string {
  return `${bytes[offset] ?? 0}.${bytes[offset + 1] ?? 0}.${bytes[offset + 2] ?? 0}.${bytes[offset + 3] ?? 0}`;
}

const MAC_RE = /^[0-9a-f]{2}(?::[0-9a-f]{2}){5}$/i;
const IPV4_RE = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/** isMac tells whether `s` is a colon-separated EUI-48 address. */
export function isMac(s: string): boolean {
  return MAC_RE.test(s);
}

/** isIPv4 tells whether `s` is a dotted-quad IPv4 address in canonical form (no leading zeros). */
export function isIPv4(s: string): boolean {
  return IPV4_RE.test(s);
}

/** parseMac turns "aa:bb:cc:dd:ee:ff" into six bytes, throwing on anything else (constructors validate). */
export function parseMac(s: string): Uint8Array {
  if (!isMac(s)) throw new TypeError(`not a MAC address: ${JSON.stringify(s)}`);
  return Uint8Array.from(s.split(":"), (h) => parseInt(h, 16));
}

/** parseIPv4 turns a dotted quad into four bytes, throwing on anything else (constructors validate). */
export function parseIPv4(s: string): Uint8Array {
  if (!isIPv4(s)) throw new TypeError(`not an IPv4 address: ${JSON.stringify(s)}`);
  return Uint8Array.from(s.split("."), Number);
}
