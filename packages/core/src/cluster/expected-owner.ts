import { goIPString } from "../packet/addr.js";
import { elect, type ElectionEndpoint, type ElectionNode, type Election } from "../metallb/election.js";
import { selectorMatches } from "../metallb/selector.js";
import {
  KUBE_VIP_HOST,
  ciliumLeaseName,
  recognise,
  type Announcer,
  type BgpAdvertisement,
  type CiliumL2Policy,
  type L2Advertisement,
  type Lease,
} from "./announcers.js";
import { poolOf, type AddressPool } from "./pools.js";

/** A LoadBalancerService is what whohas needs of a Service of type LoadBalancer. */
export interface LoadBalancerService {
  readonly namespace: string;
  readonly name: string;
  readonly externalTrafficPolicy: "Cluster" | "Local";
  /** status.loadBalancer.ingress[].ip, in order. */
  readonly ingressIPs: readonly string[];
  readonly ports: readonly { readonly port: number; readonly protocol: string }[];
  /** Endpoints of the Service's EndpointSlices. */
  readonly endpoints: readonly ElectionEndpoint[];
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  /** spec.loadBalancerClass; null or absent when unset. */
  readonly loadBalancerClass?: string | null;
}

/** ClusterInput is the cluster as the hub's informers see it. */
export interface ClusterInput {
  readonly services: readonly LoadBalancerService[];
  readonly nodes: readonly ElectionNode[];
  readonly l2Advertisements: readonly L2Advertisement[];
  /** MetalLB's BGPAdvertisements (empty without MetalLB). */
  readonly bgpAdvertisements?: readonly BgpAdvertisement[];
  /** MetalLB's ServiceL2Status objects: which node MetalLB says announces which Service. */
  readonly l2Statuses: readonly { readonly serviceNamespace: string; readonly serviceName: string; readonly node: string }[];
  /** The latest layer 2 nodeAssigned Event per Service ("namespace/name" -> node). */
  readonly nodeAssigned: ReadonlyMap<string, string>;
  /** Whether MetalLB's CRDs exist (MetalLB installed). */
  readonly metallbInstalled: boolean;
  /** MetalLB's IPAddressPools (empty without MetalLB). */
  readonly pools?: readonly AddressPool[];
  /**
   * The nodes running a ready MetalLB speaker Pod; null when the speaker Pods are not known (none found, or not
   * readable): inventoryByIp's assumed speakers stand in.
   */
  readonly speakerNodes?: ReadonlySet<string> | null;
  /** Leases of kube-vip and Cilium (node heartbeats left out). */
  readonly leases?: readonly Lease[];
  readonly ciliumPolicies?: readonly CiliumL2Policy[];
}

/**
 * OwnerSource says where the expected owner came from: MetalLB's ServiceL2Status, its nodeAssigned Event, MetalLB's
 * election computed here, kube-vip's Lease or its vipHost annotation, Cilium's Lease.
 */
export type OwnerSource = "servicel2status" | "event" | "computed" | "kube-vip-lease" | "kube-vip-annotation" | "cilium-lease";

/**
 * Interfaces limits where the owner may answer: interface names (MetalLB) or regular expressions over them
 * (Cilium); null: any interface.
 */
export interface Interfaces {
  readonly names: readonly string[];
  readonly patterns: boolean;
}

/** allowsInterface tells whether an interface of the owner may answer. */
export function allowsInterface(allowed: Interfaces | null, iface: string): boolean {
  if (allowed === null) return true;
  if (!allowed.patterns) return allowed.names.includes(iface);
  return allowed.names.some((p) => {
    try {
      return new RegExp(p).test(iface);
    } catch {
      return false;
    }
  });
}

/** An IpInventory is what the cluster says about one LoadBalancer IP. */
export interface IpInventory {
  readonly ip: string;
  readonly services: readonly {
    readonly namespace: string;
    readonly name: string;
    readonly externalTrafficPolicy: "Cluster" | "Local";
    readonly ports: readonly { readonly port: number; readonly protocol: string }[];
  }[];
  /** The MetalLB IPAddressPool the IP comes from, null when none holds it (or MetalLB is absent). */
  readonly pool: string | null;
  /** What announces it; null: none recognised (the owner is then unknown, never guessed). */
  readonly announcer: Announcer | null;
  /** Why the owner is unknown (or the IP not judged for ARP), when it is. */
  readonly ownerUnknown: string | null;
  readonly expectedOwner: { readonly node: string; readonly source: OwnerSource } | null;
  /** Where the owner may answer; null: any interface. */
  readonly interfaces: Interfaces | null;
  /** The computed election, kept to explain the owner (order, exclusions) even when another source names it. */
  readonly election: Election | null;
  /** Nodes hosting a serving endpoint of the IP's services (for the ETP Local silent-drop check). */
  readonly endpointNodes: readonly string[];
}

interface Owned {
  readonly announcer: Announcer | null;
  readonly ownerUnknown: string | null;
  readonly expectedOwner: IpInventory["expectedOwner"];
  readonly interfaces: Interfaces | null;
  readonly election: Election | null;
}

/**
 * ownerOf decides one Service's announcer and expected owner. MetalLB layer 2: its ServiceL2Status, else its latest
 * layer 2 nodeAssigned Event, else MetalLB's election over the nodes its covering L2Advertisements select that run a
 * ready speaker and are not excluded (and, under Local, host an endpoint); the interfaces of the advertisements that
 * select the owner. kube-vip and Cilium: their Lease's holder. BGP only, or nothing recognised: no owner.
 */
function ownerOf(c: ClusterInput, svc: LoadBalancerService, assumedSpeakers: ReadonlySet<string>): Owned {
  const first = svc.ingressIPs[0];
  const ip = first === undefined ? "" : (goIPString(first) ?? first);
  const pools = c.pools ?? [];
  const poolName = poolOf(ip, pools);
  const pool = pools.find((p) => p.name === poolName) ?? null;
  const r = recognise(svc, ip, pool, {
    metallbInstalled: c.metallbInstalled,
    pools,
    l2Advertisements: c.l2Advertisements,
    bgpAdvertisements: c.bgpAdvertisements ?? [],
    leases: c.leases ?? [],
    ciliumPolicies: c.ciliumPolicies ?? [],
  });
  const none = { expectedOwner: null, interfaces: null, election: null };
  switch (r.announcer) {
    case null:
      return { announcer: null, ownerUnknown: r.why, ...none };
    case "metallb-bgp":
      return { announcer: "metallb-bgp", ownerUnknown: `advertised by BGP only (pool ${r.pool}): routers, not ARP, carry it`, ...none };
    case "kube-vip": {
      const host = svc.annotations?.[KUBE_VIP_HOST];
      const owner =
        r.lease?.holder != null
          ? { node: r.lease.holder, source: "kube-vip-lease" as const }
          : host !== undefined && host !== ""
            ? { node: host, source: "kube-vip-annotation" as const }
            : null;
      return {
        announcer: "kube-vip",
        ownerUnknown: owner === null ? "kube-vip announces it, but neither its Lease nor the vipHost annotation names a holder" : null,
        expectedOwner: owner,
        interfaces: null,
        election: null,
      };
    }
    case "cilium": {
      const holder = r.lease?.holder ?? null;
      const node = holder === null ? undefined : c.nodes.find((n) => n.name === holder);
      const mine = r.policies.filter((p) => node === undefined || p.nodeSelector === null || selectorMatches(p.nodeSelector, node.labels));
      const interfaces =
        mine.length === 0 || mine.some((p) => p.interfaces.length === 0)
          ? null
          : { names: [...new Set(mine.flatMap((p) => p.interfaces))], patterns: true };
      return {
        announcer: "cilium",
        ownerUnknown:
          holder === null ? `Cilium announces it, but its Lease ${ciliumLeaseName(svc.namespace, svc.name)} has no holder` : null,
        expectedOwner: holder === null ? null : { node: holder, source: "cilium-lease" },
        interfaces,
        election: null,
      };
    }
    case "metallb-l2": {
      const key = `${svc.namespace}/${svc.name}`;
      const status = c.l2Statuses.find((s) => s.serviceNamespace === svc.namespace && s.serviceName === svc.name);
      const event = c.nodeAssigned.get(key);
      const election = elect({
        ingressIPs: svc.ingressIPs,
        externalTrafficPolicy: svc.externalTrafficPolicy,
        endpoints: svc.endpoints,
        nodes: c.nodes,
        speakers: c.speakerNodes ?? assumedSpeakers,
        l2Advertisements: r.advertisements,
      });
      const owner =
        status !== undefined
          ? { node: status.node, source: "servicel2status" as const }
          : event !== undefined
            ? { node: event, source: "event" as const }
            : election.owner !== null
              ? { node: election.owner, source: "computed" as const }
              : null;
      const node = owner === null ? undefined : c.nodes.find((n) => n.name === owner.node);
      const selecting = r.advertisements.filter(
        (a) => node === undefined || a.nodeSelectors.length === 0 || a.nodeSelectors.some((s) => selectorMatches(s, node.labels)),
      );
      const interfaces =
        selecting.length === 0 || selecting.some((a) => (a.interfaces ?? []).length === 0)
          ? null
          : { names: [...new Set(selecting.flatMap((a) => a.interfaces ?? []))], patterns: false };
      return {
        announcer: "metallb-l2",
        ownerUnknown: owner === null ? `MetalLB elects no node: ${election.reason ?? "no candidate"}` : null,
        expectedOwner: owner,
        interfaces,
        election,
      };
    }
  }
}

/**
 * inventoryByIp maps each LoadBalancer IP to its Services, its announcer and its expected owner (ownerOf);
 * `assumedSpeakers` stand in for MetalLB's speakers when their Pods are not known (the hub: every Node, as MetalLB's
 * DaemonSet runs).
 */
export function inventoryByIp(c: ClusterInput, assumedSpeakers: ReadonlySet<string>): Map<string, IpInventory> {
  const out = new Map<string, IpInventory>();
  for (const svc of c.services) {
    if (svc.ingressIPs.length === 0) continue;
    const owned = ownerOf(c, svc, assumedSpeakers);
    const endpointNodes = [
      ...new Set(
        svc.endpoints
          .filter((e) => e.ready !== false || e.serving === true)
          .map((e) => e.nodeName)
          .filter((n): n is string => n !== null),
      ),
    ].sort();
    for (const raw of svc.ingressIPs) {
      const ip = goIPString(raw) ?? raw;
      const prev = out.get(ip);
      const entry = { namespace: svc.namespace, name: svc.name, externalTrafficPolicy: svc.externalTrafficPolicy, ports: svc.ports };
      const keep = prev !== undefined && (prev.expectedOwner !== null || owned.expectedOwner === null);
      out.set(ip, {
        ip,
        services: [...(prev?.services ?? []), entry],
        pool: prev?.pool ?? poolOf(ip, c.pools ?? []),
        ...(keep ? pick(prev) : owned),
        endpointNodes: [...new Set([...(prev?.endpointNodes ?? []), ...endpointNodes])].sort(),
      });
    }
  }
  return out;
}

const pick = (v: IpInventory): Owned => ({
  announcer: v.announcer,
  ownerUnknown: v.ownerUnknown,
  expectedOwner: v.expectedOwner,
  interfaces: v.interfaces,
  election: v.election,
});
