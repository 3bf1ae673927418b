import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

/**
 * The IEEE registry's assignments (MA-L, MA-M and MA-S: 24, 28 and 36 bits of a MAC), from the `oui-data` package
 * the build installs: prefix in upper-case hex, to the organisation's name. Read on first use (5 MB of JSON), then
 * only the names are kept.
 */
let registry: Map<string, string> | null = null;

function load(): Map<string, string> {
  const names = new Map<string, string>();
  try {
    // Read and parsed here, not required: require's cache would keep the whole 5 MB object.
    const file = createRequire(import.meta.url).resolve("oui-data");
    const raw = JSON.parse(readFileSync(file, "utf8")) as Record<string, string>;
    // Each entry is the organisation's name and its postal address, one per line: the name is what people know.
    for (const [prefix, text] of Object.entries(raw)) names.set(prefix, text.split("\n", 1)[0]?.trim() ?? "");
  } catch (e) {
    // Without the registry every vendor is unknown (null), which is what the pages and the API say then.
    process.emitWarning(`whohas: the IEEE OUI registry (oui-data) could not be read: ${(e as Error).message}`);
  }
  return names;
}

/**
 * vendorOf names the organisation a MAC's prefix is registered to, the longest assignment first; null for a MAC the
 * registry does not hold and for a locally administered one (a VM's, a container's, a bond's chosen address: no
 * vendor stands behind it).
 */
export function vendorOf(mac: string): string | null {
  let name = seen.get(mac);
  if (name !== undefined) return name;
  name = lookUp(mac);
  if (seen.size >= MAX_SEEN) seen.clear();
  seen.set(mac, name);
  return name;
}

/** A NamedMac is a MAC with its node (null: no agent reports it, not a cluster node) and its vendor. */
export interface NamedMac {
  readonly mac: string;
  readonly node: string | null;
  readonly vendor: string | null;
}

/** namesOf says of each MAC whose node it is and whose prefix: what a page needs to name a host that is no node. */
export function namesOf(macs: Iterable<string>, nodeOf: (mac: string) => string | null): NamedMac[] {
  return [...new Set(macs)].map((mac) => ({ mac, node: nodeOf(mac), vendor: vendorOf(mac) }));
}

/** The MACs named lately: every list of IPs names each responder again. */
const seen = new Map<string, string | null>();
const MAX_SEEN = 100_000;

function lookUp(mac: string): string | null {
  const hex = mac.replaceAll(":", "").toUpperCase();
  if (!/^[0-9A-F]{12}$/.test(hex) || (parseInt(hex.slice(0, 2), 16) & 0x02) !== 0) return null;
  registry ??= load();
  for (const len of [9, 7, 6]) {
    const name = registry.get(hex.slice(0, len));
    if (name !== undefined && name !== "") return name;
  }
  return null;
}
