import { createHash } from "node:crypto";
import { goIPString } from "../packet/addr.js";
import { type LabelSelector, selectorMatches } from "./selector.js";

/** EXCLUDE_LB_LABEL: nodes carrying this label key (any value) never announce (MetalLB speaker, DESIGN 2.1). */
export const EXCLUDE_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers";

/** An ElectionNode is what the election needs to know of a Kubernetes Node. */
export interface ElectionNode {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** The NetworkUnavailable condition is True. */
  readonly networkUnavailable: boolean;
}

/** An ElectionEndpoint is one endpoint of an EndpointSlice of the Service. */
export interface ElectionEndpoint {
  readonly nodeName: string | null;
  /** conditions.ready: null when the field is absent (Kubernetes treats absent as ready). */
  readonly ready: boolean | null;
  /** conditions.serving: null when absent. */
  readonly serving: boolean | null;
}

export interface ElectionInput {
  /** status.loadBalancer.ingress IPs, in order: MetalLB hashes the first one. */
  readonly ingressIPs: readonly string[];
  readonly externalTrafficPolicy: "Cluster" | "Local";
  readonly endpoints: readonly ElectionEndpoint[];
  readonly nodes: readonly ElectionNode[];
  /** Nodes with a live speaker (memberlist members, suspects included). */
  readonly speakers: ReadonlySet<string>;
  /**
   * nodeSelectors of every L2Advertisement that covers the Service's pool; an advertisement with no selectors
   * selects every node. No advertisement at all: nobody announces.
   */
  readonly l2Advertisements: readonly { readonly nodeSelectors: readonly LabelSelector[] }[];
}

/** Why a node is not a candidate. */
export type ExclusionReason = "no-speaker" | "network-unavailable" | "excluded-by-label" | "not-selected" | "no-local-endpoint";

/** An Election is the outcome: the owner (or null) and how it was decided, so the UI can explain it. */
export interface Election {
  readonly owner: string | null;
  /** Candidates in MetalLB's order: the first owns the IP. */
  readonly order: readonly string[];
  /** The text hashed with each node name: Go's net.IP.String() of the first ingress IP. */
  readonly key: string | null;
  readonly excluded: readonly { readonly node: string; readonly reason: ExclusionReason }[];
  /** Why nobody owns the IP, when owner is null. */
  readonly reason: "no-ingress-ip" | "no-serving-endpoint" | "no-candidate" | null;
}

/** canServe is MetalLB's rule: ready nil or true, or serving true. */
export function canServe(e: ElectionEndpoint): boolean {
  return e.ready === null || e.ready || e.serving === true;
}

/** electionHash is sha256(node + "#" + ip), the raw 32 bytes MetalLB sorts by. */
export function electionHash(node: string, ip: string): Buffer {
  return createHash("sha256").update(`${node}#${ip}`).digest();
}

/**
 * orderCandidates sorts nodes ascending by electionHash, as MetalLB's layer 2 controller does: the first wins.
 * Every speaker computes this alone, so they agree only when they feed it the same candidate set; different views
 * (a partition, a lagging informer) give two owners or none (DESIGN 2.1 point 5).
 */
export function orderCandidates(nodes: readonly string[], ip: string): string[] {
  const keyed = nodes.map((n) => ({ n, h: electionHash(n, ip) }));
  keyed.sort((a, b) => Buffer.compare(a.h, b.h) || (a.n < b.n ? -1 : a.n > b.n ? 1 : 0));
  return keyed.map((k) => k.n);
}

/** elect computes which node MetalLB layer 2 makes announce a Service's IP (speaker ShouldAnnounce, v0.14-v0.16). */
export function elect(input: ElectionInput): Election {
  const first = input.ingressIPs[0];
  const key = first === undefined ? null : goIPString(first);
  const excluded: { node: string; reason: ExclusionReason }[] = [];
  if (key === null) return { owner: null, order: [], key: null, excluded, reason: "no-ingress-ip" };
  const serving = input.endpoints.filter(canServe);
  if (serving.length === 0) return { owner: null, order: [], key, excluded, reason: "no-serving-endpoint" };
  const localNodes = new Set(serving.map((e) => e.nodeName).filter((n): n is string => n !== null));
  const candidates: string[] = [];
  for (const node of input.nodes) {
    const reason = exclusion(node, input, localNodes);
    if (reason === null) candidates.push(node.name);
    else excluded.push({ node: node.name, reason });
  }
  const order = orderCandidates(candidates, key);
  return { owner: order[0] ?? null, order, key, excluded, reason: order.length === 0 ? "no-candidate" : null };
}

function exclusion(node: ElectionNode, input: ElectionInput, localNodes: ReadonlySet<string>): ExclusionReason | null {
  if (!input.speakers.has(node.name)) return "no-speaker";
  if (node.networkUnavailable) return "network-unavailable";
  if (Object.hasOwn(node.labels, EXCLUDE_LB_LABEL)) return "excluded-by-label";
  const selected = input.l2Advertisements.some(
    (a) => a.nodeSelectors.length === 0 || a.nodeSelectors.some((s) => selectorMatches(s, node.labels)),
  );
  if (!selected) return "not-selected";
  if (input.externalTrafficPolicy === "Local" && !localNodes.has(node.name)) return "no-local-endpoint";
  return null;
}
