/**
 * A cluster name tells the clusters of a fleet apart: every IP, node and incident a hub reports belongs to its
 * cluster, and an agent says which cluster it watches. A name is what `kubectl config` contexts and Prometheus's
 * `cluster` label usually hold: lowercase letters, digits and inner hyphens (a DNS label), at most 40 characters.
 */
export const CLUSTER_NAME = /^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/;

/** DEFAULT_CLUSTER: the cluster of a hub and of an agent that name none (a single cluster). */
export const DEFAULT_CLUSTER = "default";

/** CLUSTER_NAME_HELP says what a cluster name may be, for error messages and --help. */
export const CLUSTER_NAME_HELP = "lowercase letters, digits and inner hyphens, at most 40 (a DNS label), e.g. prod-eu-1";

/** isClusterName: a name a fleet can use. */
export function isClusterName(s: string): boolean {
  return CLUSTER_NAME.test(s);
}
