import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "@whohas/core";

/** BACKOFF_MS bounds the restart delay of an informer after an error (403, connection refused...). */
const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 30_000;

export interface Watched<T extends KubernetesObject> {
  list(): readonly T[];
  /** Since when this informer has failed to list or watch (null: it is in sync), and the last error. */
  failing(): { since: number; message: string } | null;
  stop(): Promise<void>;
}

/**
 * HealthWatch is the client's Watch that also tells when a watch request was accepted (200) or failed: ListWatch's
 * own "connect" event fires before the list and the watch are even tried, so it cannot say the informer is in sync.
 */
class HealthWatch extends Watch {
  constructor(
    kc: KubeConfig,
    private readonly onResult: (err: unknown) => void,
  ) {
    super(kc);
  }

  override async watch(
    path: string,
    params: Parameters<Watch["watch"]>[1],
    cb: Parameters<Watch["watch"]>[2],
    done: Parameters<Watch["watch"]>[3],
  ): Promise<AbortController> {
    let failed: unknown = null;
    const c = await super.watch(path, params, cb, (err: unknown) => {
      if (err !== null && err !== undefined) failed = err;
      done(err);
    });
    if (failed === null) this.onResult(null);
    return c;
  }
}

/**
 * watchResource runs one informer (list, then watch from the list's resourceVersion; relist on 410 Gone, as the
 * client does) and restarts it with backoff after any other error, logging a message a person can act on.
 */
export function watchResource<T extends KubernetesObject>(
  kc: KubeConfig,
  path: string,
  list: () => Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>,
  onChange: () => void,
  logger: Logger,
  fieldSelector?: string,
  labelSelector?: string,
): Watched<T> {
  let failing: { since: number; message: string } | null = null;
  // In sync again: the watch was accepted. Told to the hub, which shows the inventory as stale while it is not.
  const synced = () => {
    delay = BACKOFF_MIN_MS;
    if (failing === null) return;
    logger.info("kube.watch_recovered", { path, downForMs: Date.now() - failing.since });
    failing = null;
    onChange();
  };
  const informer = new ListWatch<T>(path, new HealthWatch(kc, synced), list, false, labelSelector, fieldSelector);
  let stopped = false;
  let delay = BACKOFF_MIN_MS;
  for (const ev of ["add", "update", "delete"] as const) informer.on(ev, () => onChange());
  informer.on("error", (err: unknown) => {
    if (stopped) return;
    const e = err as { code?: number; statusCode?: number; body?: string; message?: string };
    const code = e.code ?? e.statusCode;
    if (failing === null) {
      failing = { since: Date.now(), message: `${path}: ${code === undefined ? "" : `${code} `}${e.message ?? String(err)}` };
      onChange();
    }
    logger.warn("kube.watch_failed", {
      path,
      code,
      message: e.message ?? String(err),
      hint: code === 403 ? "the hub's ServiceAccount lacks list/watch on this resource: see deploy/ RBAC" : `retrying in ${delay} ms`,
    });
    setTimeout(() => {
      if (!stopped) void informer.start().catch(() => undefined);
    }, delay).unref();
    delay = Math.min(BACKOFF_MAX_MS, delay * 2);
  });
  void informer.start().catch(() => undefined);
  return {
    list: () => informer.list(),
    failing: () => failing,
    stop: async () => {
      stopped = true;
      await informer.stop();
    },
  };
}
