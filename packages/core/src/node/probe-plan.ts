import { chooseProbers } from "./probe-rounds.js";

/** A PlanTarget is one IP key to probe, with what chooses its probers (chooseProbers). */
export interface PlanTarget {
  readonly key: string;
  readonly owner: string | null;
  readonly capturedBy: readonly string[];
}

/** A ProbePlan says who probes which IP, and in which commands. */
export interface ProbePlan {
  /** Each key's probers, in the order chooseProbers picked them (fewer than `n` when fewer nodes are up). */
  readonly probers: ReadonlyMap<string, readonly string[]>;
  /** One probe-many each: a node and the keys it asks at once, never more than its limit. */
  readonly batches: readonly { readonly node: string; readonly keys: readonly string[] }[];
  /** One probe each, for the nodes whose agent takes no probe-many (a release before it). */
  readonly singles: readonly { readonly node: string; readonly key: string }[];
}

/**
 * planProbes picks each key's `n` probers (chooseProbers, with `random`) and groups the work by node: a node whose
 * agent takes probe-many (`limitOf` gives its limit; null: it does not) gets its keys in as few commands as its limit
 * allows, split evenly (300 keys at a limit of 256 are two commands of 150, not 256 and 44); any other node gets one
 * probe per key. Keys keep their order within each node's commands.
 */
export function planProbes(o: {
  readonly targets: readonly PlanTarget[];
  readonly up: readonly string[];
  readonly n: number;
  readonly limitOf: (node: string) => number | null;
  readonly random: () => number;
}): ProbePlan {
  const probers = new Map<string, readonly string[]>();
  const byNode = new Map<string, string[]>();
  for (const t of o.targets) {
    const chosen = chooseProbers({ up: o.up, owner: t.owner, capturedBy: t.capturedBy, n: o.n, random: o.random });
    probers.set(t.key, chosen);
    for (const node of chosen) {
      const keys = byNode.get(node);
      if (keys === undefined) byNode.set(node, [t.key]);
      else keys.push(t.key);
    }
  }
  const batches: { node: string; keys: string[] }[] = [];
  const singles: { node: string; key: string }[] = [];
  for (const [node, keys] of [...byNode].sort((a, b) => a[0].localeCompare(b[0]))) {
    const limit = o.limitOf(node);
    if (limit === null || limit < 1) {
      for (const key of keys) singles.push({ node, key });
      continue;
    }
    const parts = Math.ceil(keys.length / limit);
    for (let i = 0; i < parts; i++)
      batches.push({ node, keys: keys.slice(Math.floor((i * keys.length) / parts), Math.floor(((i + 1) * keys.length) / parts)) });
  }
  return { probers, batches, singles };
}
