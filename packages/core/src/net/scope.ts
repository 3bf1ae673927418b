import { parseIPv4, isIPv4, parseIPv6 } from "../packet/addr.js";

/**
 * An AddressScope says where an address leads. Outbound requests the hub makes for someone else (a webhook
 * receiver's URL) must not reach the hub's own loopback, the cloud's metadata service on link-local, or the
 * private network behind it unless an operator said so.
 */
export type AddressScope = "public" | "private" | "loopback" | "link-local" | "unspecified" | "reserved";

interface Range {
  readonly bits: Uint8Array;
  readonly prefix: number;
  readonly scope: AddressScope;
}

function v4(cidr: string, scope: AddressScope): Range {
  const [a = "", p = "32"] = cidr.split("/");
  return { bits: parseIPv4(a), prefix: Number(p), scope };
}

function v6(cidr: string, scope: AddressScope): Range {
  const [a = "", p = "128"] = cidr.split("/");
  const bits = parseIPv6(a);
  if (bits === null) throw new Error(`scope: bad range ${cidr}`);
  return { bits, prefix: Number(p), scope };
}

/** IPv4 special-purpose ranges (RFC 6890 and the IANA registry), most specific first. */
const V4: readonly Range[] = [
  v4("255.255.255.255/32", "reserved"),
  v4("0.0.0.0/8", "unspecified"),
  v4("127.0.0.0/8", "loopback"),
  v4("169.254.0.0/16", "link-local"),
  v4("10.0.0.0/8", "private"),
  v4("172.16.0.0/12", "private"),
  v4("192.168.0.0/16", "private"),
  // Shared address space (RFC 6598): carrier-grade NAT, and some clusters' Pod or Service networks.
  v4("100.64.0.0/10", "private"),
  v4("192.0.0.0/24", "reserved"),
  v4("192.0.2.0/24", "reserved"),
  v4("198.18.0.0/15", "reserved"),
  v4("198.51.100.0/24", "reserved"),
  v4("203.0.113.0/24", "reserved"),
  v4("224.0.0.0/4", "reserved"),
  v4("240.0.0.0/4", "reserved"),
];

/** IPv6 special-purpose ranges (RFC 6890, RFC 4193 unique local), most specific first. */
const V6: readonly Range[] = [
  v6("::/128", "unspecified"),
  v6("::1/128", "loopback"),
  v6("fe80::/10", "link-local"),
  v6("fc00::/7", "private"),
  // Site-local (RFC 3879 deprecated it; some networks still route it inside).
  v6("fec0::/10", "private"),
  // The rest of the IPv4-compatible range (RFC 4291 deprecated it): never a public receiver.
  v6("::/96", "reserved"),
  v6("ff00::/8", "reserved"),
  v6("2001:db8::/32", "reserved"),
  v6("100::/64", "reserved"),
  // Local-use NAT64 (RFC 8215): whatever IPv4 network its translator reaches, the operator's own.
  v6("64:ff9b:1::/48", "private"),
  // Teredo (RFC 4380) tunnels to an obfuscated IPv4 address through a relay: refused as a whole.
  v6("2001::/32", "reserved"),
];

function inRange(addr: Uint8Array, r: Range): boolean {
  const whole = r.prefix >> 3;
  for (let i = 0; i < whole; i++) if (addr[i] !== r.bits[i]) return false;
  const rest = r.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((addr[whole] ?? 0) & mask) === ((r.bits[whole] ?? 0) & mask);
}

/**
 * addressScope classifies an IPv4 or IPv6 address; null when `ip` is not one. IPv4 carried in IPv6 (mapped
 * ::ffff:a.b.c.d, SIIT's translated ::ffff:0:a.b.c.d, compatible, the NAT64 prefix 64:ff9b::/96 and 6to4's
 * 2002:a.b.c.d::/48) is classified as the IPv4 address it carries, so it cannot be used to reach a refused IPv4
 * address.
 */
export function addressScope(ip: string): AddressScope | null {
  if (isIPv4(ip)) {
    const b = parseIPv4(ip);
    return V4.find((r) => inRange(b, r))?.scope ?? "public";
  }
  const b = parseIPv6(ip);
  if (b === null) return null;
  const embedded = embeddedIPv4(b);
  if (embedded !== null) return addressScope(embedded);
  return V6.find((r) => inRange(b, r))?.scope ?? "public";
}

function embeddedIPv4(b: Uint8Array): string | null {
  const zeros = (from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
  if (b[0] === 0x20 && b[1] === 0x02) return `${b[2]}.${b[3]}.${b[4]}.${b[5]}`;
  const mapped = zeros(0, 10) && b[10] === 0xff && b[11] === 0xff;
  const translated = zeros(0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(10, 12);
  const compatible = zeros(0, 12) && !zeros(12, 15);
  const nat64 = b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12);
  if (!mapped && !translated && !compatible && !nat64) return null;
  return `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
}
