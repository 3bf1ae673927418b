import type { Drift } from "../kubeproxy/strict-arp.js";
import type { LiveFinding } from "./findings.js";

/** NODE_SUBJECT_PREFIX marks a finding about a node rather than an IP: its subject is "node/NAME". */
export const NODE_SUBJECT_PREFIX = "node/";

/** nodeSubject is the subject of a node's findings; subjectNode reads the node back (null for an IP). */
export const nodeSubject = (node: string): string => `${NODE_SUBJECT_PREFIX}${node}`;
export const subjectNode = (subject: string): string | null =>
  subject.startsWith(NODE_SUBJECT_PREFIX) ? subject.slice(NODE_SUBJECT_PREFIX.length) : null;

/** CLUSTER_SUBJECT_PREFIX marks a finding about a cluster object (e.g. "cluster/kube-proxy", kube-proxy's ConfigMap). */
export const CLUSTER_SUBJECT_PREFIX = "cluster/";

/** subjectCluster reads the cluster object back from a subject (null for an IP or a node). */
export const subjectCluster = (subject: string): string | null =>
  subject.startsWith(CLUSTER_SUBJECT_PREFIX) ? subject.slice(CLUSTER_SUBJECT_PREFIX.length) : null;

/** subjectIsIp tells an IP key from a node's or a cluster object's subject (no IP key holds a "/"). */
export const subjectIsIp = (subject: string): boolean => subjectNode(subject) === null && subjectCluster(subject) === null;

/**
 * nodeFindings judges the nodes: an agent that is down (the hub decides when: silent past its grace), and a node whose
 * ARP behaviour drifted from kube-proxy's configuration. Keyed by subject, for a FindingTracker like the IPs'.
 */
export function nodeFindings(
  nodes: readonly { readonly node: string; readonly down: boolean; readonly silentForMs: number }[],
  drift: readonly Drift[],
): Map<string, LiveFinding[]> {
  const out = new Map<string, LiveFinding[]>();
  for (const n of nodes) {
    const found: LiveFinding[] = [];
    if (n.down)
      found.push({
        type: "agent-down",
        macs: [],
        detail: `the whohas agent on ${n.node} has been silent for ${Math.round(n.silentForMs / 1000)} s: whohas cannot see what ${n.node} answers`,
      });
    const d = drift.find((x) => x.node === n.node);
    if (d !== undefined) found.push({ type: "strictarp-drift", macs: [], detail: `${n.node}: ${d.message}` });
    out.set(nodeSubject(n.node), found);
  }
  return out;
}
