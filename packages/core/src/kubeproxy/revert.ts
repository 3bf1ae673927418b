import type { LiveFinding } from "../judge/findings.js";
import { parseKubeProxyConfig } from "./config.js";

// Installers regenerate kube-proxy's ConfigMap on their next run and put strictARP back to what their own
// configuration says (false unless told otherwise): kubespray's kube_proxy_strict_arp, KubeOne's
// clusterNetwork.kubeProxy.ipvs.strictARP, Kubermatic KKP's spec.clusterNetwork.ipvs.strictArp. Who wrote the change
// is in metadata.managedFields, as the API server records it.

/**
 * WHOHAS_FIELD_MANAGER names whohas's own writes to the cluster (the fix, its backups, the rollback): a strictARP put
 * back to false by whohas's rollback is an operator's audited choice, not a revert to page about.
 */
export const WHOHAS_FIELD_MANAGER = "whohas";

/** KUBE_PROXY_SUBJECT is the subject of the findings about ConfigMap kube-system/kube-proxy (a cluster, not an IP or node). */
export const KUBE_PROXY_SUBJECT = "cluster/kube-proxy";

/** A ManagedFieldsEntry is one entry of metadata.managedFields as the API server writes it (and kubectl shows it). */
export interface ManagedFieldsEntry {
  readonly manager?: string;
  /** "Update" for create, update and the patch types; "Apply" for server-side apply. */
  readonly operation?: string;
  readonly apiVersion?: string;
  /** RFC 3339, whole seconds. */
  readonly time?: string | Date;
  readonly fieldsType?: string;
  readonly fieldsV1?: unknown;
  readonly subresource?: string;
}

/** KubeProxyConfigMap is what the revert watch reads of ConfigMap kube-system/kube-proxy. */
export interface KubeProxyConfigMap {
  readonly configConf: string | null;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly managedFields: readonly ManagedFieldsEntry[];
}

/** An Installer is a tool whohas recognises as the one that regenerates kube-proxy's configuration. */
export type Installer = "kkp" | "kubeone" | "kubespray" | "kubeadm" | "unknown";

/** A PersistenceStep says where an installer keeps strictARP, so that its next run writes true. */
export interface PersistenceStep {
  readonly installer: Installer;
  /** The installer as a person names it. */
  readonly name: string;
  readonly title: string;
  readonly why: string;
  /** What to write or run, one copyable text each. */
  readonly commands: readonly string[];
}

/** A StrictArpRevert is strictARP turned from true to false: who wrote it, when, and where to make the fix stay. */
export interface StrictArpRevert {
  /** The field manager owning data.config.conf with the latest time; null when the ConfigMap carries no managedFields. */
  readonly manager: string | null;
  readonly operation: string | null;
  /** When that manager wrote it (ms since the epoch), null when unknown. */
  readonly at: number | null;
  readonly installer: Installer;
  /** What the installer was recognised by (e.g. "field manager kubermatic-operator"); null for "unknown". */
  readonly recognisedBy: string | null;
  readonly step: PersistenceStep;
  readonly detail: string;
}

/**
 * A RevertWatch is what the watch keeps between two looks at the ConfigMap: strictARP as last read (null before
 * the first readable look) and the revert that holds open, if any.
 */
export interface RevertWatch {
  readonly strictArp: boolean | null;
  readonly reverted: StrictArpRevert | null;
}

/** REVERT_WATCH_START is the watch before anything was read: a false seen first is no revert (drift covers it). */
export const REVERT_WATCH_START: RevertWatch = { strictArp: null, reverted: null };

/** resumeRevertWatch is the watch of a restarted hub whose store holds an open revert: it holds until strictARP is true. */
export const resumeRevertWatch = (reverted: StrictArpRevert | null): RevertWatch => ({ strictArp: null, reverted });

/** The path of data.config.conf in managedFields' FieldsV1. */
const CONFIG_CONF_FIELD = ["f:data", "f:config.conf"] as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function owns(e: ManagedFieldsEntry, path: readonly string[]): boolean {
  let cur: unknown = e.fieldsV1;
  for (const p of path) {
    if (!isObject(cur) || !(p in cur)) return false;
    cur = cur[p];
  }
  return true;
}

const timeOf = (e: ManagedFieldsEntry): number | null => {
  if (e.time === undefined) return null;
  const t = e.time instanceof Date ? e.time.getTime() : Date.parse(e.time);
  return Number.isNaN(t) ? null : t;
};

/**
 * lastWriter is the managedFields entry that owns data.config.conf with the latest time: the API server moves a
 * field's ownership to the manager that last changed it (server-side apply managers that set the same value share it).
 */
export function lastWriter(fields: readonly ManagedFieldsEntry[]): ManagedFieldsEntry | null {
  let best: ManagedFieldsEntry | null = null;
  for (const e of fields) {
    if (e.subresource !== undefined && e.subresource !== "") continue;
    if (!owns(e, CONFIG_CONF_FIELD)) continue;
    if (best === null || (timeOf(e) ?? -Infinity) >= (timeOf(best) ?? -Infinity)) best = e;
  }
  return best;
}

/**
 * The names that give an installer away, in a field manager's name or in a label or annotation key. KKP, KubeOne and
 * kubespray all run kubeadm underneath, so they are looked for first and kubeadm only by its own field manager
 * (kubeadm writes the ConfigMap as "kubeadm"). Nothing else is guessed from: kubespray drives kubeadm and kubectl
 * from Ansible, so its writes usually show as kubeadm's or kubectl's.
 */
const SIGNS: readonly { readonly installer: Installer; readonly name: RegExp }[] = [
  { installer: "kkp", name: /kubermatic|(^|[./])k8c\.io\//i },
  { installer: "kubeone", name: /kubeone/i },
  { installer: "kubespray", name: /kubespray/i },
];

/**
 * recogniseInstaller names the installer behind the ConfigMap from the cluster itself: the field manager that wrote
 * config.conf, then the ConfigMap's other field managers, then label and annotation keys on the ConfigMap and on the
 * Nodes. "unknown" when nothing names one: the generic step then lists every installer's place.
 */
export function recogniseInstaller(
  writer: string | null,
  cm: KubeProxyConfigMap,
  nodeLabels: readonly Readonly<Record<string, string>>[] = [],
): { readonly installer: Installer; readonly recognisedBy: string | null } {
  const managers = [...new Set(cm.managedFields.map((e) => e.manager ?? ""))].filter((m) => m !== "" && m !== writer);
  const looks: { what: string; names: readonly string[] }[] = [
    { what: "field manager", names: writer === null ? [] : [writer] },
    { what: "the ConfigMap's other field manager", names: managers },
    { what: "label or annotation on ConfigMap kube-system/kube-proxy", names: [...Object.keys(cm.labels), ...Object.keys(cm.annotations)] },
    { what: "Node label", names: [...new Set(nodeLabels.flatMap((l) => Object.keys(l)))] },
  ];
  for (const look of looks) {
    for (const s of SIGNS) {
      const hit = look.names.find((n) => s.name.test(n));
      if (hit !== undefined) return { installer: s.installer, recognisedBy: `${look.what} ${hit}` };
    }
    if (look.what.endsWith("field manager")) {
      const kubeadm = look.names.find((n) => n === "kubeadm");
      if (kubeadm !== undefined) return { installer: "kubeadm", recognisedBy: `${look.what} ${kubeadm}` };
    }
  }
  return { installer: "unknown", recognisedBy: null };
}

const KKP_PATCH = `kubectl patch clusters.kubermatic.k8c.io <cluster-id> --type merge -p '{"spec":{"clusterNetwork":{"ipvs":{"strictArp":true}}}}'   # on the seed cluster`;
const KUBEONE_YAML = `# kubeone.yaml (KubeOneCluster), then: kubeone apply -m kubeone.yaml
clusterNetwork:
  kubeProxy:
    ipvs:
      strictARP: true`;
const KUBESPRAY_YAML = `# inventory/<cluster>/group_vars/k8s_cluster/k8s-cluster.yml, then run cluster.yml again
kube_proxy_strict_arp: true`;
const KUBEADM_YAML = `# the KubeProxyConfiguration document of the kubeadm config file (kubeadm init / upgrade --config)
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: ipvs
ipvs:
  strictARP: true`;

/** persistenceStep says where `installer` keeps strictARP; "unknown" lists every installer's place. */
export function persistenceStep(installer: Installer): PersistenceStep {
  switch (installer) {
    case "kkp":
      return {
        installer,
        name: "Kubermatic KKP",
        title: "Set spec.clusterNetwork.ipvs.strictArp: true in the KKP Cluster object",
        why: "KKP reconciles kube-proxy's ConfigMap from the Cluster object on the seed: a change made in the user cluster is undone at the next reconcile.",
        commands: [KKP_PATCH],
      };
    case "kubeone":
      return {
        installer,
        name: "KubeOne",
        title: "Set clusterNetwork.kubeProxy.ipvs.strictARP: true in the KubeOneCluster manifest",
        why: "KubeOne writes kube-proxy's configuration from its manifest on every kubeone apply or upgrade.",
        commands: [KUBEONE_YAML],
      };
    case "kubespray":
      return {
        installer,
        name: "kubespray",
        title: "Set kube_proxy_strict_arp: true in kubespray's group_vars (k8s_cluster)",
        why: "kubespray renders kube-proxy's configuration from its inventory variables on every cluster.yml or upgrade-cluster.yml run.",
        commands: [KUBESPRAY_YAML],
      };
    case "kubeadm":
      return {
        installer,
        name: "kubeadm",
        title: "Set ipvs.strictARP: true in the KubeProxyConfiguration kubeadm is given",
        why:
          "kubeadm writes kube-proxy's ConfigMap from the KubeProxyConfiguration in its config file when it is run with one " +
          "(kubeadm init phase addon kube-proxy, kubeadm upgrade apply --config). If kubespray drives kubeadm, set " +
          "kube_proxy_strict_arp: true in its group_vars instead.",
        commands: [KUBEADM_YAML, KUBESPRAY_YAML],
      };
    case "unknown":
      return {
        installer,
        name: "an unrecognised installer",
        title: "Set strictARP where your installer keeps kube-proxy's configuration",
        why:
          "whohas could not tell from the cluster which installer regenerates kube-proxy's ConfigMap. Whatever wrote it will " +
          "write false again on its next run unless its own configuration says true: KKP's Cluster object, KubeOne's " +
          "manifest, kubespray's group_vars or kubeadm's config file.",
        commands: [KKP_PATCH, KUBEONE_YAML, KUBESPRAY_YAML, KUBEADM_YAML],
      };
  }
}

/** NodeLabels gives the Nodes' labels, asked for only when a revert is seen (listing Nodes costs the hub). */
export type NodeLabels = () => readonly Readonly<Record<string, string>>[];

/** strictArpOf reads strictARP as it takes effect: true only in IPVS mode (elsewhere no VIP is bound, nothing to revert). */
function strictArpOf(cm: KubeProxyConfigMap | null): { strictARP: boolean; ipvs: boolean } | null {
  if (cm?.configConf === null || cm?.configConf === undefined) return null;
  const p = parseKubeProxyConfig(cm.configConf);
  return p.ok ? { strictARP: p.value.strictARP, ipvs: p.value.mode === "ipvs" } : null;
}

/** revertOf describes a revert just seen in `cm`. */
export function revertOf(cm: KubeProxyConfigMap, nodeLabels: NodeLabels = () => []): StrictArpRevert {
  const w = lastWriter(cm.managedFields);
  const manager = w?.manager ?? null;
  const at = w === null ? null : timeOf(w);
  const { installer, recognisedBy } = recogniseInstaller(manager, cm, nodeLabels());
  const step = persistenceStep(installer);
  // kubectl names its managers after the command (kubectl-edit, kubectl-patch, kubectl-client-side-apply).
  const by =
    manager === null
      ? "an unknown writer (the ConfigMap carries no managedFields)"
      : `field manager ${manager}${/^kubectl(-|$)/.test(manager) ? " (a person or a script using kubectl)" : ""}`;
  const when = at === null ? "" : ` at ${new Date(at).toISOString()}`;
  const who = installer === "unknown" ? "whohas does not recognise the installer" : `${step.name} (recognised by ${recognisedBy ?? ""})`;
  return {
    manager,
    operation: w?.operation ?? null,
    at,
    installer,
    recognisedBy,
    step,
    detail: `strictARP was turned off in ConfigMap kube-system/kube-proxy by ${by}${when}; ${who}: ${step.title}`,
  };
}

/**
 * watchStrictArp is the revert watch's step: a revert opens when strictARP goes from true to false in IPVS mode
 * between two looks, and holds until strictARP is true again (or kube-proxy leaves IPVS mode, where it does not
 * matter). A ConfigMap absent or unreadable changes nothing (a ConfigMap deleted and recreated with false is a
 * revert). Looking again at the same ConfigMap (a relist, a resync) is a no-op; a first look that sees false is not
 * a revert: nobody was seen turning it off (the drift finding covers a cluster that was never fixed).
 */
export function watchStrictArp(prev: RevertWatch, cm: KubeProxyConfigMap | null, nodeLabels: NodeLabels = () => []): RevertWatch {
  const now = strictArpOf(cm);
  if (now === null || cm === null) return prev;
  // Outside IPVS mode strictARP does nothing: the watch starts again from what it finds when IPVS comes back.
  const strictArp = now.ipvs ? now.strictARP : null;
  if (strictArp !== false) return prev.strictArp === strictArp && prev.reverted === null ? prev : { strictArp, reverted: null };
  if (prev.strictArp === true && prev.reverted === null) {
    const reverted = revertOf(cm, nodeLabels);
    return { strictArp: false, reverted: reverted.manager === WHOHAS_FIELD_MANAGER ? null : reverted };
  }
  return prev.strictArp === false ? prev : { ...prev, strictArp: false };
}

/** revertFindings is what the watch holds, as findings on KUBE_PROXY_SUBJECT. */
export function revertFindings(w: RevertWatch): LiveFinding[] {
  const r = w.reverted;
  return r === null ? [] : [{ type: "strictarp-reverted", macs: [], detail: r.detail, ...(r.at === null ? {} : { at: r.at }) }];
}
