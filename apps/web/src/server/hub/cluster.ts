import {
  inventoryByIp,
  parseKubeProxyConfig,
  strictArpStatus,
  type ClusterInput,
  type DaemonSetRollout,
  type IpInventory,
  type KubeProxyConfig,
  type KubeProxyConfigMap,
  type StrictArpStatus,
} from "@whohas/core";
import type { AgentRegistry } from "./agents.js";
import type { Feed } from "./feed.js";

/** KubeProxyRollout is the state of DaemonSet kube-system/kube-proxy, as `kubectl rollout status` judges it. */
export interface KubeProxyRollout extends DaemonSetRollout {
  /** The last `kubectl rollout restart` (RFC 3339), null when never restarted that way. */
  readonly restartedAt: string | null;
  readonly complete: boolean;
}

/** ClusterSource is what the hub reads of Kubernetes (the informers), or nothing in traffic-only mode. */
export interface ClusterSource {
  snapshot(): ClusterInput;
  kubeProxyConfig(): string | null;
  /** ConfigMap kube-system/kube-proxy with its managedFields; absent in sources that do not keep them. */
  kubeProxyConfigMap?(): KubeProxyConfigMap | null;
  kubeProxyRollout(): KubeProxyRollout | null;
  /** Since when the inventory is out of date (the API server unreachable or refusing), null when in sync. */
  stale?(): { since: number; message: string } | null;
  readonly metallb: boolean;
}

/** ClusterView answers "am I affected?" at the cluster level (the Overview, the read API's /cluster). */
export interface ClusterView {
  readonly kubernetes: "connected" | "off";
  /**
   * While the API server cannot be listed or watched: since when (the inventory shown is as of then) and why. The
   * informers keep retrying and relist when the server is back.
   */
  readonly inventoryStale: { readonly since: number; readonly message: string } | null;
  readonly metallb: boolean;
  /** kube-proxy as configured in ConfigMap kube-system/kube-proxy; null when absent or unreadable. */
  readonly kubeProxy: (KubeProxyConfig & { readonly error: null }) | { readonly error: string } | null;
  readonly kubeProxyRollout: KubeProxyRollout | null;
  /** strictARP as configured against what each node's kernel does (agents' facts), with the drift between them. */
  readonly strictArp: StrictArpStatus;
}

/**
 * The ClusterState is what the hub knows of Kubernetes: the per-IP inventory (Services, expected owners, endpoints)
 * recomputed only when the cluster changes, kube-proxy's configuration read only when its text changes, and the
 * strictARP verdict against the agents' facts.
 */
export class ClusterState {
  #source: ClusterSource | null = null;
  #version = 0;
  #inventory: { version: number; map: Map<string, IpInventory> } | null = null;
  #kubeProxy: { text: string | null; parsed: ReturnType<typeof parseKubeProxyConfig> | null } | null = null;

  constructor(
    readonly agents: AgentRegistry,
    readonly feed: Feed,
  ) {}

  /** connected tells whether the hub reads a cluster (false: traffic-only mode). */
  get connected(): boolean {
    return this.#source !== null;
  }

  /** set gives the hub its cluster (the informers), or takes it away. */
  set(source: ClusterSource | null): void {
    this.#source = source;
    this.changed();
  }

  /** changed is called by the informers when anything they watch changed. */
  changed(): void {
    this.#version++;
    this.feed.publish({ kind: "cluster" });
    this.feed.publish({ kind: "everything" });
  }

  /** version moves with every change of the cluster (what every IP's context depends on). */
  get version(): number {
    return this.#version;
  }

  /**
   * inventory is the cluster's per-IP inventory. MetalLB's speaker is a DaemonSet: every Node of the cluster counts as
   * running one, not only the nodes whose whohas agent is up (an agent that crashed says nothing about the speaker
   * beside it). MetalLB's ServiceL2Status and nodeAssigned Events, when present, name the real owner anyway.
   */
  inventory(): Map<string, IpInventory> {
    const src = this.#source;
    if (src === null) return new Map();
    if (this.#inventory?.version !== this.#version) {
      const snap = src.snapshot();
      this.#inventory = { version: this.#version, map: inventoryByIp(snap, new Set(snap.nodes.map((n) => n.name))) };
    }
    return this.#inventory.map;
  }

  /**
   * nodeKnown says whether Kubernetes lists `node`: null when the hub cannot tell (traffic-only, or no Node listed:
   * an inventory without Nodes must not lock every agent out).
   */
  nodeKnown(node: string): boolean | null {
    const nodes = this.#source?.snapshot().nodes;
    if (nodes === undefined || nodes.length === 0) return null;
    return nodes.some((n) => n.name === node);
  }

  /** nodeNames lists the cluster's Nodes, or null when the hub cannot tell (traffic-only, or no Node listed). */
  nodeNames(): string[] | null {
    const nodes = this.#source?.snapshot().nodes;
    return nodes === undefined || nodes.length === 0 ? null : nodes.map((n) => n.name);
  }

  /** kubeProxyText is kube-proxy's config.conf as stored in its ConfigMap (null without it). */
  kubeProxyText(): string | null {
    return this.#source?.kubeProxyConfig() ?? null;
  }

  /** kubeProxyConfigMap is ConfigMap kube-system/kube-proxy as the revert watch reads it (null without it). */
  kubeProxyConfigMap(): KubeProxyConfigMap | null {
    return this.#source?.kubeProxyConfigMap?.() ?? null;
  }

  /** nodeLabels are the labels of the cluster's Nodes (an installer may mark its nodes). */
  nodeLabels(): Record<string, string>[] {
    return this.#source?.snapshot().nodes.map((n) => n.labels) ?? [];
  }

  #kubeProxyParsed(): ReturnType<typeof parseKubeProxyConfig> | null {
    const text = this.kubeProxyText();
    if (this.#kubeProxy?.text !== text) this.#kubeProxy = { text, parsed: text === null ? null : parseKubeProxyConfig(text) };
    return this.#kubeProxy.parsed;
  }

  view(): ClusterView {
    const src = this.#source;
    const facts = this.agents.list().flatMap((a) => (a.up && a.facts !== null ? [a.facts] : []));
    const parsed = this.#kubeProxyParsed();
    return {
      kubernetes: src === null ? "off" : "connected",
      inventoryStale: src?.stale?.() ?? null,
      metallb: src?.metallb ?? false,
      kubeProxy: parsed === null ? null : parsed.ok ? { ...parsed.value, error: null } : { error: parsed.message },
      kubeProxyRollout: src?.kubeProxyRollout() ?? null,
      strictArp: strictArpStatus(parsed?.ok === true ? parsed.value : null, facts),
    };
  }
}
