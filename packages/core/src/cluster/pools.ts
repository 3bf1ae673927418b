import { isIPv4, parseIPv4, parseIPv6 } from "../packet/addr.js";

/** An AddressPool is a MetalLB IPAddressPool: its name and `spec.addresses` (CIDRs and "first-last" ranges). */
export interface AddressPool {
  readonly name: string;
  readonly addresses: readonly string[];
  /** metadata.labels, for L2Advertisements and BGPAdvertisements that select pools by label. */
  readonly labels?: Readonly<Record<string, string>>;
}

function toBig(ip: string): { v6: boolean; n: bigint } | null {
  const bytes = isIPv4(ip) ? parseIPv4(ip) : parseIPv6(ip);
  if (bytes === null) return null;
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return { v6: bytes.length === 16, n };
}

/** inRange tells whether `ip` is inside one entry of `spec.addresses`: "10.0.0.0/24", "10.0.0.5-10.0.0.9", or an IPv6 form. */
export function inRange(ip: string, entry: string): boolean {
  const a = toBig(ip);
  if (a === null) return false;
  const dash = entry.indexOf("-");
  if (dash > 0) {
    const lo = toBig(entry.slice(0, dash).trim());
    const hi = toBig(entry.slice(dash + 1).trim());
    if (lo === null || hi === null) return false;
    return lo.v6 === a.v6 && hi.v6 === a.v6 && a.n >= lo.n && a.n <= hi.n;
  }
  const [base, bitsText] = entry.split("/");
  const net = toBig((base ?? "").trim());
  if (net?.v6 !== a.v6) return false;
  const width = a.v6 ? 128 : 32;
  const bits = bitsText === undefined ? width : Number(bitsText);
  if (!Number.isInteger(bits) || bits < 0 || bits > width) return false;
  const shift = BigInt(width - bits);
  return a.n >> shift === net.n >> shift;
}

/** poolOf names the first pool whose addresses hold `ip`, or null. */
export function poolOf(ip: string, pools: readonly AddressPool[]): string | null {
  return pools.find((p) => p.addresses.some((e) => inRange(ip, e)))?.name ?? null;
}
