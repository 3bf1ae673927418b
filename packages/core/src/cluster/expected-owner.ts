import { goIPString } from "../packet/addr.js";
import { elect, type ElectionEndpoint, type ElectionNode, type Election } from "../metallb/election.js";
import type { LabelSelector } from "../metallb/selector.js";
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
}

/** ClusterInput is the cluster as the hub's informers see it. */
export interface ClusterInput {
  readonly services: readonly LoadBalancerService[];
  readonly nodes: readonly ElectionNode[];
  readonly l2Advertisements: readonly { readonly nodeSelectors: readonly LabelSelector[] }[];
  /** MetalLB's ServiceL2Status objects: which node MetalLB says announces which Service. */
  readonly l2Statuses: readonly { readonly serviceNamespace: string; readonly serviceName: string; readonly node: string }[];
  /** The latest nodeAssigned Event per Service ("namespace/name" -> node). */
  readonly nodeAssigned: ReadonlyMap<string, string>;
  /** Whether the l2advertisements resource exists (MetalLB installed); without it every node may announce. */
  readonly metallbInstalled: boolean;
  /** MetalLB's IPAddressPools (empty without MetalLB). */
  readonly pools?: readonly AddressPool[];
}

/** OwnerSource says where the expected owner came from, in the order whohas trusts them (issue 5). */
export type OwnerSource = "servicel2status" | "event" | "computed";

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
  readonly expectedOwner: { readonly node: string; readonly source: OwnerSource } | null;
  /** The computed election, kept to explain the owner (order, exclusions) even when another source names it. */
  readonly election: Election | null;
  /** Nodes hosting a serving endpoint of the IP's services (for the ETP Local silent-drop check). */
  readonly endpointNodes: readonly string[];
}

/**
 * inventoryByIp maps each LoadBalancer IP to its Services and its expected owner: MetalLB's ServiceL2Status if
 * present, else the latest nodeAssigned Event, else MetalLB's election computed here from the same inputs MetalLB
 * uses, with `speakers` as the nodes whose speaker is alive (whohas uses the nodes that run an agent).
 */
export function inventoryByIp(c: ClusterInput, speakers: ReadonlySet<string>): Map<string, IpInventory> {
  const out = new Map<string, IpInventory>();
  for (const svc of c.services) {
    const first = svc.ingressIPs[0];
    const key = `${svc.namespace}/${svc.name}`;
    const status = c.l2Statuses.find((s) => s.serviceNamespace === svc.namespace && s.serviceName === svc.name);
    const event = c.nodeAssigned.get(key);
    const election =
      first === undefined
        ? null
        : elect({
            ingressIPs: svc.ingressIPs,
            externalTrafficPolicy: svc.externalTrafficPolicy,
            endpoints: svc.endpoints,
            nodes: c.nodes,
            speakers,
            l2Advertisements: c.metallbInstalled ? c.l2Advertisements : [{ nodeSelectors: [] }],
          });
    const owner =
      status !== undefined
        ? { node: status.node, source: "servicel2status" as const }
        : event !== undefined
          ? { node: event, source: "event" as const }
          : election?.owner
            ? { node: election.owner, source: "computed" as const }
            : null;
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
      out.set(ip, {
        ip,
        services: [...(prev?.services ?? []), entry],
        pool: prev?.pool ?? poolOf(ip, c.pools ?? []),
        expectedOwner: prev?.expectedOwner ?? owner,
        election: prev?.election ?? election,
        endpointNodes: [...new Set([...(prev?.endpointNodes ?? []), ...endpointNodes])].sort(),
      });
    }
  }
  return out;
}
