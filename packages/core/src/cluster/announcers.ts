import { selectorMatches, type LabelSelector } from "../metallb/selector.js";
import type { AddressPool } from "./pools.js";

/**
 * Announcer names what makes a LoadBalancer IP reachable on the wire, as whohas recognises it:
 * - `metallb-l2`: MetalLB layer 2 (an L2Advertisement covers the IP's pool): one node answers ARP/NDP for it.
 * - `metallb-bgp`: MetalLB BGP only (BGPAdvertisements, no L2Advertisement): routers learn it, nobody should answer
 *   ARP for it, so whohas does not judge its ARP.
 * - `kube-vip`: kube-vip in ARP mode: the holder of its Lease answers.
 * - `cilium`: Cilium's L2 announcements: the holder of its per-Service Lease answers.
 * null: none recognised; the owner is then unknown and never guessed.
 */
export type Announcer = "metallb-l2" | "metallb-bgp" | "kube-vip" | "cilium";

/** An L2Advertisement, as much of it as decides who announces (metallb.io/v1beta1). */
export interface L2Advertisement {
  readonly name: string;
  /** spec.ipAddressPools: pools by name. With ipAddressPoolSelectors both empty, every pool. */
  readonly ipAddressPools?: readonly string[];
  readonly ipAddressPoolSelectors?: readonly LabelSelector[];
  /** spec.nodeSelectors: empty selects every node. */
  readonly nodeSelectors: readonly LabelSelector[];
  /** spec.interfaces: where the node may answer; empty: any interface. */
  readonly interfaces?: readonly string[];
}

/** A BGPAdvertisement's pool selection (the rest is for routers). */
export interface BgpAdvertisement {
  readonly name: string;
  readonly ipAddressPools?: readonly string[];
  readonly ipAddressPoolSelectors?: readonly LabelSelector[];
}

/** A Lease of coordination.k8s.io: kube-vip's and Cilium's leader election; holderIdentity is a node name. */
export interface Lease {
  readonly namespace: string;
  readonly name: string;
  readonly holder: string | null;
}

/** A CiliumL2AnnouncementPolicy (cilium.io/v2alpha1), as much as selects Services, nodes and interfaces. */
export interface CiliumL2Policy {
  readonly name: string;
  /** null: every Service. */
  readonly serviceSelector: LabelSelector | null;
  /** null: every node. */
  readonly nodeSelector: LabelSelector | null;
  /** Regular expressions of interface names; empty: any interface. */
  readonly interfaces: readonly string[];
  /** Whether it announces LoadBalancer IPs (spec.loadBalancerIPs). */
  readonly loadBalancerIPs: boolean;
}

/** The classes of spec.loadBalancerClass that name an announcer. */
export const CILIUM_CLASS = "io.cilium/l2-announcer";
export const KUBE_VIP_CLASS = "kube-vip.io/kube-vip-class";
/** kube-vip's Lease when it elects one leader for every Service. */
export const KUBE_VIP_GLOBAL_LEASE = "plndr-svcs-lock";
/** The annotation kube-vip sets on a Service to the node that holds its address. */
export const KUBE_VIP_HOST = "kube-vip.io/vipHost";

/** kubeVipLeaseName: with service election on, kube-vip holds one Lease per Service, in the Service's namespace. */
export const kubeVipLeaseName = (service: string) => `kubevip-${service}`;
/** ciliumLeaseName: Cilium's Lease per announced Service (in Cilium's namespace). */
export const ciliumLeaseName = (namespace: string, service: string) => `cilium-l2announce-${namespace}-${service}`;

/** What the announcer rules need of a Service. */
export interface AnnouncedService {
  readonly namespace: string;
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  /** spec.loadBalancerClass; null when unset. */
  readonly loadBalancerClass?: string | null;
}

/** AnnouncerInput is what the cluster says about the announcers installed. */
export interface AnnouncerInput {
  readonly metallbInstalled: boolean;
  readonly pools: readonly AddressPool[];
  readonly l2Advertisements: readonly L2Advertisement[];
  readonly bgpAdvertisements: readonly BgpAdvertisement[];
  readonly leases: readonly Lease[];
  readonly ciliumPolicies: readonly CiliumL2Policy[];
}

/**
 * covers tells whether an advertisement selects a pool: by name, by a selector over the pool's labels, or every pool
 * when it names none (MetalLB's rule).
 */
export function covers(ad: BgpAdvertisement | L2Advertisement, pool: AddressPool): boolean {
  const names = ad.ipAddressPools ?? [];
  const selectors = ad.ipAddressPoolSelectors ?? [];
  if (names.length === 0 && selectors.length === 0) return true;
  return names.includes(pool.name) || selectors.some((s) => selectorMatches(s, pool.labels ?? {}));
}

/** ciliumPoliciesFor lists the Cilium policies that announce a Service's LoadBalancer IPs. */
export function ciliumPoliciesFor(svc: AnnouncedService, policies: readonly CiliumL2Policy[]): CiliumL2Policy[] {
  return policies.filter((p) => p.loadBalancerIPs && (p.serviceSelector === null || selectorMatches(p.serviceSelector, svc.labels ?? {})));
}

const lease = (leases: readonly Lease[], name: string, namespace?: string) =>
  leases.find((l) => l.name === name && (namespace === undefined || l.namespace === namespace));

/** A Recognised announcer of one IP, with the advertisements or Lease that decide its owner. */
export type Recognised =
  | { readonly announcer: "metallb-l2"; readonly pool: string; readonly advertisements: readonly L2Advertisement[] }
  | { readonly announcer: "metallb-bgp"; readonly pool: string }
  | { readonly announcer: "kube-vip"; readonly lease: Lease | null }
  | { readonly announcer: "cilium"; readonly lease: Lease | null; readonly policies: readonly CiliumL2Policy[] }
  | { readonly announcer: null; readonly why: string };

/**
 * recognise says which announcer serves `ip` of `svc`, from the strongest sign to the weakest: a loadBalancerClass
 * that names one; a Lease or annotation only that announcer makes for this Service; MetalLB's advertisements of
 * the IP's pool (layer 2 wins over BGP for ARP: an IP advertised both ways is judged for its layer 2 part); a Cilium
 * policy that selects the Service; kube-vip's global Lease. Nothing: null, with why.
 */
export function recognise(svc: AnnouncedService, ip: string, pool: AddressPool | null, input: AnnouncerInput): Recognised {
  const cls = svc.loadBalancerClass ?? null;
  const ciliumLease = lease(input.leases, ciliumLeaseName(svc.namespace, svc.name));
  const policies = ciliumPoliciesFor(svc, input.ciliumPolicies);
  if (cls === CILIUM_CLASS || ciliumLease !== undefined) return { announcer: "cilium", lease: ciliumLease ?? null, policies };
  const vipLease = lease(input.leases, kubeVipLeaseName(svc.name), svc.namespace);
  const globalLease = lease(input.leases, KUBE_VIP_GLOBAL_LEASE);
  const vipAnnotated = Object.keys(svc.annotations ?? {}).some((k) => k.startsWith("kube-vip.io/"));
  if (cls === KUBE_VIP_CLASS || vipLease !== undefined || vipAnnotated)
    return { announcer: "kube-vip", lease: vipLease ?? globalLease ?? null };
  if (cls !== null) return { announcer: null, why: `its loadBalancerClass ${cls} names an announcer whohas does not know` };
  if (input.metallbInstalled && pool !== null) {
    const l2 = input.l2Advertisements.filter((a) => covers(a, pool));
    if (l2.length > 0) return { announcer: "metallb-l2", pool: pool.name, advertisements: l2 };
    if (input.bgpAdvertisements.some((a) => covers(a, pool))) return { announcer: "metallb-bgp", pool: pool.name };
  }
  if (policies.length > 0) return { announcer: "cilium", lease: null, policies };
  if (globalLease !== undefined) return { announcer: "kube-vip", lease: globalLease };
  if (input.metallbInstalled && pool !== null)
    return { announcer: null, why: `MetalLB's pool ${pool.name} holds ${ip} but no L2Advertisement or BGPAdvertisement covers it` };
  if (input.metallbInstalled) return { announcer: null, why: `${ip} is in none of MetalLB's IPAddressPools` };
  return { announcer: null, why: "no announcer found: neither MetalLB, kube-vip nor Cilium L2 announcements" };
}
