import { PatchStrategy, setHeaderOptions, type AppsV1Api } from "@kubernetes/client-node";
import { KUBE_PROXY_NAME as NAME, KUBE_PROXY_NAMESPACE as NS, WHOHAS_FIELD_MANAGER, daemonSetRollout, rolloutComplete } from "@whohas/core";
import { kubeMessage } from "./refusals.js";

/** A StepRunner runs one named step of a run, with a way to say how it goes. */
export type StepRunner = (name: string, fn: (say: (detail: string) => void) => Promise<void>) => Promise<void>;

/**
 * restartKubeProxy restarts DaemonSet kube-system/kube-proxy as `kubectl rollout restart` does (the restartedAt
 * annotation) and follows the rollout until every node runs the new Pod, as `kubectl rollout status` judges it: steps
 * "restart" and "rollout". Gives up after `rolloutTimeoutMs` (5 minutes) with the counts and what to check.
 */
export async function restartKubeProxy(apps: AppsV1Api, step: StepRunner, clock: () => number, rolloutTimeoutMs?: number): Promise<void> {
  await step("restart", async (say) => {
    const at = new Date(clock()).toISOString();
    await apps
      .patchNamespacedDaemonSet(
        {
          name: NAME,
          namespace: NS,
          body: { spec: { template: { metadata: { annotations: { "kubectl.kubernetes.io/restartedAt": at } } } } },
          fieldManager: WHOHAS_FIELD_MANAGER,
        },
        setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
      )
      .catch((e: unknown) => {
        throw kubeMessage(e, `restarting DaemonSet ${NS}/${NAME}`);
      });
    say(`kubectl.kubernetes.io/restartedAt=${at}`);
  });
  await step("rollout", async (say) => {
    const end = clock() + (rolloutTimeoutMs ?? 300_000);
    for (;;) {
      const ds = await apps.readNamespacedDaemonSet({ name: NAME, namespace: NS }).catch((e: unknown) => {
        throw kubeMessage(e, `reading DaemonSet ${NS}/${NAME}`);
      });
      const s = ds.status;
      say(`${s?.updatedNumberScheduled ?? 0} of ${s?.desiredNumberScheduled ?? 0} updated, ${s?.numberAvailable ?? 0} available`);
      if (rolloutComplete(daemonSetRollout(ds))) return;
      if (clock() > end)
        throw new Error(
          `the rollout did not complete in ${Math.round((rolloutTimeoutMs ?? 300_000) / 1000)} s (${s?.numberAvailable ?? 0} of ${s?.desiredNumberScheduled ?? 0} available): check kube-proxy's pods (kubectl -n kube-system get pods -l k8s-app=kube-proxy)`,
        );
      await new Promise((r) => setTimeout(r, 500));
    }
  });
}
