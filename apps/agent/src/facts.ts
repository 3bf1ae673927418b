import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { networkInterfaces } from "node:os";
import {
  MAX_ADDRESSES_PER_LINK,
  MAX_FACT_INTERFACES,
  effectiveArpSetting,
  impliedProxyMode,
  type Logger,
  type NodeFacts,
  type NodeInterface,
} from "@whohas/core";
import { listInterfaces, type NetInterface } from "./capture/interfaces.js";
import { AGENT_VERSION } from "./version.js";

/** KUBE_IPVS0 is the dummy device kube-proxy's IPVS mode puts every Service IP on. */
export const KUBE_IPVS0 = "kube-ipvs0";

interface SysctlPair {
  arpIgnore: number;
  arpAnnounce: number;
}

async function readSysctl(conf: string, root: string): Promise<SysctlPair> {
  const read = async (key: string) => Number((await readFile(`${root}/${conf}/${key}`, "utf8")).trim());
  try {
    return { arpIgnore: await read("arp_ignore"), arpAnnounce: await read("arp_announce") };
  } catch {
    // An interface without IPv4 configuration (no conf folder): the kernel uses `all` alone.
    return { arpIgnore: 0, arpAnnounce: 0 };
  }
}

const execFileP = promisify(execFile);

/**
 * addressesByInterface lists each link's IPv4 and IPv6 addresses, down links included: kube-ipvs0 is down in every
 * cluster, and Node's os.networkInterfaces() (libuv) skips links that are not up and running. `ip -j addr` reads
 * them from netlink; without iproute2 the agent falls back to what Node sees and says so.
 */
export async function addressesByInterface(logger?: Logger): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  try {
    const { stdout } = await execFileP("ip", ["-j", "addr", "show"], { maxBuffer: 64 * 1024 * 1024 });
    for (const link of JSON.parse(stdout) as { ifname: string; addr_info?: { local?: string }[] }[]) {
      out.set(
        link.ifname,
        (link.addr_info ?? []).map((a) => a.local ?? "").filter((a) => a !== ""),
      );
    }
    return out;
  } catch (e) {
    logger?.warn("facts.no_iproute2", {
      message: (e as Error).message,
      hint: "install iproute2: without it addresses on down links (kube-ipvs0) are not counted",
    });
  }
  for (const [name, addrs] of Object.entries(networkInterfaces()))
    out.set(
      name,
      (addrs ?? []).map((a) => a.address),
    );
  return out;
}

export interface FactsInput {
  readonly node: string;
  readonly captured: ReadonlySet<string>;
  readonly capture: NodeFacts["capture"];
  readonly sysClassNet?: string;
  readonly procConf?: string;
  readonly logger?: Logger;
}

/**
 * collectFacts reads what the hub needs to know of this node: every link with its addresses and ARP sysctls (own and
 * effective), kube-ipvs0 and its address count, the kube-proxy mode that implies, and capture statistics.
 */
export async function collectFacts(input: FactsInput): Promise<NodeFacts> {
  const procConf = input.procConf ?? "/proc/sys/net/ipv4/conf";
  // On a node with more links than the hub takes (a pod's veth each), the ones that matter come first.
  const found = await listInterfaces(input.sysClassNet);
  const matters = (l: NetInterface) => input.captured.has(l.name) || l.name === KUBE_IPVS0;
  const links: NetInterface[] =
    found.length <= MAX_FACT_INTERFACES
      ? found
      : [...found.filter(matters), ...found.filter((l) => !matters(l))].slice(0, MAX_FACT_INTERFACES);
  const addrs = await addressesByInterface(input.logger);
  const all = await readSysctl("all", procConf);
  const def = await readSysctl("default", procConf);
  const interfaces: NodeInterface[] = [];
  for (const l of links) {
    const own = await readSysctl(l.name, procConf);
    interfaces.push({
      name: l.name,
      mac: l.mac,
      up: l.up,
      master: l.master,
      addresses: (addrs.get(l.name) ?? []).slice(0, MAX_ADDRESSES_PER_LINK),
      own,
      effective: {
        arpIgnore: effectiveArpSetting(all.arpIgnore, own.arpIgnore),
        arpAnnounce: effectiveArpSetting(all.arpAnnounce, own.arpAnnounce),
      },
      captured: input.captured.has(l.name),
    });
  }
  const ipvs = interfaces.find((i) => i.name === KUBE_IPVS0);
  return {
    node: input.node,
    agentVersion: AGENT_VERSION,
    interfaces,
    sysctl: { all, default: def },
    kubeIpvs0: { present: ipvs !== undefined, addresses: addrs.get(KUBE_IPVS0)?.length ?? 0 },
    kubeProxyMode: impliedProxyMode(ipvs !== undefined),
    capture: input.capture,
  };
}
