import {
  FindingTracker,
  KUBE_PROXY_SUBJECT,
  REVERT_WATCH_START,
  nodeFindings,
  resumeRevertWatch,
  revertFindings,
  subjectNode,
  watchStrictArp,
  type OpenFinding,
  type RevertWatch,
  type StrictArpRevert,
  type Transition,
} from "@whohas/core";
import { holdingFindings, type Incident } from "../store/incidents.js";
import type { AgentRegistry } from "./agents.js";
import type { ClusterState } from "./cluster.js";

/**
 * STRICT_ARP_SEEN: the setting that keeps the last strictARP the revert watch read, so that a hub restarted while an
 * installer ran (installers drain and restart nodes, the hub's among them) still sees true -> false.
 */
export const STRICT_ARP_SEEN = "kubeproxy.strictArpSeen";

/** What judging nodes and the cluster reads. */
export interface NodeJudgingOptions {
  readonly agents: AgentRegistry;
  readonly cluster: ClusterState;
  /** Keeps the last strictARP seen across restarts (absent: not kept); written in the background. */
  readonly keepStrictArp?: (seen: boolean, now: number) => void;
}

/** A Record keeps one finding's transition in its subject's incident, with the evidence an incident that opens records. */
type Record = (t: Transition, subject: string, evidence: unknown) => void;

/**
 * NodeJudging judges what is not an IP, once a round: each node (its agent down, its ARP behaviour drifted from
 * kube-proxy's config) and the cluster (strictARP turned from true to false in kube-proxy's ConfigMap).
 */
export class NodeJudging {
  readonly #nodeTracker = new FindingTracker();
  /**
   * The cluster's findings (strictARP reverted) clear as soon as they no longer hold: they follow a ConfigMap's
   * writes, which do not flap as traffic does.
   */
  readonly #clusterTracker = new FindingTracker(0);
  /** The strictARP revert watch over ConfigMap kube-system/kube-proxy, and the ConfigMap it last looked at. */
  #revert: RevertWatch = REVERT_WATCH_START;
  #revertSeen: unknown = undefined;
  /** The strictARP last written to STRICT_ARP_SEEN (written when it changes, not every round). */
  #strictArpKept: boolean | null = null;

  /**
   * Starts from the incidents open in the store (their findings stay open, a revert holds until strictARP is true) and
   * the strictARP last seen before the restart (null: none kept).
   */
  constructor(
    readonly o: NodeJudgingOptions,
    open: readonly Incident[],
    strictArpSeen: boolean | null,
  ) {
    this.#nodeTracker.restore(open.filter((i) => subjectNode(i.ip) !== null).flatMap(holdingFindings));
    this.#clusterTracker.restore(open.filter((i) => i.ip === KUBE_PROXY_SUBJECT).flatMap(holdingFindings));
    // A revert still open when the hub stopped holds until strictARP is true again, not until the hub sees a new one.
    const reverted = open.find(
      (i) => i.ip === KUBE_PROXY_SUBJECT && i.facets.some((f) => f.type === "strictarp-reverted" && f.resolvedAt === null),
    );
    if (reverted !== undefined)
      this.#revert = resumeRevertWatch((reverted.evidence as { revert?: StrictArpRevert } | null)?.revert ?? null);
    else this.#revert = { strictArp: strictArpSeen, reverted: null };
    this.#strictArpKept = this.#revert.strictArp;
  }

  /** judge judges every node and the cluster at `now`; each transition goes to `record`. */
  judge(now: number, record: Record): void {
    this.#judgeNodes(now, record);
    this.#judgeCluster(now, record);
  }

  /** open lists the findings open on nodes and on the cluster. */
  open(): OpenFinding[] {
    return [...this.#nodeTracker.open(), ...this.#clusterTracker.open()];
  }

  #judgeNodes(now: number, record: Record): void {
    const agents = this.o.agents.list();
    const strictArp = this.o.cluster.view().strictArp;
    const nodes = agents.map((a) => ({
      node: a.node,
      down: this.o.agents.dead(a, now),
      silentForMs: this.o.agents.silentFor(a, now),
    }));
    for (const [subject, present] of nodeFindings(nodes, strictArp.drift)) {
      const changes = this.#nodeTracker.update(subject, now, present);
      if (changes.length === 0) continue;
      const node = subjectNode(subject);
      const evidence = {
        agent: agents.find((a) => a.node === node) ?? null,
        arp: strictArp.nodes.find((n) => n.node === node) ?? null,
        drift: strictArp.drift.find((d) => d.node === node) ?? null,
      };
      for (const tr of changes) record(tr, subject, evidence);
    }
  }

  /**
   * #judgeCluster watches kube-proxy's ConfigMap for strictARP turned from true to false (core's watchStrictArp): the
   * incident names who wrote it and the installer's persistence step, and resolves when strictARP is true again. The
   * informer's object is looked at only when it changed (a relist hands the same content: a no-op in the watch too).
   */
  #judgeCluster(now: number, record: Record): void {
    const cm = this.o.cluster.kubeProxyConfigMap();
    if (cm !== this.#revertSeen) {
      this.#revertSeen = cm;
      this.#revert = watchStrictArp(this.#revert, cm, () => this.o.cluster.nodeLabels());
      const seen = this.#revert.strictArp;
      if (seen !== null && seen !== this.#strictArpKept) {
        this.#strictArpKept = seen;
        this.o.keepStrictArp?.(seen, now);
      }
    }
    const changes = this.#clusterTracker.update(KUBE_PROXY_SUBJECT, now, revertFindings(this.#revert));
    for (const tr of changes) record(tr, KUBE_PROXY_SUBJECT, { revert: this.#revert.reverted });
  }
}
