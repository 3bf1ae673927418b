import {
  ApisApi,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  KubeConfig,
  type KubernetesObject,
  type V1ConfigMap,
  type V1DaemonSet,
  type V1EndpointSlice,
  type V1Node,
  type V1Pod,
  type CoreV1Event,
  type V1Service,
} from "@kubernetes/client-node";
import {
  KUBE_PROXY_CONFIG_KEY,
  KUBE_PROXY_NAME,
  KUBE_PROXY_NAMESPACE,
  daemonSetRollout,
  rolloutComplete,
  type ClusterInput,
  type KubeProxyConfigMap,
  type LabelSelector,
  type LoadBalancerService,
  type Logger,
} from "@whohas/core";
import type { KubeProxyRollout } from "../hub/hub.js";
import { watchResource } from "./watch.js";

interface MetallbObject extends KubernetesObject {
  spec?: {
    nodeSelectors?: LabelSelector[];
    addresses?: string[];
    ipAddressPools?: string[];
    ipAddressPoolSelectors?: LabelSelector[];
    interfaces?: string[];
  };
  status?: { node?: string; serviceName?: string; serviceNamespace?: string };
}

interface LeaseObject extends KubernetesObject {
  spec?: { holderIdentity?: string | null };
}

interface CiliumPolicyObject extends KubernetesObject {
  spec?: { serviceSelector?: LabelSelector; nodeSelector?: LabelSelector; interfaces?: string[]; loadBalancerIPs?: boolean };
}

/** The labels of MetalLB's speaker Pods: its manifests' and its Helm chart's. */
const SPEAKER_SELECTORS = ["app=metallb,component=speaker", "app.kubernetes.io/name=metallb,app.kubernetes.io/component=speaker"];
/** Node heartbeats are Leases too, one per node every 10 s: left out server-side. */
const NOT_NODE_LEASES = "metadata.namespace!=kube-node-lease";
/** Only the annotations whohas reads of a Service (kube-vip's). */
const keepAnnotations = (a: Record<string, string> | undefined) =>
  Object.fromEntries(Object.entries(a ?? {}).filter(([k]) => k.startsWith("kube-vip.io/")));

/** An Inventory keeps the cluster objects whohas needs and renders them as core's ClusterInput. */
export interface Inventory {
  snapshot(): ClusterInput;
  /** Whether MetalLB's CRDs were found by discovery. */
  readonly metallb: boolean;
  /** kube-proxy's config.conf from ConfigMap kube-system/kube-proxy, null when absent. */
  kubeProxyConfig(): string | null;
  /** That ConfigMap with its labels, annotations and managedFields (who wrote what), null when absent. */
  kubeProxyConfigMap(): KubeProxyConfigMap | null;
  /** DaemonSet kube-system/kube-proxy's rollout, null when absent. */
  kubeProxyRollout(): KubeProxyRollout | null;
  /** Since when some informer is out of sync (the inventory is then as of that time), null when all are in sync. */
  stale(): { since: number; message: string } | null;
  stop(): Promise<void>;
}

function toService(s: V1Service, slices: readonly V1EndpointSlice[]): LoadBalancerService {
  const ns = s.metadata?.namespace ?? "";
  const name = s.metadata?.name ?? "";
  const mine = slices.filter((sl) => sl.metadata?.namespace === ns && sl.metadata.labels?.["kubernetes.io/service-name"] === name);
  return {
    namespace: ns,
    name,
    externalTrafficPolicy: s.spec?.externalTrafficPolicy === "Local" ? "Local" : "Cluster",
    ingressIPs: (s.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? "").filter((ip) => ip !== ""),
    labels: s.metadata?.labels ?? {},
    annotations: keepAnnotations(s.metadata?.annotations),
    loadBalancerClass: s.spec?.loadBalancerClass ?? null,
    ports: (s.spec?.ports ?? []).map((p) => ({ port: p.port, protocol: p.protocol ?? "TCP" })),
    endpoints: mine.flatMap((sl) =>
      sl.endpoints.map((e) => ({
        nodeName: e.nodeName ?? null,
        ready: e.conditions?.ready ?? null,
        serving: e.conditions?.serving ?? null,
      })),
    ),
  };
}

/**
 * startInventory lists and watches Services, EndpointSlices, Nodes, kube-proxy's ConfigMap and DaemonSet, nodeAssigned
 * Events and, when discovery shows the metallb.io group, L2Advertisements, ServiceL2Statuses and IPAddressPools. An absent CRD is normal, not an error.
 */
export async function startInventory(kc: KubeConfig, onChange: () => void, logger: Logger): Promise<Inventory> {
  const core = kc.makeApiClient(CoreV1Api);
  const disco = kc.makeApiClient(DiscoveryV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  let metallb = false;
  let cilium = false;
  try {
    const groups = await kc.makeApiClient(ApisApi).getAPIVersions();
    metallb = groups.groups.some((g) => g.name === "metallb.io");
    cilium = groups.groups.some((g) => g.name === "cilium.io");
  } catch (e) {
    logger.warn("kube.discovery_failed", {
      message: (e as Error).message,
      hint: "check the kubeconfig and that the API server is reachable",
    });
  }
  const services = watchResource<V1Service>(kc, "/api/v1/services", () => core.listServiceForAllNamespaces(), onChange, logger);
  const slices = watchResource<V1EndpointSlice>(
    kc,
    "/apis/discovery.k8s.io/v1/endpointslices",
    () => disco.listEndpointSliceForAllNamespaces(),
    onChange,
    logger,
  );
  const nodes = watchResource<V1Node>(kc, "/api/v1/nodes", () => core.listNode(), onChange, logger);
  // Only the objects named kube-proxy: RBAC can then grant list/watch on that one name (resourceNames) and nothing else.
  const configmaps = watchResource<V1ConfigMap>(
    kc,
    `/api/v1/namespaces/${KUBE_PROXY_NAMESPACE}/configmaps`,
    () => core.listNamespacedConfigMap({ namespace: KUBE_PROXY_NAMESPACE, fieldSelector: KUBE_PROXY }),
    onChange,
    logger,
    KUBE_PROXY,
  );
  const apps = kc.makeApiClient(AppsV1Api);
  const daemonsets = watchResource<V1DaemonSet>(
    kc,
    `/apis/apps/v1/namespaces/${KUBE_PROXY_NAMESPACE}/daemonsets`,
    () => apps.listNamespacedDaemonSet({ namespace: KUBE_PROXY_NAMESPACE, fieldSelector: KUBE_PROXY }),
    onChange,
    logger,
    KUBE_PROXY,
  );
  const crd = (plural: string) =>
    watchResource<MetallbObject>(
      kc,
      `/apis/metallb.io/v1beta1/${plural}`,
      () => custom.listClusterCustomObject({ group: "metallb.io", version: "v1beta1", plural }) as never,
      onChange,
      logger,
    );
  // MetalLB's speaker records "announcing from node X" as an Event on the Service each time it reconciles.
  const assigned = watchResource<CoreV1Event>(
    kc,
    "/api/v1/events",
    () => core.listEventForAllNamespaces({ fieldSelector: NODE_ASSIGNED }),
    onChange,
    logger,
    NODE_ASSIGNED,
  );
  const l2ads = metallb ? crd("l2advertisements") : null;
  const bgpads = metallb ? crd("bgpadvertisements") : null;
  const l2statuses = metallb ? crd("servicel2statuses") : null;
  const pools = metallb ? crd("ipaddresspools") : null;
  // MetalLB's speakers: a node without a ready one is no candidate, whatever runs there.
  const speakers = metallb
    ? SPEAKER_SELECTORS.map((sel) =>
        watchResource<V1Pod>(
          kc,
          "/api/v1/pods",
          () => core.listPodForAllNamespaces({ labelSelector: sel }),
          onChange,
          logger,
          undefined,
          sel,
        ),
      )
    : [];
  // kube-vip's and Cilium's leader election: who holds the Lease announces.
  const leases = watchResource<LeaseObject>(
    kc,
    "/apis/coordination.k8s.io/v1/leases",
    () => kc.makeApiClient(CoordinationV1Api).listLeaseForAllNamespaces({ fieldSelector: NOT_NODE_LEASES }),
    onChange,
    logger,
    NOT_NODE_LEASES,
  );
  const ciliumPolicies = cilium
    ? watchResource<CiliumPolicyObject>(
        kc,
        "/apis/cilium.io/v2alpha1/ciliuml2announcementpolicies",
        () => custom.listClusterCustomObject({ group: "cilium.io", version: "v2alpha1", plural: "ciliuml2announcementpolicies" }) as never,
        onChange,
        logger,
      )
    : null;
  const all = [
    services,
    slices,
    nodes,
    configmaps,
    daemonsets,
    assigned,
    l2ads,
    bgpads,
    l2statuses,
    pools,
    leases,
    ciliumPolicies,
    ...speakers,
  ].filter((w) => w !== null);
  let kubeProxyCm: { from: V1ConfigMap | null; value: KubeProxyConfigMap | null } = { from: null, value: null };
  return {
    metallb,
    kubeProxyConfig: () => {
      const cm = configmaps.list().find((c) => c.metadata?.name === KUBE_PROXY_NAME);
      return cm?.data?.[KUBE_PROXY_CONFIG_KEY] ?? null;
    },
    kubeProxyConfigMap: () => {
      const cm = configmaps.list().find((c) => c.metadata?.name === KUBE_PROXY_NAME) ?? null;
      // The same informer object gives the same answer: the hub looks again only when the ConfigMap changed.
      if (cm !== kubeProxyCm.from) kubeProxyCm = { from: cm, value: cm === null ? null : toKubeProxyConfigMap(cm) };
      return kubeProxyCm.value;
    },
    kubeProxyRollout: () => {
      const ds = daemonsets.list().find((d) => d.metadata?.name === KUBE_PROXY_NAME);
      return ds === undefined ? null : rolloutOf(ds);
    },
    snapshot: () => {
      const sl = slices.list();
      return {
        services: services
          .list()
          .filter((s) => s.spec?.type === "LoadBalancer")
          .map((s) => toService(s, sl)),
        nodes: nodes.list().map((n) => ({
          name: n.metadata?.name ?? "",
          labels: n.metadata?.labels ?? {},
          networkUnavailable: (n.status?.conditions ?? []).some((c) => c.type === "NetworkUnavailable" && c.status === "True"),
        })),
        l2Advertisements: (l2ads?.list() ?? []).map((a) => ({
          name: a.metadata?.name ?? "",
          ipAddressPools: a.spec?.ipAddressPools ?? [],
          ipAddressPoolSelectors: a.spec?.ipAddressPoolSelectors ?? [],
          nodeSelectors: a.spec?.nodeSelectors ?? [],
          interfaces: a.spec?.interfaces ?? [],
        })),
        bgpAdvertisements: (bgpads?.list() ?? []).map((a) => ({
          name: a.metadata?.name ?? "",
          ipAddressPools: a.spec?.ipAddressPools ?? [],
          ipAddressPoolSelectors: a.spec?.ipAddressPoolSelectors ?? [],
        })),
        speakerNodes: speakerNodes(speakers.flatMap((w) => w.list())),
        leases: leases.list().map((l) => ({
          namespace: l.metadata?.namespace ?? "",
          name: l.metadata?.name ?? "",
          holder: l.spec?.holderIdentity ?? null,
        })),
        ciliumPolicies: (ciliumPolicies?.list() ?? []).map((p) => ({
          name: p.metadata?.name ?? "",
          serviceSelector: p.spec?.serviceSelector ?? null,
          nodeSelector: p.spec?.nodeSelector ?? null,
          interfaces: p.spec?.interfaces ?? [],
          loadBalancerIPs: p.spec?.loadBalancerIPs === true,
        })),
        l2Statuses: (l2statuses?.list() ?? []).flatMap((s) =>
          s.status?.node && s.status.serviceName
            ? [{ node: s.status.node, serviceName: s.status.serviceName, serviceNamespace: s.status.serviceNamespace ?? "" }]
            : [],
        ),
        nodeAssigned: latestAssignments(assigned.list()),
        metallbInstalled: metallb,
        pools: (pools?.list() ?? []).map((p) => ({
          name: p.metadata?.name ?? "",
          addresses: p.spec?.addresses ?? [],
          labels: p.metadata?.labels ?? {},
        })),
      };
    },
    stale: () => {
      let oldest: { since: number; message: string } | null = null;
      for (const w of all) {
        const f = w.failing();
        if (f !== null && (oldest === null || f.since < oldest.since)) oldest = f;
      }
      return oldest;
    },
    stop: async () => {
      await Promise.all(all.map((w) => w.stop()));
    },
  };
}

/** KUBE_PROXY selects the kube-proxy ConfigMap and DaemonSet by name, server-side. */
const KUBE_PROXY = `metadata.name=${KUBE_PROXY_NAME}`;

/**
 * toKubeProxyConfigMap keeps what the strictARP revert watch reads: config.conf, labels and annotations (installers
 * may mark their objects) and metadata.managedFields (the API server sends them with every get, list and watch event:
 * the same read RBAC grants, nothing more).
 */
export function toKubeProxyConfigMap(cm: V1ConfigMap): KubeProxyConfigMap {
  return {
    configConf: cm.data?.[KUBE_PROXY_CONFIG_KEY] ?? null,
    labels: cm.metadata?.labels ?? {},
    annotations: cm.metadata?.annotations ?? {},
    managedFields: cm.metadata?.managedFields ?? [],
  };
}

/** rolloutOf reads a DaemonSet's rollout with kubectl's completion rule (core's rolloutComplete). */
export function rolloutOf(ds: V1DaemonSet): KubeProxyRollout {
  const r = daemonSetRollout(ds);
  return {
    ...r,
    restartedAt: ds.spec?.template.metadata?.annotations?.["kubectl.kubernetes.io/restartedAt"] ?? null,
    complete: rolloutComplete(r),
  };
}

/**
 * speakerNodes names the nodes with a ready MetalLB speaker Pod; null when no speaker Pod is seen at all (not
 * readable, or labelled otherwise): the agents' nodes then stand in.
 */
export function speakerNodes(pods: readonly V1Pod[]): Set<string> | null {
  if (pods.length === 0) return null;
  const ready = pods.filter(
    (p) => p.spec?.nodeName !== undefined && (p.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True"),
  );
  return new Set(ready.map((p) => p.spec?.nodeName ?? ""));
}

/** NODE_ASSIGNED selects MetalLB's announcement Events server-side. */
const NODE_ASSIGNED = "reason=nodeAssigned";
/** MetalLB's message: announcing from node "X" with protocol "layer2" (or "bgp"; older versions name none). */
const ANNOUNCING = /announcing from node "([^"]+)"(?: with protocol "([^"]+)")?/;

/** latestAssignments maps each Service ("namespace/name") to the node of its newest layer 2 nodeAssigned Event. */
export function latestAssignments(events: readonly CoreV1Event[]): Map<string, string> {
  const newest = new Map<string, { t: number; node: string }>();
  for (const e of events) {
    const o = e.involvedObject;
    if (o.kind !== "Service" || e.reason !== "nodeAssigned") continue;
    const m = ANNOUNCING.exec(e.message ?? "");
    const node = m?.[1];
    // A BGP announcement says nothing of who answers ARP.
    if (node === undefined || (m?.[2] !== undefined && m[2] !== "layer2")) continue;
    const when = e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp;
    const t = when === undefined ? 0 : new Date(when).getTime();
    const key = `${o.namespace ?? ""}/${o.name ?? ""}`;
    const cur = newest.get(key);
    if (cur === undefined || t >= cur.t) newest.set(key, { t, node });
  }
  return new Map([...newest].map(([k, v]) => [k, v.node]));
}

/** loadKubeConfig reads a kubeconfig file, or the in-cluster ServiceAccount when `path` is null. */
export function loadKubeConfig(path: string | null): KubeConfig {
  const kc = new KubeConfig();
  if (path === null) kc.loadFromCluster();
  else kc.loadFromFile(path);
  return kc;
}
