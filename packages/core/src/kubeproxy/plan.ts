import type { NodeFacts } from "../wire.js";
import { parseKubeProxyConfig, patchStrictArp } from "./config.js";
import { nodeArp } from "./strict-arp.js";

/** What the strictARP fix is decided from: kube-proxy's config text, what the cluster runs, and each node's facts. */
export interface FixInput {
  /** The text of kube-proxy's ConfigMap key config.conf. */
  readonly config: string;
  /** Whether kubeadm-config exists (kubeadm upgrade reads the ConfigMap back). */
  readonly kubeadm: boolean;
  /** Whether Antrea's agent runs (Antrea Egress does not work with strictARP). */
  readonly antrea: boolean;
  readonly nodes: readonly { readonly node: string; readonly facts: NodeFacts | null }[];
}

/** A FixPlan is what the fix would change and what to know first; `disabledReason` says why there is nothing to do. */
export type FixPlan =
  | { readonly ok: false; readonly message: string }
  | {
      readonly ok: true;
      readonly mode: string;
      readonly strictARP: boolean;
      readonly patched: string;
      readonly changed: boolean;
      /** Nodes whose kernels answer ARP for any local address now. */
      readonly affected: readonly string[];
      readonly warnings: readonly string[];
      readonly disabledReason: string | null;
    };

/**
 * strictArpFix plans the one-click fix (DESIGN 2.4): set strictARP in kube-proxy's config, keeping every other byte,
 * when kube-proxy runs in IPVS mode and it is not set yet; with the warnings an SRE needs before applying it.
 */
export function strictArpFix(input: FixInput): FixPlan {
  const p = patchStrictArp(input.config);
  if (!p.ok) return { ok: false, message: p.message };
  const parsed = parseKubeProxyConfig(input.config);
  const mode = parsed.ok ? parsed.value.mode : "";
  const disabledReason =
    mode !== "ipvs"
      ? `kube-proxy runs in ${mode === "" ? "iptables" : mode} mode: it binds no LoadBalancer IP to an interface, so there is nothing to fix`
      : !p.changed
        ? "strictARP is already true in the ConfigMap; if nodes still answer, restart kube-proxy (the drift on the Overview says which)"
        : null;
  const warnings = [
    ...(input.kubeadm ? ["kubeadm: the ConfigMap is the place, and kubeadm upgrade reads it back, so the setting survives upgrades."] : []),
    "If an installer manages this cluster, persist the setting there too or its next run undoes it: kubespray kube_proxy_strict_arp: true; Kubermatic KKP spec.clusterNetwork.ipvs.strictArp; KubeOne clusterNetwork.kubeProxy.ipvs.strictARP.",
    ...(input.antrea ? ["Antrea is installed: Antrea Egress does not work with strictARP (Antrea's documentation)."] : []),
  ];
  const affected = input.nodes.filter((n) => n.facts !== null && !nodeArp(n.facts).strict).map((n) => n.node);
  return {
    ok: true,
    mode,
    strictARP: parsed.ok && parsed.value.strictARP,
    patched: p.text,
    changed: p.changed,
    affected,
    warnings,
    disabledReason,
  };
}

/**
 * nodesAfterFix sorts the nodes the fix must reach by what their agents report: `loose` still answer ARP for any
 * local address, `silent` have no report (no agent, its agent down, or no facts yet), and cannot count as fixed.
 * `expected` is the cluster's Nodes, or the agents' nodes when the cluster's list is unknown.
 */
export function nodesAfterFix(
  expected: readonly string[],
  agents: readonly { readonly node: string; readonly up: boolean; readonly facts: NodeFacts | null }[],
): { readonly loose: string[]; readonly silent: string[]; readonly strict: string[] } {
  const byNode = new Map(agents.map((a) => [a.node, a]));
  const out = { loose: [] as string[], silent: [] as string[], strict: [] as string[] };
  for (const node of expected) {
    const a = byNode.get(node);
    if (a === undefined || !a.up || a.facts === null) out.silent.push(node);
    else if (nodeArp(a.facts).strict) out.strict.push(node);
    else out.loose.push(node);
  }
  return out;
}

/** nodesNotFixed says why the nodes left after `seconds` are not fixed, as a person reads it. */
export function nodesNotFixed(r: ReturnType<typeof nodesAfterFix>, seconds: number): string {
  return [
    r.loose.length > 0
      ? `${r.loose.join(", ")} still answer ARP for any local address: their kube-proxy did not apply strictARP (is it in IPVS mode there? did its pod restart?)`
      : null,
    r.silent.length > 0
      ? `${r.silent.join(", ")}: no report from whohas's agent in ${seconds} s, so the fix is not verified there (is the agent running on that node?)`
      : null,
    r.strict.length + r.loose.length + r.silent.length === 0 ? "no node to check: no agent reports and the cluster lists no Node" : null,
  ]
    .filter((x) => x !== null)
    .join("; ");
}

/**
 * probeCoverage says why a probe's rounds are not enough evidence for one IP, or null. Every prober must have
 * reported (what a failed one would have heard is missing), and two must have probed wherever two nodes can: a node
 * never hears its own answer (it is unicast to the asker, itself), so from one node alone a probe cannot see that
 * node answering as well.
 */
export function probeCoverage(ip: string, probers: readonly string[], failed: readonly string[], nodesUp: number): string | null {
  if (failed.length > 0) return `${ip}: the probe from ${failed.join(" and ")} did not report, so what it heard is missing`;
  if (probers.length < Math.min(2, nodesUp))
    return `${ip}: probed from ${probers.join(", ") || "no node"} alone; a node never hears its own answer, so one prober cannot rule out a second responder`;
  return null;
}

/**
 * fixVerdict judges one IP's probe after the fix: every request must be answered once, by the expected owner (by
 * one node when no owner is known). Returns what is still wrong, or null. No request probed is no evidence: the fix
 * is then not verified, never passed.
 */
export function fixVerdict(
  ip: string,
  owner: string | null,
  rounds: readonly { readonly replies: readonly { readonly node: string | null }[] }[],
): string | null {
  if (rounds.length === 0) return `${ip}: the probe sent no request, so nothing shows the fix worked`;
  const several = rounds.filter((r) => r.replies.length > 1).length;
  const wrong = owner === null ? 0 : rounds.filter((r) => r.replies.length === 1 && r.replies[0]?.node !== owner).length;
  const none = rounds.filter((r) => r.replies.length === 0).length;
  return several + wrong + none === 0
    ? null
    : `${ip}: ${several} requests answered by several MACs, ${wrong} by a node other than ${owner ?? "?"}, ${none} unanswered`;
}
