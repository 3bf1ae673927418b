import { PatchStrategy, setHeaderOptions, type CoreV1Api } from "@kubernetes/client-node";
import {
  KUBE_PROXY_CONFIG_KEY as CONFIG_KEY,
  KUBE_PROXY_NAME as KUBE_PROXY,
  KUBE_PROXY_NAMESPACE as KUBE_PROXY_NS,
  WHOHAS_FIELD_MANAGER,
} from "@whohas/core";
import type { Hub } from "../hub/hub.js";
import { kubeMessage } from "./refusals.js";

const WHERE = `${KUBE_PROXY_NS}/${KUBE_PROXY}`;

/** BACKUPS_KEY: the hub's own copy of every backup (rollback restores from it, byte for byte). */
const BACKUPS_KEY = "remediation.backups";
const MAX_BACKUPS = 20;

/** A Backup is kube-proxy's configuration text as it was before a fix. */
export interface Backup {
  readonly name: string;
  readonly createdAt: number;
  readonly text: string;
}

/** The ConfigMap as read: its config text (undefined when it has none) and its resourceVersion. */
export interface KubeProxyConfigMap {
  readonly text: string | undefined;
  readonly resourceVersion: string | undefined;
}

/**
 * KubeProxyConfig reads and writes kube-proxy's ConfigMap for the fix, and keeps the backups: a ConfigMap beside it,
 * the hub's own copy (what a rollback restores), and the whole text in the audit log (it outlives both).
 */
export class KubeProxyConfig {
  constructor(
    readonly core: CoreV1Api,
    readonly hub: Hub,
  ) {}

  async read(): Promise<KubeProxyConfigMap> {
    const cm = await this.core.readNamespacedConfigMap({ name: KUBE_PROXY, namespace: KUBE_PROXY_NS }).catch((e: unknown) => {
      throw kubeMessage(e, `reading ConfigMap ${WHERE}`);
    });
    return { text: cm.data?.[CONFIG_KEY], resourceVersion: cm.metadata?.resourceVersion };
  }

  /** write replaces the config text, if the ConfigMap is still at `resourceVersion` (else the API server's 409). */
  async write(text: string, resourceVersion: string | undefined, dryRun: boolean, doing: string): Promise<void> {
    await this.core
      .patchNamespacedConfigMap(
        {
          name: KUBE_PROXY,
          namespace: KUBE_PROXY_NS,
          body: { metadata: { resourceVersion }, data: { [CONFIG_KEY]: text } },
          dryRun: dryRun ? "All" : undefined,
          fieldManager: WHOHAS_FIELD_MANAGER,
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      )
      .catch((e: unknown) => {
        throw kubeMessage(e, `${doing} ConfigMap ${WHERE}`);
      });
  }

  /** backups are the hub's copies, newest first. */
  async backups(): Promise<Backup[]> {
    return (await this.hub.store.settings.get<Backup[]>(BACKUPS_KEY)) ?? [];
  }

  /**
   * backUp saves `original` (the text at `resourceVersion`) as a new ConfigMap, and, unless `dryRun`, in the hub's
   * copies and the audit log as `by`'s; returns the backup's name.
   */
  async backUp(original: string, resourceVersion: string, by: string, dryRun: boolean): Promise<string> {
    const now = this.hub.clock();
    const name = `kube-proxy-whohas-backup-${new Date(now)
      .toISOString()
      .replace(/[^0-9]/g, "")
      .slice(0, 14)}`;
    await this.core
      .createNamespacedConfigMap({
        namespace: KUBE_PROXY_NS,
        body: {
          metadata: {
            name,
            namespace: KUBE_PROXY_NS,
            labels: { "app.kubernetes.io/managed-by": "whohas", "whohas.io/backup-of": KUBE_PROXY },
          },
          data: { [CONFIG_KEY]: original },
        },
        dryRun: dryRun ? "All" : undefined,
        fieldManager: WHOHAS_FIELD_MANAGER,
      })
      .catch((e: unknown) => {
        throw kubeMessage(e, `creating backup ConfigMap ${KUBE_PROXY_NS}/${name}`);
      });
    if (dryRun) return name;
    await this.hub.store.settings.set(
      BACKUPS_KEY,
      [{ name, createdAt: now, text: original }, ...(await this.backups())].slice(0, MAX_BACKUPS),
      now,
    );
    await this.hub.store.audit.append({
      t: now,
      actor: by,
      action: "remediation.backup",
      input: { configMap: WHERE, resourceVersion, backup: name },
      outcome: "ok",
      detail: original,
    });
    return name;
  }
}
