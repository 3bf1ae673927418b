import { fixVerdict, probeCoverage } from "@whohas/core";
import type { Actions } from "../actions/actions.js";

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
