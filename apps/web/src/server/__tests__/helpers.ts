import { WIRE_VERSION, silentLogger, type AgentMessage, type NodeFacts, type ObservationAggregate, type RequestReport } from "@whohas/core";
import { Auth, type LocalUser } from "../auth/auth.js";
import type { ClusterSource } from "../hub/cluster.js";
import type { Hub } from "../hub/hub.js";

/** testAuth is a real Auth over the hub's store, with the given users and read-API token. */
export function testAuth(hub: Hub, o: { viewerToken?: string | null; users?: readonly LocalUser[] } = {}): Promise<Auth> {
  return Auth.open(
    { users: o.users ?? [], proxy: null, sessionTtlMs: 3_600_000, viewerToken: o.viewerToken ?? null },
    hub.store.access,
    hub.store.settings,
    silentLogger,
    hub.clock,
  );
}

/** A principal for callers made in tests (createCaller): who the procedure believes is asking. */
export const asRole = (role: "viewer" | "operator" | "admin", user = `test-${role}`) => ({
  principal: { user, role, via: "session" as const, csrf: "t" },
  csrfOk: true,
});

/** callerContext is a tRPC context for createCaller: the hub, its audit log, and who asks. */
export const callerContext = (hub: Hub, role: "viewer" | "operator" | "admin", user?: string) => ({
  hub,
  audit: hub.store.audit,
  ...asRole(role, user),
});

type Hello = Extract<AgentMessage, { type: "hello" }>;
type Observations = Extract<AgentMessage, { type: "observations" }>;

/** hello is an agent's first message for `node` with one interface of `mac`. */
export const hello = (node: string, mac: string): Hello => ({
  v: WIRE_VERSION,
  type: "hello",
  node,
  agentVersion: "t",
  interfaces: [{ name: "eth0", mac, up: true }],
});

/** observations is an agent's message with these aggregates and request reports. */
export const observations = (entries: readonly ObservationAggregate[], requests: readonly RequestReport[] = []): Observations => ({
  v: WIRE_VERSION,
  type: "observations",
  dropped: 0,
  entries: [...entries],
  requests: [...requests],
});

/** aggregate is one aggregate of one frame kind for `ip` from `mac`, seen once at `t`. */
export function aggregate(ip: string, kind: ObservationAggregate["kind"], mac: string, t: number, count = 1): ObservationAggregate {
  return { ip, mac, kind, iface: "eth0", count, firstSeen: t, lastSeen: t, targetMac: null, ethernetMismatch: 0, ethSrc: null };
}

/** ASKER is the client whose requests the tests' agents report. */
export const ASKER = { ip: "192.0.2.1", mac: "02:00:5e:00:00:01" };

/**
 * answered is what one node's agent sends for one request it saw at `t`: the request's aggregate and report, and its
 * own reply (`reply`: its MAC) if it answered, `delayMs` after the request.
 */
export function answered(ip: string, t: number, reply: string | null, vlan: number | null = null, delayMs = 0.4): Observations {
  const entries = [aggregate(ip, "request", ASKER.mac, t), ...(reply === null ? [] : [aggregate(ip, "reply", reply, t + 1)])].map((e) => ({
    ...e,
    vlan,
  }));
  return observations(entries, [
    { ip, asker: ASKER.ip, askerMac: ASKER.mac, iface: "eth0", vlan, times: [t], replies: reply === null ? [] : [[0, reply, delayMs]] },
  ]);
}

/** until waits, polling every 20 ms, for `ok` to hold; it throws after `ms`. */
export async function until(ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error("not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * cluster is a Kubernetes inventory for Hub.setCluster: these Nodes, and a LoadBalancer Service (ETP Cluster, no
 * endpoints) for each of `ips`; no MetalLB, no kube-proxy ConfigMap.
 */
export function cluster(nodes: readonly string[], ips: readonly string[] = []): ClusterSource {
  return {
    snapshot: () => ({
      services: ips.map((ip, i) => ({
        namespace: "demo",
        name: `svc-${i}`,
        externalTrafficPolicy: "Cluster" as const,
        ingressIPs: [ip],
        ports: [],
        endpoints: [],
      })),
      nodes: nodes.map((name) => ({ name, labels: {}, networkUnavailable: false })),
      l2Advertisements: [],
      l2Statuses: [],
      nodeAssigned: new Map(),
      metallbInstalled: false,
      pools: [],
    }),
    kubeProxyConfig: () => null,
    kubeProxyRollout: () => null,
    metallb: false,
  };
}

/** facts is a node's facts: `interfaces` as given (name, MAC, addresses), ARP sysctls at the kernel's defaults. */
export function facts(node: string, interfaces: readonly { name: string; mac: string; addresses: readonly string[] }[]): NodeFacts {
  const sysctl = { arpIgnore: 0, arpAnnounce: 0 };
  return {
    node,
    agentVersion: "t",
    interfaces: interfaces.map((i) => ({
      ...i,
      addresses: [...i.addresses],
      up: true,
      master: null,
      own: sysctl,
      effective: sysctl,
      captured: true,
    })),
    sysctl: { all: sysctl, default: sysctl },
    kubeIpvs0: { present: interfaces.some((i) => i.name === "kube-ipvs0"), addresses: 0 },
    kubeProxyMode: "ipvs",
    capture: { frames: 0, dropped: {}, kernelReceived: 0, kernelDropped: 0 },
  };
}
