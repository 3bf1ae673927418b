import { fixVerdict, nodesAfterFix, nodesNotFixed, probeCoverage, type NodeFacts } from "@whohas/core";
import type { Actions } from "../actions/actions.js";

export interface VerifyNodesOptions {
  /** The cluster's Nodes, or null when it lists none (the agents' nodes are checked then). */
  readonly clusterNodes: () => string[] | null;
  readonly agents: () => readonly { readonly node: string; readonly up: boolean; readonly facts: NodeFacts | null }[];
  readonly clock: () => number;
  readonly timeoutMs: number;
  readonly say: (line: string) => void;
}

/**
 * verifyNodes waits until every node reports the strict ARP sysctls, and throws what is still wrong after
 * `timeoutMs`: nodes still answering for any address, and nodes whose agent does not report (not verified).
 */
export async function verifyNodes(o: VerifyNodesOptions): Promise<void> {
  const end = o.clock() + o.timeoutMs;
  for (;;) {
    const agents = o.agents();
    // Every Node of the cluster must show the fix; a node whose agent does not report is not verified.
    const expected = o.clusterNodes() ?? agents.map((a) => a.node);
    const r = nodesAfterFix(expected, agents);
    const waiting = [...r.loose, ...r.silent];
    o.say(
      waiting.length === 0
        ? `all ${r.strict.length} nodes: arp_ignore=1, arp_announce=2`
        : `waiting for ${waiting.join(", ")} (agents report every 10 s)`,
    );
    if (expected.length > 0 && waiting.length === 0) return;
    if (o.clock() > end) throw new Error(nodesNotFixed(r, Math.round(o.timeoutMs / 1000)));
    await new Promise((res) => setTimeout(res, 1000));
  }
}

/**
 * PROBE_BATCH: LoadBalancer IPs probed at once during verification (each from two nodes; the dashboard's probes
 * share the limit of eight at once). Every IP is probed, batch after batch.
 */
export const PROBE_BATCH = 6;

/** A Checked IP is what verification found for one LoadBalancer IP: `problem` null when it proved the fix. */
export interface Checked {
  readonly ip: string;
  readonly owner: string | null;
  readonly requests: number;
  readonly problem: string | null;
}

export interface VerifyProbesOptions {
  /** Every LoadBalancer IP announced over ARP/NDP, with its expected owner (null: any one node will do). */
  readonly ips: readonly { readonly ip: string; readonly owner: string | null }[];
  readonly actions: Pick<Actions, "probe" | "view" | "durations">;
  /** How many nodes can probe (agents up). */
  readonly nodesUp: () => number;
  readonly by: string;
  /** Progress, one line per batch. */
  readonly say: (line: string) => void;
  /** Each IP as it is judged (the run shows them as they come). */
  readonly checked: (c: Checked) => void;
  /** How long to wait between looks at running probes. */
  readonly pollMs?: number;
}

/**
 * verifyProbes probes every IP in batches of PROBE_BATCH and judges each: answered once per request, by its owner,
 * seen by every prober. A probe that is gone, failed, or lacks a prober is no evidence, and so a problem.
 */
export async function verifyProbes(o: VerifyProbesOptions): Promise<Checked[]> {
  const out: Checked[] = [];
  const batches = Math.ceil(o.ips.length / PROBE_BATCH);
  for (let b = 0; b < batches; b++) {
    const batch = o.ips.slice(b * PROBE_BATCH, (b + 1) * PROBE_BATCH);
    o.say(
      `probing ${batch.map((v) => v.ip).join(", ")} from two nodes for ${Math.round(o.actions.durations.probeMs / 1000)} s (batch ${b + 1} of ${batches}, ${o.ips.length} IPs)`,
    );
    const ids = batch.map((v) => o.actions.probe(v.ip, o.by));
    const nodesUp = o.nodesUp();
    for (;;) {
      const views = ids.map((id) => o.actions.view(id));
      if (views.every((v) => v?.state !== "running")) {
        batch.forEach(({ ip, owner }, i) => {
          const v = views[i] ?? null;
          const problem =
            v === null
              ? `${ip}: the probe is gone`
              : v.state === "failed"
                ? `${ip}: the probe failed on every prober (${v.messages.join("; ")})`
                : (probeCoverage(ip, v.probers, v.failedProbers, nodesUp) ?? fixVerdict(ip, owner, v.rounds));
          const c = { ip, owner, requests: v?.rounds.length ?? 0, problem };
          out.push(c);
          o.checked(c);
        });
        break;
      }
      await new Promise((r) => setTimeout(r, o.pollMs ?? 500));
    }
  }
  return out;
}
