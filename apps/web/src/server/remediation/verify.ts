import { fixVerdict, nodesAfterFix, nodesNotFixed, normalizeIpKey, probeCoverage, type NodeFacts } from "@whohas/core";
import type { Actions } from "../actions/actions.js";
import type { ProbedIp } from "../actions/probe-all.js";

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
 * VERIFY_ROUNDS: requests each of an IP's two probers sends it during verification, one a second, every IP at once.
 * A kernel with arp_ignore=0 and a second speaker answer every request, so one request would show them; more are
 * for a responder that answers only some (a speaker flapping between memberlist views, a host rate-limiting its ARP
 * replies): one answering half the requests escapes ten rounds with a chance of 2^-10, under one in a thousand, even
 * when it is itself a prober (the other prober's requests alone). Every request must be answered once, by the owner,
 * so more rounds are also more chances for one lost frame to fail the run; ten keep verification at about eleven
 * seconds whatever the number of IPs, where a minute per IP in batches of six took fifty minutes for 300.
 */
export const VERIFY_ROUNDS = 10;

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
  readonly actions: Pick<Actions, "probeAll">;
  /** How many nodes can probe (agents up). */
  readonly nodesUp: () => number;
  readonly by: string;
  /** Progress, one line at a time. */
  readonly say: (line: string) => void;
  /** Each IP as it is judged (the run shows them as they come). */
  readonly checked: (c: Checked) => void;
}

/**
 * judgeProbed says whether one IP's probe proves the fix: answered once per request, by its owner, seen by every
 * prober. A probe that failed or lacks a prober is no evidence, and so a problem.
 */
export function judgeProbed(p: ProbedIp, owner: string | null, nodesUp: number): Checked {
  const problem =
    p.probers.length > 0 && p.failedProbers.length === p.probers.length
      ? `${p.ip}: the probe failed on every prober (${p.messages.join("; ")})`
      : (probeCoverage(p.ip, p.probers, p.failedProbers, nodesUp) ?? fixVerdict(p.ip, owner, p.rounds));
  return { ip: p.ip, owner, requests: p.rounds.length, problem };
}

/**
 * verifyProbes probes every IP at once, VERIFY_ROUNDS requests each from two nodes (Actions.probeAll), and judges
 * each as its probers are through (judgeProbed). An IP named twice (in any spelling) is probed once, as first named:
 * planProbes would give a prober the same IP twice in one command, which its agent does not ask twice. An IP probeAll
 * returns nothing for is a problem too: nothing shows the fix worked there.
 */
export async function verifyProbes(o: VerifyProbesOptions): Promise<Checked[]> {
  const owners = new Map<string, string | null>();
  const named = new Set<string>();
  for (const v of o.ips) {
    const key = normalizeIpKey(v.ip) ?? v.ip;
    if (named.has(key)) continue;
    named.add(key);
    owners.set(v.ip, v.owner);
  }
  const nodesUp = o.nodesUp();
  const out: Checked[] = [];
  const judged = new Set<string>();
  const record = (c: Checked) => {
    judged.add(c.ip);
    out.push(c);
    o.checked(c);
  };
  await o.actions.probeAll([...owners.keys()], o.by, VERIFY_ROUNDS, o.say, (p) => {
    if (!owners.has(p.ip) || judged.has(p.ip)) return;
    record(judgeProbed(p, owners.get(p.ip) ?? null, nodesUp));
  });
  for (const [ip, owner] of owners)
    if (!judged.has(ip))
      record({ ip, owner, requests: 0, problem: `${ip}: the probe returned nothing for it, so nothing shows the fix worked` });
  return out;
}
