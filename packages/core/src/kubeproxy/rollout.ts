/** DaemonSetRollout is what `kubectl rollout status` reads of a DaemonSet (its spec generation and status counts). */
export interface DaemonSetRollout {
  readonly generation: number;
  readonly observedGeneration: number;
  readonly desired: number;
  readonly updated: number;
  readonly available: number;
}

/** daemonSetRollout reads a DaemonSet object (as the API returns it) into its rollout counts; absent fields read 0. */
export function daemonSetRollout(ds: {
  readonly metadata?: { readonly generation?: number };
  readonly status?: {
    readonly observedGeneration?: number;
    readonly desiredNumberScheduled?: number;
    readonly updatedNumberScheduled?: number;
    readonly numberAvailable?: number;
  };
}): DaemonSetRollout {
  const s = ds.status;
  return {
    generation: ds.metadata?.generation ?? 0,
    observedGeneration: s?.observedGeneration ?? -1,
    desired: s?.desiredNumberScheduled ?? 0,
    updated: s?.updatedNumberScheduled ?? 0,
    available: s?.numberAvailable ?? 0,
  };
}

/**
 * rolloutComplete is `kubectl rollout status`'s rule for a DaemonSet (DESIGN 2.4): the controller has seen the
 * latest spec, and every node that should run a pod runs an updated, available one.
 */
export function rolloutComplete(r: DaemonSetRollout): boolean {
  return r.generation <= r.observedGeneration && r.updated >= r.desired && r.available >= r.desired;
}
