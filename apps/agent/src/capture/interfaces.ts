import { readFileSync } from "node:fs";
import { readFile, readdir, readlink } from "node:fs/promises";
import { join } from "node:path";
import type { InterfaceInfo } from "@whohas/core";

/**
 * DEFAULT_EXCLUDE is MetalLB's default interface deny list (internal/layer2, speaker `--ignore-interfaces`): virtual,
 * container and tunnel devices on which a speaker never answers, so whohas does not listen there either.
 */
export const DEFAULT_EXCLUDE =
  "^docker.*|^cbr.*|^dummy.*|^virbr.*|^lxcbr.*|^veth.*|^lo$|^cali.*|^tunl.*|^flannel.*|^kube-ipvs.*|^cni.*|^nodelocaldns.*|^lxc.*";

const IFF_UP = 0x1;
const IFF_NOARP = 0x80;

/** A NetInterface is one link as the kernel shows it in /sys/class/net. */
export interface NetInterface extends InterfaceInfo {
  readonly noarp: boolean;
  /** True when the link is enslaved to a bridge or bond (it has a `master`). */
  readonly hasMaster: boolean;
  /** The bridge or bond it is enslaved to, if any. */
  readonly master: string | null;
  /** For an 802.1Q VLAN device (eth0.30): its VLAN id and the link it tags frames on; null otherwise. */
  readonly vlan?: { readonly id: number; readonly parent: string } | null;
}

/**
 * readVlanLinks reads the node's VLAN devices from /proc/net/vlan/config (which the 8021q module provides: no file,
 * no VLAN device): name -> VLAN id and parent link.
 */
export function readVlanLinks(path = "/proc/net/vlan/config"): Map<string, { id: number; parent: string }> {
  const out = new Map<string, { id: number; parent: string }>();
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return out;
  }
  // "VLAN Dev name | VLAN ID" and "Name-Type: ..." first, then one "eth0.30 | 30 | eth0" per device.
  for (const line of text.split("\n")) {
    const m = /^(\S+)\s*\|\s*(\d+)\s*\|\s*(\S+)/.exec(line);
    if (m !== null) out.set(m[1] ?? "", { id: Number(m[2]), parent: m[3] ?? "" });
  }
  return out;
}

async function masterOf(dir: string): Promise<string | null> {
  try {
    return (await readlink(join(dir, "master"))).split("/").pop() ?? null;
  } catch {
    return null;
  }
}

/** listInterfaces reads every link of this network namespace from sysfs. */
export async function listInterfaces(sysClassNet = "/sys/class/net", vlanConfig = "/proc/net/vlan/config"): Promise<NetInterface[]> {
  const names = (await readdir(sysClassNet)).sort();
  const vlans = readVlanLinks(vlanConfig);
  const out: NetInterface[] = [];
  for (const name of names) {
    const dir = join(sysClassNet, name);
    try {
      const [address, flagsHex] = await Promise.all([readFile(join(dir, "address"), "utf8"), readFile(join(dir, "flags"), "utf8")]);
      const flags = parseInt(flagsHex.trim(), 16);
      const mac = address.trim();
      if (!/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(mac)) continue; // not Ethernet (tun, ipip, ...)
      const master = await masterOf(dir);
      out.push({
        name,
        mac,
        up: (flags & IFF_UP) !== 0,
        noarp: (flags & IFF_NOARP) !== 0,
        hasMaster: master !== null,
        master,
        vlan: vlans.get(name) ?? null,
      });
    } catch {
      // The link vanished between readdir and read: the next scan will not list it.
    }
  }
  return out;
}

/**
 * selectCaptureInterfaces applies MetalLB's rules (DESIGN 2.2): allow regex, deny regex, and skip links that are down,
 * enslaved to a bridge or bond, or NOARP.
 */
export function selectCaptureInterfaces(all: readonly NetInterface[], allow: RegExp, deny: RegExp | null): NetInterface[] {
  const chosen = all.filter((i) => allow.test(i.name) && !(deny?.test(i.name) ?? false) && i.up && !i.hasMaster && !i.noarp);
  // A VLAN device's frames are its parent's too, tagged (libpcap puts the tag back): one capture per link, so that a
  // frame is never counted twice, once tagged and once not.
  const names = new Set(chosen.map((i) => i.name));
  return chosen.filter((i) => i.vlan === null || i.vlan === undefined || !names.has(i.vlan.parent));
}
