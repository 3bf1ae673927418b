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
}

async function masterOf(dir: string): Promise<string | null> {
  try {
    return (await readlink(join(dir, "master"))).split("/").pop() ?? null;
  } catch {
    return null;
  }
}

/** listInterfaces reads every link of this network namespace from sysfs. */
export async function listInterfaces(sysClassNet = "/sys/class/net"): Promise<NetInterface[]> {
  const names = (await readdir(sysClassNet)).sort();
  const out: NetInterface[] = [];
  for (const name of names) {
    const dir = join(sysClassNet, name);
    try {
      const [address, flagsHex] = await Promise.all([readFile(join(dir, "address"), "utf8"), readFile(join(dir, "flags"), "utf8")]);
      const flags = parseInt(flagsHex.trim(), 16);
      const mac = address.trim();
      if (!/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(mac)) continue; // not Ethernet (tun, ipip, ...)
      const master = await masterOf(dir);
      out.push({ name, mac, up: (flags & IFF_UP) !== 0, noarp: (flags & IFF_NOARP) !== 0, hasMaster: master !== null, master });
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
  return all.filter((i) => allow.test(i.name) && !(deny?.test(i.name) ?? false) && i.up && !i.hasMaster && !i.noarp);
}
