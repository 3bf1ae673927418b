import { mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { inNs, ip, run } from "./sh.js";
import { LAB_STATE_DIR, labIdOfNs, labNames, newLabId, type LabNames } from "./naming.js";

/**
 * LAB_SUBNET is the lab's link: 198.18.0.0/15 is reserved for benchmarking (RFC 2544), so it is nobody's real network;
 * and since the bridge lives in the lab's own namespace, labs running side by side never see each other.
 */
export const LAB_SUBNET = "198.18.0";
/**
 * LAB_PREFIX_LEN: every address on the link is in the whole benchmarking block, 198.18.0.0/15, so the VIPs past the
 * 56th (198.19.0.0/16, vipAt) are on the nodes' network too, as a MetalLB pool is: a node asks for an IP from the
 * interface with an address in its subnet, and with a /24 it would have none for them.
 */
export const LAB_PREFIX_LEN = 15;
export const CLIENT_IP = `${LAB_SUBNET}.2`;
/** HUB_IP is the hub's address on the lab link, when it runs there (LabOptions.hubOnLink). */
export const HUB_IP = `${LAB_SUBNET}.3`;
/** STRANGER_IP is the address of a host on the lab link that is no node of the cluster (Lab.addStranger). */
export const STRANGER_IP = `${LAB_SUBNET}.4`;
export const nodeIp = (i: number): string => `${LAB_SUBNET}.${10 + i}`;
/**
 * vipAt is the i-th VIP: 198.18.0.200 to .255 for the first 56, then 198.19.0.1 onwards, 250 to a /24 (still the
 * benchmarking block, and clear of the 198.18.1.0/24 and 198.18.2.0/24 the agent bench floods as nobody's).
 */
export const vipAt = (i: number): string =>
  i < 56 ? `${LAB_SUBNET}.${200 + i}` : `198.19.${Math.floor((i - 56) / 250)}.${((i - 56) % 250) + 1}`;

/**
 * LAB_PREFIX6 is the lab's IPv6 link (LabOptions.ipv6): 2001:2::/64, out of 2001:2::/48, the IPv6 benchmarking prefix
 * (RFC 5180), nobody's real network either. Addresses mirror the IPv4 ones digit for digit: node 1 is 2001:2::11, the
 * first VIP 2001:2::200 (the groups are hexadecimal; they only read like the IPv4 octets).
 */
export const LAB_PREFIX6 = "2001:2::";
export const CLIENT_IP6 = `${LAB_PREFIX6}2`;
export const HUB_IP6 = `${LAB_PREFIX6}3`;
export const nodeIp6 = (i: number): string => `${LAB_PREFIX6}${10 + i}`;
export const vip6At = (i: number): string => `${LAB_PREFIX6}${200 + i}`;

/** A LabNode is one simulated Kubernetes node: a namespace whose eth0 is on the lab bridge. */
export interface LabNode {
  readonly name: string;
  readonly ns: string;
  readonly ip: string;
  readonly mac: string;
  /** eth0's global IPv6 address and its link-local one (what a speaker answers NDP from); null without ipv6. */
  readonly ip6: string | null;
  readonly linkLocal: string | null;
}

export interface LabOptions {
  readonly nodes: number;
  readonly vips: number;
  /** A namespace for the hub on the lab link (HUB_IP): agents then reach it over TCP, as in a cluster. */
  readonly hubOnLink?: boolean;
  /**
   * Dual stack: every namespace on the link also gets an address of LAB_PREFIX6, and each node holds as many IPv6
   * VIPs (vip6At) on kube-ipvs0 as IPv4 ones.
   */
  readonly ipv6?: boolean;
}

/** A Lab is the network of one run: a switch, nodes holding every VIP on kube-ipvs0, and a client. */
export interface Lab {
  readonly names: LabNames;
  readonly nodes: readonly LabNode[];
  readonly vips: readonly string[];
  /** The IPv6 VIPs every node holds on kube-ipvs0 (empty without ipv6). */
  readonly vips6: readonly string[];
  readonly client: { readonly ns: string; readonly ip: string; readonly ip6: string | null; readonly mac: string };
  /** The hub's namespace and address on the link, with hubOnLink. */
  readonly hub: { readonly ns: string; readonly ip: string } | null;
  /**
   * setStrictArp applies what kube-proxy's IPVS proxier does at start with strictARP true (arp_ignore=1,
   * arp_announce=2 on `all`), or puts back the kernel default (0, 0) that strictARP false leaves.
   */
  setStrictArp(node: LabNode, strict: boolean): Promise<void>;
  /**
   * holdOnLink misconfigures a node the way a VIP bound to the wrong device does: `ip` goes on its eth0 (IPv6 with
   * nodad), where its kernel answers ARP and, unlike for kube-ipvs0, Neighbor Solicitations too, whatever
   * strictARP says. releaseFromLink takes it off again.
   */
  holdOnLink(node: LabNode, ip: string): Promise<void>;
  releaseFromLink(node: LabNode, ip: string): Promise<void>;
  /**
   * addStranger plugs a host that is no node into the lab link, with its own MAC (one of a registered vendor, to be
   * named) and `held` addresses on its interface, which its kernel answers ARP for: an address conflict.
   */
  addStranger(mac: string, held: readonly string[]): Promise<{ readonly ns: string; readonly mac: string; readonly ip: string }>;
  destroy(): Promise<void>;
}

/**
 * removeNs kills whatever still runs inside a namespace (an agent orphaned by a killed run would otherwise keep the
 * namespace alive after `ip netns del`) and deletes it. Errors are ignored: removal must always run to the end.
 */
export async function removeNs(ns: string): Promise<void> {
  const pids = await ip("netns", "pids", ns).catch(() => "");
  for (const pid of pids
    .split("\n")
    .map(Number)
    .filter((p) => p > 0 && p !== process.pid)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  await ip("netns", "del", ns).catch(() => undefined);
}

async function macOf(ns: string, dev: string): Promise<string> {
  return (await inNs(ns, "cat", `/sys/class/net/${dev}/address`)).trim();
}

async function sysctl(ns: string, key: string, value: number): Promise<void> {
  await inNs(ns, "sh", "-c", `echo ${value} > /proc/sys/${key.replaceAll(".", "/")}`);
}

/** hostPrefix is the prefix of a single address: /32 for IPv4, /128 for IPv6. */
const hostPrefix = (addr: string): string => `${addr}/${addr.includes(":") ? 128 : 32}`;

/** LINK_LOCAL_WAIT_MS bounds the wait for eth0's link-local address; with DAD off it is there as the link comes up. */
const LINK_LOCAL_WAIT_MS = 10_000;

/**
 * waitLinkLocal returns eth0's fe80:: address once it is usable (no longer tentative). The speakers read it once at
 * start and answer NDP from it, so the lab hands out no node before it is there.
 */
async function waitLinkLocal(ns: string): Promise<string> {
  const end = Date.now() + LINK_LOCAL_WAIT_MS;
  for (;;) {
    const links = JSON.parse(await ip("-n", ns, "-j", "-6", "addr", "show", "dev", "eth0", "scope", "link")) as {
      addr_info: { local?: string; tentative?: boolean }[];
    }[];
    // `ip -j` prints an empty object for each address its filter leaves out.
    const ready = links.flatMap((l) => l.addr_info).find((a) => a.local !== undefined && a.tentative !== true);
    if (ready?.local !== undefined) return ready.local;
    if (Date.now() > end) throw new Error(`${ns}: eth0 has no usable link-local address after ${LINK_LOCAL_WAIT_MS} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** createLab builds the network; on any failure it removes what it made and rethrows. */
export async function createLab(opts: LabOptions): Promise<Lab> {
  const names = labNames(newLabId());
  const made: string[] = [];
  const destroy = async () => {
    for (const ns of [...made].reverse()) await removeNs(ns);
    await rm(names.stateDir, { recursive: true, force: true });
  };
  try {
    await mkdir(names.stateDir, { recursive: true });
    await writeFile(`${names.stateDir}/owner.json`, JSON.stringify({ pid: process.pid, started: new Date().toISOString() }));
    const addNs = async (ns: string) => {
      await ip("netns", "add", ns);
      made.push(ns);
      await ip("-n", ns, "link", "set", "lo", "up");
    };
    await addNs(names.switchNs);
    await ip("-n", names.switchNs, "link", "add", "br0", "type", "bridge");
    await ip("-n", names.switchNs, "link", "set", "br0", "up");
    const ipv6 = opts.ipv6 === true;
    const plug = async (ns: string, port: string, addr: string, addr6: string) => {
      // Create the pair with each end already in its namespace: no name is ever taken in the host namespace.
      await ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port, "netns", names.switchNs);
      await ip("-n", names.switchNs, "link", "set", port, "master", "br0", "up");
      await ip("-n", ns, "addr", "add", `${addr}/${LAB_PREFIX_LEN}`, "dev", "eth0");
      if (ipv6) {
        // The lab hands out every address itself: duplicate address detection would only hold the link-local
        // address back (tentative) for a second or more after the link comes up.
        await sysctl(ns, "net.ipv6.conf.eth0.accept_dad", 0);
        await ip("-n", ns, "addr", "add", `${addr6}/64`, "dev", "eth0", "nodad");
      }
      await ip("-n", ns, "link", "set", "eth0", "up");
    };
    const vips = Array.from({ length: opts.vips }, (_, i) => vipAt(i));
    const vips6 = ipv6 ? Array.from({ length: opts.vips }, (_, i) => vip6At(i)) : [];
    const nodes: LabNode[] = [];
    for (let i = 1; i <= opts.nodes; i++) {
      const ns = names.nodeNs(i);
      await addNs(ns);
      await plug(ns, `n${i}`, nodeIp(i), nodeIp6(i));
      // kube-ipvs0 is a dummy device in a real cluster; this kernel has no dummy module, so one end of a veth pair
      // stands in. Like kube-proxy's, it stays down and holds every Service IP as a /32 (/128 for IPv6).
      await ip("-n", ns, "link", "add", "kube-ipvs0", "type", "veth", "peer", "name", "ipvs-peer");
      for (const vip of vips) await ip("-n", ns, "addr", "add", hostPrefix(vip), "dev", "kube-ipvs0");
      // The IPv6 VIPs there are never answered on eth0, strictARP or not: Linux answers a Neighbor Solicitation only
      // for an address of the interface it came in on (ndisc_recv_ns looks the target up with ipv6_get_ifaddr(...,
      // dev, strict)), or by proxy NDP; ARP with arp_ignore=0 answers for any local address. Measured on this lab's
      // kernel (6.18) with ndisc6 from the client: an NS for a VIP on kube-ipvs0 times out; with the VIP on eth0
      // (holdOnLink) the node answers. The IPVS hole is IPv4 only; dual-stack.test.ts keeps checking it.
      for (const vip of vips6) await ip("-n", ns, "addr", "add", hostPrefix(vip), "dev", "kube-ipvs0", "nodad");
      await sysctl(ns, "net.ipv4.conf.all.arp_ignore", 0);
      await sysctl(ns, "net.ipv4.conf.all.arp_announce", 0);
      nodes.push({
        name: `node-${i}`,
        ns,
        ip: nodeIp(i),
        mac: await macOf(ns, "eth0"),
        ip6: ipv6 ? nodeIp6(i) : null,
        linkLocal: ipv6 ? await waitLinkLocal(ns) : null,
      });
    }
    await addNs(names.clientNs);
    await plug(names.clientNs, "client", CLIENT_IP, CLIENT_IP6);
    const client = { ns: names.clientNs, ip: CLIENT_IP, ip6: ipv6 ? CLIENT_IP6 : null, mac: await macOf(names.clientNs, "eth0") };
    let hub: Lab["hub"] = null;
    if (opts.hubOnLink === true) {
      await addNs(names.hubNs);
      await plug(names.hubNs, "hub", HUB_IP, HUB_IP6);
      hub = { ns: names.hubNs, ip: HUB_IP };
    }
    return {
      names,
      nodes,
      vips,
      vips6,
      client,
      hub,
      async setStrictArp(node, strict) {
        await sysctl(node.ns, "net.ipv4.conf.all.arp_ignore", strict ? 1 : 0);
        await sysctl(node.ns, "net.ipv4.conf.all.arp_announce", strict ? 2 : 0);
      },
      async holdOnLink(node, addr) {
        await ip("-n", node.ns, "addr", "add", hostPrefix(addr), "dev", "eth0", ...(addr.includes(":") ? ["nodad"] : []));
      },
      async releaseFromLink(node, addr) {
        await ip("-n", node.ns, "addr", "del", hostPrefix(addr), "dev", "eth0");
      },
      async addStranger(mac, held) {
        const ns = names.strangerNs;
        await addNs(ns);
        await ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", "stranger", "netns", names.switchNs);
        await ip("-n", names.switchNs, "link", "set", "stranger", "master", "br0", "up");
        await ip("-n", ns, "link", "set", "eth0", "address", mac);
        await ip("-n", ns, "addr", "add", `${STRANGER_IP}/${LAB_PREFIX_LEN}`, "dev", "eth0");
        for (const a of held) await ip("-n", ns, "addr", "add", hostPrefix(a), "dev", "eth0");
        await ip("-n", ns, "link", "set", "eth0", "up");
        return { ns, mac, ip: STRANGER_IP };
      },
      destroy,
    };
  } catch (e) {
    await destroy();
    throw e;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * collectGarbage removes the namespaces and state of labs whose owning process is gone (a run killed with -9, a
 * crashed CI job). Running labs are left alone. Returns the ids removed.
 */
export async function collectGarbage(): Promise<string[]> {
  const byLab = new Map<string, string[]>();
  for (const line of (await ip("netns", "list")).split("\n")) {
    const ns = line.split(" ")[0] ?? "";
    const id = labIdOfNs(ns);
    if (id !== null) byLab.set(id, [...(byLab.get(id) ?? []), ns]);
  }
  for (const id of await readdir(LAB_STATE_DIR).catch(() => [] as string[])) if (!byLab.has(id)) byLab.set(id, []);
  const removed: string[] = [];
  for (const [id, nss] of byLab) {
    let owner = 0;
    try {
      owner = (JSON.parse(await readFile(`${LAB_STATE_DIR}/${id}/owner.json`, "utf8")) as { pid: number }).pid;
    } catch {
      // No owner file: a lab from a run that died before writing it, or one created by hand with our prefix.
    }
    if (owner !== 0 && alive(owner)) continue;
    await killReferring(`${LAB_STATE_DIR}/${id}/`);
    for (const ns of nss) await removeNs(ns);
    await rm(`${LAB_STATE_DIR}/${id}`, { recursive: true, force: true });
    removed.push(id);
  }
  return removed;
}

/**
 * killReferring kills the processes whose command line names a path under `dir`: the lab's hub and API server run
 * outside its namespaces (`--config /run/whohas-lab/ID/hub.yaml`), and outlive a test runner that was killed.
 */
async function killReferring(dir: string): Promise<void> {
  for (const pid of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (!cmdline.split("\0").some((arg) => arg.includes(dir))) continue;
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
}

/** requireRoot explains what the lab needs when it is not run as root. */
export async function requireRoot(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error("the lab creates network namespaces: run it as root");
  await run("ip", ["-V"]).catch(() => {
    throw new Error("the lab needs iproute2 (`ip`): apt-get install iproute2");
  });
}
