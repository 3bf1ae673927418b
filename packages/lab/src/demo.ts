import { tmpdir } from "node:os";
import { startStack, type Stack } from "./stack.js";

/** DEMO_VLAN_IPS: one address on VLANs 30 and 40, carried tagged on the lab's link as a trunk carries them. */
export const DEMO_VLAN_IPS = ["198.18.0.240@30", "198.18.0.240@40"] as const;

export interface DemoOptions {
  readonly nodes: number;
  readonly vips: number;
  /** The dashboard's port; 0: one the kernel picks. */
  readonly port: number;
  /** Hub replicas on the PostgreSQL at `storageUrl` (StackOptions.replicas); 1: one hub. */
  readonly replicas?: number;
  readonly storageUrl?: string;
  /** The lab's cluster in a fleet (StackOptions.clusterName), and the hub's address the other hubs link to. */
  readonly clusterName?: string;
  readonly externalUrl?: string;
}

/**
 * startDemo starts the lab as `whohas-lab demo` shows it: a dual-stack cluster of `nodes` nodes that all answer ARP
 * for every IPv4 VIP (kube-proxy IPVS with strictARP false), each VIP a LoadBalancer Service (every other one
 * externalTrafficPolicy Local), MetalLB-like speakers answering for the IPv6 VIPs they are elected for, the hub's
 * background probe at its default 30 s, and one address on VLANs 30 and 40: one node answers for it on VLAN 30, two
 * (a split brain) on VLAN 40.
 */
export async function startDemo(o: DemoOptions): Promise<Stack> {
  const stack = await startStack({
    nodes: o.nodes,
    vips: o.vips,
    port: o.port,
    kube: true,
    cluster: true,
    ipv6: true,
    vlanVips: DEMO_VLAN_IPS,
    backgroundProbe: "30s",
    replicas: o.replicas,
    clusterName: o.clusterName,
    hubConfig: {
      ...(o.storageUrl === undefined
        ? {}
        : { storage: { path: `${tmpdir()}/whohas-demo-${process.pid}.db`, url: o.storageUrl, retention: "1d" } }),
      ...(o.externalUrl === undefined ? {} : { alerting: { externalUrl: o.externalUrl } }),
    },
  });
  const [first, second] = stack.lab.nodes;
  const elected = (node: string) => [...stack.owners].filter(([, owner]) => owner === node).map(([ip]) => ip);
  if (first !== undefined) stack.own(first.name, [...elected(first.name), ...DEMO_VLAN_IPS]);
  if (second !== undefined) stack.own(second.name, [...elected(second.name), DEMO_VLAN_IPS[1]]);
  return stack;
}

/**
 * startSecondCluster starts the demo's second cluster of a fleet: a lab of one node (so one responder per IP) with
 * the same VIPs, Services and Kubernetes objects, its own agents and hub, on the first's PostgreSQL.
 */
export async function startSecondCluster(o: { vips: number; port: number; storageUrl: string; name: string }): Promise<Stack> {
  return startStack({
    nodes: 1,
    vips: o.vips,
    port: o.port,
    kube: true,
    cluster: true,
    backgroundProbe: "30s",
    clusterName: o.name,
    hubConfig: {
      storage: { path: `${tmpdir()}/whohas-demo-${process.pid}-${o.name}.db`, url: o.storageUrl, retention: "1d" },
      alerting: { externalUrl: `http://localhost:${o.port}` },
    },
  });
}
