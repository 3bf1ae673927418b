import type { KubeProxyConfig } from "./config.js";
import type { NodeFacts } from "../wire.js";

/** A NodeArp is one node's ARP behaviour as its agent measured it. */
export interface NodeArp {
  readonly node: string;
  /** The weakest effective arp_ignore / arp_announce over the node's captured interfaces (the kernel applies max(all, own)). */
  readonly arpIgnore: number;
  readonly arpAnnounce: number;
  /** arp_ignore >= 1 and arp_announce = 2 on every captured interface: what kube-proxy's strictARP sets. */
  readonly strict: boolean;
  /** Addresses on kube-ipvs0 (IPVS mode binds every Service IP there). */
  readonly kubeIpvs0Addresses: number;
  readonly ipvs: boolean;
}

/** A Drift is a node whose effective behaviour differs from what the ConfigMap says, and why that happens. */
export interface Drift {
  readonly node: string;
  readonly reason: "not-restarted" | "never-reset";
  readonly message: string;
}

/** StrictArpStatus answers "does every node answer ARP only for its own addresses?" for the whole cluster. */
export interface StrictArpStatus {
  /** The ConfigMap's view; null when kube-proxy's ConfigMap is absent or unreadable (no Kubernetes, or not kubeadm). */
  readonly configured: { readonly mode: KubeProxyConfig["mode"]; readonly strictARP: boolean } | null;
  readonly nodes: readonly NodeArp[];
  readonly drift: readonly Drift[];
  /** Nodes in IPVS mode that answer ARP for any local address: every one of them answers for every LoadBalancer IP. */
  readonly looseIpvsNodes: readonly string[];
  /** The verdict: "exposed" when some IPVS node is loose, "ok" when none is, "unknown" with no node reporting. */
  readonly verdict: "exposed" | "ok" | "unknown";
}

/** nodeArp reduces one agent's facts to the node's ARP behaviour. */
export function nodeArp(f: NodeFacts): NodeArp {
  const captured = f.interfaces.filter((i) => i.captured);
  const pairs =
    captured.length > 0 ? captured.map((i) => i.effective) : [{ arpIgnore: f.sysctl.all.arpIgnore, arpAnnounce: f.sysctl.all.arpAnnounce }];
  const arpIgnore = Math.min(...pairs.map((p) => p.arpIgnore));
  const arpAnnounce = Math.min(...pairs.map((p) => p.arpAnnounce));
  return {
    node: f.node,
    arpIgnore,
    arpAnnounce,
    strict: arpIgnore >= 1 && arpAnnounce === 2,
    kubeIpvs0Addresses: f.kubeIpvs0.addresses,
    ipvs: f.kubeProxyMode === "ipvs",
  };
}

/**
 * strictArpStatus compares the configuration (ConfigMap kube-system/kube-proxy) with what each node's kernel does.
 * kube-proxy applies arp_ignore=1 / arp_announce=2 only when it starts in IPVS mode with strictARP true, and never
 * resets them (DESIGN 2.3), so the two drift apart: after a patch until kube-proxy restarts, and after a rollback
 * until the node reboots.
 */
export function strictArpStatus(config: KubeProxyConfig | null, facts: readonly NodeFacts[]): StrictArpStatus {
  const nodes = facts.map(nodeArp).sort((a, b) => a.node.localeCompare(b.node));
  const drift: Drift[] = [];
  if (config !== null) {
    for (const n of nodes) {
      if (config.mode === "ipvs" && config.strictARP && !n.strict) {
        drift.push({
          node: n.node,
          reason: "not-restarted",
          message: `${n.node} still answers ARP for any local address (arp_ignore=${n.arpIgnore}, arp_announce=${n.arpAnnounce}): kube-proxy applies strictARP only when it starts; restart the kube-proxy DaemonSet`,
        });
      } else if (!config.strictARP && n.strict) {
        drift.push({
          node: n.node,
          reason: "never-reset",
          message: `${n.node} is strict (arp_ignore=${n.arpIgnore}, arp_announce=${n.arpAnnounce}) although the ConfigMap is not: kube-proxy never resets these sysctls, so the node stays strict until it reboots`,
        });
      }
    }
  }
  const looseIpvsNodes = nodes.filter((n) => n.ipvs && !n.strict).map((n) => n.node);
  const verdict = nodes.length === 0 ? "unknown" : looseIpvsNodes.length > 0 ? "exposed" : "ok";
  return { configured: config === null ? null : { mode: config.mode, strictARP: config.strictARP }, nodes, drift, looseIpvsNodes, verdict };
}
