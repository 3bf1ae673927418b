import type { Json } from "./patch.js";
import { resourceNamed } from "./resources.js";
import { str, type KubeObject, type Store } from "./store.js";
import type { TestApiServerOptions } from "./server.js";

/** TEMPLATE_GENERATION: the DaemonSet generation a Pod runs (the lab's stand-in for pod-template-generation). */
export const TEMPLATE_GENERATION = "whohas.lab/template-generation";

/**
 * runDaemonSetController is the DaemonSet controller, reduced to what `kubectl rollout status` reads. With `fromPods`
 * a DaemonSet's status comes from the Pods its selector matches (their TEMPLATE_GENERATION and Ready condition);
 * without, every node runs the current generation `rolloutDelayMs` after it changes.
 */
export function runDaemonSetController(store: Store, o: { readonly fromPods: boolean; readonly rolloutDelayMs: number }): void {
  const dsStatusFromPods = () => {
    const nodes = store.list(resourceNamed("nodes"), null).length;
    for (const ds of store.list(resourceNamed("daemonsets"), null)) {
      const gen = Number(ds.metadata.generation ?? 1);
      const sel =
        (((ds.spec ?? {}) as Record<string, Json>).selector as { matchLabels?: Record<string, string> } | undefined)?.matchLabels ?? {};
      const pods = store
        .list(resourceNamed("pods"), str(ds.metadata.namespace))
        .filter((p) => Object.entries(sel).every(([k, v]) => (p.metadata.labels as Record<string, Json> | undefined)?.[k] === v));
      const updated = pods.filter(
        (p) => (p.metadata.annotations as Record<string, Json> | undefined)?.[TEMPLATE_GENERATION] === String(gen),
      );
      const ready = updated.filter((p) =>
        ((((p.status ?? {}) as Record<string, Json>).conditions ?? []) as { type: string; status: string }[]).some(
          (c) => c.type === "Ready" && c.status === "True",
        ),
      );
      const next = {
        observedGeneration: gen,
        desiredNumberScheduled: nodes,
        currentNumberScheduled: pods.length,
        updatedNumberScheduled: updated.length,
        numberAvailable: ready.length,
        numberReady: ready.length,
        numberMisscheduled: 0,
      };
      if (JSON.stringify(ds.status ?? {}) === JSON.stringify(next)) continue;
      store.update(
        resourceNamed("daemonsets"),
        str(ds.metadata.namespace),
        str(ds.metadata.name),
        { ...ds, status: next },
        { status: true },
      );
    }
  };
  store.subscribe((e) => {
    if (o.fromPods) {
      if (e.r.resource === "pods" || (e.r.resource === "daemonsets" && e.type !== "DELETED")) queueMicrotask(dsStatusFromPods);
      return;
    }
    if (e.r.resource !== "daemonsets" || e.type === "DELETED") return;
    const obj = e.object;
    const gen = Number(obj.metadata.generation ?? 1);
    const st = (obj.status ?? {}) as Record<string, Json>;
    if (Number(st.observedGeneration ?? 0) >= gen) return;
    setTimeout(() => {
      try {
        const nodes = Math.max(1, store.list(resourceNamed("nodes"), null).length);
        const cur = store.get(e.r, str(obj.metadata.namespace), str(obj.metadata.name));
        if (Number(cur.metadata.generation ?? 1) !== gen) return;
        store.update(
          e.r,
          str(obj.metadata.namespace),
          str(obj.metadata.name),
          {
            ...cur,
            status: {
              observedGeneration: gen,
              desiredNumberScheduled: nodes,
              currentNumberScheduled: nodes,
              updatedNumberScheduled: nodes,
              numberAvailable: nodes,
              numberReady: nodes,
              numberMisscheduled: 0,
            },
          },
          { status: true },
        );
      } catch {
        // deleted meanwhile
      }
    }, o.rolloutDelayMs).unref();
  });
}

/**
 * reviewToken answers a TokenReview as kube-apiserver does: authenticated only for a known token issued for a
 * requested audience.
 */
export function reviewToken(body: KubeObject, tokens: TestApiServerOptions["serviceAccountTokens"]): unknown {
  const spec = (body.spec ?? {}) as { token?: string; audiences?: string[] };
  const known = spec.token === undefined ? undefined : tokens?.get(spec.token);
  const wanted = spec.audiences ?? [];
  const audiences =
    known === undefined ? [] : wanted.length === 0 ? [...known.audiences] : wanted.filter((a) => known.audiences.includes(a));
  const ok = known !== undefined && (wanted.length === 0 || audiences.length > 0);
  return {
    kind: "TokenReview",
    apiVersion: "authentication.k8s.io/v1",
    metadata: { creationTimestamp: null },
    spec,
    status: ok
      ? {
          authenticated: true,
          user: {
            username: known.user,
            groups: ["system:serviceaccounts"],
            ...(known.extra === undefined ? {} : { extra: known.extra }),
          },
          audiences,
        }
      : { user: {}, error: known === undefined ? "invalid bearer token" : "token audiences do not match" },
  };
}
