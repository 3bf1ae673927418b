/** A ResourceType is one REST resource the test API server serves, as discovery describes it. */
export interface ResourceType {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly shortNames?: readonly string[];
  /** Whether spec changes bump metadata.generation (workloads and CRDs with a status subresource do). */
  readonly generation?: boolean;
  readonly subresources?: readonly "status"[];
}

const VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"];

/** RESOURCES are the kinds whohas reads or writes, and the ones kubectl needs to work against this server. */
export const RESOURCES: readonly ResourceType[] = [
  { group: "", version: "v1", resource: "namespaces", kind: "Namespace", namespaced: false, shortNames: ["ns"] },
  { group: "", version: "v1", resource: "nodes", kind: "Node", namespaced: false, shortNames: ["no"], subresources: ["status"] },
  { group: "", version: "v1", resource: "services", kind: "Service", namespaced: true, shortNames: ["svc"], subresources: ["status"] },
  { group: "", version: "v1", resource: "configmaps", kind: "ConfigMap", namespaced: true, shortNames: ["cm"] },
  { group: "", version: "v1", resource: "events", kind: "Event", namespaced: true, shortNames: ["ev"] },
  { group: "", version: "v1", resource: "secrets", kind: "Secret", namespaced: true },
  { group: "", version: "v1", resource: "serviceaccounts", kind: "ServiceAccount", namespaced: true, shortNames: ["sa"] },
  { group: "", version: "v1", resource: "pods", kind: "Pod", namespaced: true, shortNames: ["po"], subresources: ["status"] },
  {
    group: "",
    version: "v1",
    resource: "persistentvolumeclaims",
    kind: "PersistentVolumeClaim",
    namespaced: true,
    shortNames: ["pvc"],
    subresources: ["status"],
  },
  {
    group: "apps",
    version: "v1",
    resource: "daemonsets",
    kind: "DaemonSet",
    namespaced: true,
    shortNames: ["ds"],
    generation: true,
    subresources: ["status"],
  },
  {
    group: "apps",
    version: "v1",
    resource: "deployments",
    kind: "Deployment",
    namespaced: true,
    shortNames: ["deploy"],
    generation: true,
    subresources: ["status"],
  },
  { group: "discovery.k8s.io", version: "v1", resource: "endpointslices", kind: "EndpointSlice", namespaced: true },
  {
    group: "policy",
    version: "v1",
    resource: "poddisruptionbudgets",
    kind: "PodDisruptionBudget",
    namespaced: true,
    shortNames: ["pdb"],
    generation: true,
    subresources: ["status"],
  },
  {
    group: "networking.k8s.io",
    version: "v1",
    resource: "networkpolicies",
    kind: "NetworkPolicy",
    namespaced: true,
    shortNames: ["netpol"],
    generation: true,
  },
  {
    group: "networking.k8s.io",
    version: "v1",
    resource: "ingresses",
    kind: "Ingress",
    namespaced: true,
    shortNames: ["ing"],
    generation: true,
    subresources: ["status"],
  },
  // Prometheus Operator's CRDs, for deploy/overlays/monitoring.
  {
    group: "monitoring.coreos.com",
    version: "v1",
    resource: "servicemonitors",
    kind: "ServiceMonitor",
    namespaced: true,
    generation: true,
  },
  { group: "monitoring.coreos.com", version: "v1", resource: "podmonitors", kind: "PodMonitor", namespaced: true, generation: true },
  {
    group: "monitoring.coreos.com",
    version: "v1",
    resource: "prometheusrules",
    kind: "PrometheusRule",
    namespaced: true,
    generation: true,
  },
  { group: "rbac.authorization.k8s.io", version: "v1", resource: "clusterroles", kind: "ClusterRole", namespaced: false },
  { group: "rbac.authorization.k8s.io", version: "v1", resource: "clusterrolebindings", kind: "ClusterRoleBinding", namespaced: false },
  { group: "rbac.authorization.k8s.io", version: "v1", resource: "roles", kind: "Role", namespaced: true },
  { group: "rbac.authorization.k8s.io", version: "v1", resource: "rolebindings", kind: "RoleBinding", namespaced: true },
  { group: "authentication.k8s.io", version: "v1", resource: "tokenreviews", kind: "TokenReview", namespaced: false },
  { group: "metallb.io", version: "v1beta1", resource: "ipaddresspools", kind: "IPAddressPool", namespaced: true },
  { group: "metallb.io", version: "v1beta1", resource: "l2advertisements", kind: "L2Advertisement", namespaced: true },
  { group: "metallb.io", version: "v1beta1", resource: "bgpadvertisements", kind: "BGPAdvertisement", namespaced: true },
  { group: "metallb.io", version: "v1beta2", resource: "bgppeers", kind: "BGPPeer", namespaced: true },
  { group: "coordination.k8s.io", version: "v1", resource: "leases", kind: "Lease", namespaced: true },
  {
    group: "cilium.io",
    version: "v2alpha1",
    resource: "ciliuml2announcementpolicies",
    kind: "CiliumL2AnnouncementPolicy",
    namespaced: false,
    shortNames: ["l2announcement"],
  },
  {
    group: "metallb.io",
    version: "v1beta1",
    resource: "servicel2statuses",
    kind: "ServiceL2Status",
    namespaced: true,
    subresources: ["status"],
  },
];

/** apiVersionOf is "v1" for the core group, "group/version" otherwise. */
export function apiVersionOf(r: ResourceType): string {
  return r.group === "" ? r.version : `${r.group}/${r.version}`;
}

/** resourceList is the APIResourceList of one group version (GET /api/v1, /apis/GROUP/VERSION). */
export function resourceList(group: string, version: string, omit: ReadonlySet<string>): unknown {
  const rs = RESOURCES.filter((r) => r.group === group && r.version === version && !omit.has(r.group));
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: group === "" ? version : `${group}/${version}`,
    resources: rs.flatMap((r) => [
      {
        name: r.resource,
        singularName: r.kind.toLowerCase(),
        namespaced: r.namespaced,
        kind: r.kind,
        verbs: VERBS,
        ...(r.shortNames ? { shortNames: r.shortNames } : {}),
      },
      ...(r.subresources ?? []).map((sub) => ({
        name: `${r.resource}/${sub}`,
        singularName: "",
        namespaced: r.namespaced,
        kind: r.kind,
        verbs: ["get", "patch", "update"],
      })),
    ]),
  };
}

/** groupList is the APIGroupList of GET /apis. */
export function groupList(omit: ReadonlySet<string>): unknown {
  const groups = [...new Set(RESOURCES.filter((r) => r.group !== "" && !omit.has(r.group)).map((r) => r.group))];
  return {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: groups.map((g) => {
      // Every version the group serves (MetalLB's BGPPeer is v1beta2 beside v1beta1); the first is preferred.
      const versions = [...new Set(RESOURCES.filter((r) => r.group === g).map((r) => r.version))].map((v) => ({
        groupVersion: `${g}/${v}`,
        version: v,
      }));
      return { name: g, versions, preferredVersion: versions[0] };
    }),
  };
}

/** resourceNamed finds a served resource by plural name (the catalogue is fixed: a miss is a programming error). */
export function resourceNamed(resource: string): ResourceType {
  const r = RESOURCES.find((x) => x.resource === resource);
  if (r === undefined) throw new Error(`no resource ${resource}`);
  return r;
}
