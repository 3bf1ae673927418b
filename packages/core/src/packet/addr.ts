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

/** macToNumber reads six bytes at `offset` as one 48-bit number (exact in a double): a cheap Map key. */
export function macToNumber(bytes: Uint8Array, offset: number): number {
  return (
    (bytes[offset] ?? 0) * 0x10000000000 +
    (bytes[offset + 1] ?? 0) * 0x100000000 +
    (((bytes[offset + 2] ?? 0) << 24) >>> 0) +
    (((bytes[offset + 3] ?? 0) << 16) | ((bytes[offset + 4] ?? 0) << 8) | (bytes[offset + 5] ?? 0))
  );
}

/** The texts of recent MACs, made once each (a capture holds a few MACs, in millions of frames). */
const macTexts = new Map<number, string>();
const MAX_MAC_TEXTS = 4096;

/** formatMacNumber renders a macToNumber value as lowercase colon-separated hex. */
export function formatMacNumber(n: number): string {
  const known = macTexts.get(n);
  if (known !== undefined) return known;
  let s = "";
  for (let i = 5; i >= 0; i--) {
    const b = Math.floor(n / 2 ** (8 * i)) % 256;
    s += (i === 5 ? "" : ":") + (HEX[b] ?? "00");
  }
  if (macTexts.size >= MAX_MAC_TEXTS) macTexts.clear();
  macTexts.set(n, s);
  return s;
}

/** ipv4ToNumber reads four bytes at `offset` as an unsigned 32-bit number. */
export function ipv4ToNumber(bytes: Uint8Array, offset: number): number {
  return (
    (((bytes[offset] ?? 0) << 24) >>> 0) + (((bytes[offset + 1] ?? 0) << 16) | ((bytes[offset + 2] ?? 0) << 8) | (bytes[offset + 3] ?? 0))
  );
}

/** formatIPv4Number renders an ipv4ToNumber value as a dotted quad. */
export function formatIPv4Number(n: number): string {
  return `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** IPV6_LEN is the length of an IPv6 address. */
export const IPV6_LEN = 16;

/**
 * formatIPv6 renders 16 bytes at `offset` in the RFC 5952 canonical form: lowercase, no leading zeros, the longest
 * run of two or more zero groups (the first of equal runs) as "::". IPv4-mapped addresses print as ::ffff:a.b.c.d.
 */
export function formatIPv6(bytes: Uint8Array, offset: number): string {
  const g: number[] = [];
  for (let i = 0; i < 8; i++) g.push(((bytes[offset + 2 * i] ?? 0) << 8) | (bytes[offset + 2 * i + 1] ?? 0));
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return `::ffff:${formatIPv4(bytes, offset + 12)}`;
  }
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (bestLen < 2) return g.map((x) => x.toString(16)).join(":");
  const head = g
    .slice(0, bestStart)
    .map((x) => x.toString(16))
    .join(":");
  const tail = g
    .slice(bestStart + bestLen)
    .map((x) => x.toString(16))
    .join(":");
  return `${head}::${tail}`;
}

/** parseIPv6 parses any textual IPv6 address (compressed, with an embedded IPv4 tail); null when it is not one. */
export function parseIPv6(s: string): Uint8Array | null {
  if (!/^[0-9a-fA-F:.]+$/.test(s) || s.length > 45) return null;
  let text = s;
  const out = new Uint8Array(IPV6_LEN);
  let tailV4: Uint8Array | null = null;
  const lastColon = text.lastIndexOf(":");
  if (text.includes(".")) {
    const v4 = text.slice(lastColon + 1);
    if (!isIPv4(v4)) return null;
    tailV4 = parseIPv4(v4);
    text = text.slice(0, lastColon + 1) + "0:0";
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const parse = (part: string): number[] | null => {
    if (part === "") return [];
    const groups = part.split(":");
    const nums: number[] = [];
    for (const h of groups) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(h)) return null;
      nums.push(parseInt(h, 16));
    }
    return nums;
  };
  const head = parse(halves[0] ?? "");
  const tail = halves.length === 2 ? parse(halves[1] ?? "") : [];
  if (head === null || tail === null) return null;
  const total = head.length + tail.length;
  if (halves.length === 1 ? total !== 8 : total > 7) return null;
  const groups = [...head, ...Array<number>(8 - total).fill(0), ...tail];
  groups.forEach((x, i) => {
    out[2 * i] = x >> 8;
    out[2 * i + 1] = x & 0xff;
  });
  if (tailV4 !== null) out.set(tailV4, 12);
  return out;
}

/** isIPv6 tells whether `s` parses as an IPv6 address. */
export function isIPv6(s: string): boolean {
  return parseIPv6(s) !== null;
}

/** isIP tells whether `s` is an IPv4 dotted quad or an IPv6 address. */
export function isIP(s: string): boolean {
  return isIPv4(s) || isIPv6(s);
}

/**
 * goIPString renders an address the way Go's net.IP.String() does, which is the text MetalLB hashes in its election
 * (DESIGN 2.1): IPv4 as a dotted quad (also when written IPv4-mapped, ::ffff:a.b.c.d), IPv6 in RFC 5952 form.
 * Returns null for text that is not an IP address (Go's ParseIP would return nil).
 */
export function goIPString(s: string): string | null {
  if (isIPv4(s)) return s;
  const b = parseIPv6(s);
  if (b === null) return null;
  const mapped = b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;
  return mapped ? formatIPv4(b, 12) : formatIPv6(b, 0);
}

/** compareIP orders addresses numerically, IPv4 before IPv6; IP keys (ADDRESS@VLAN) by address, then untagged first. */
export function compareIP(a: string, b: string): number {
  const [aIp, aVlan] = keyParts(a);
  const [bIp, bVlan] = keyParts(b);
  const a6 = aIp.includes(":");
  const b6 = bIp.includes(":");
  if (a6 !== b6) return a6 ? 1 : -1;
  const pa = a6 ? [...(parseIPv6(aIp) ?? [])] : aIp.split(".").map(Number);
  const pb = b6 ? [...(parseIPv6(bIp) ?? [])] : bIp.split(".").map(Number);
  for (let i = 0; i < pa.length; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return aVlan - bVlan;
}

/** keyParts splits an IP key into its address and VLAN (-1: untagged). */
function keyParts(key: string): [string, number] {
  const at = key.lastIndexOf("@");
  return at < 0 ? [key, -1] : [key.slice(0, at), Number(key.slice(at + 1))];
}

/**
 * ipOrderKey is a string that sorts as compareIP orders (IPv4 before IPv6, numerically, then by VLAN): computed once
 * per address, it sorts thousands of them with plain string comparisons (the dashboard's lists).
 */
export function ipOrderKey(key: string): string {
  const [ip, vlan] = keyParts(key);
  const tag = vlan < 0 ? "" : `@${String(vlan).padStart(4, "0")}`;
  if (!ip.includes(":"))
    return `4${ip
      .split(".")
      .map((o) => o.padStart(3, "0"))
      .join("")}${tag}`;
  const b = parseIPv6(ip);
  return `6${b === null ? ip : [...b].map((x) => x.toString(16).padStart(2, "0")).join("")}${tag}`;
}
