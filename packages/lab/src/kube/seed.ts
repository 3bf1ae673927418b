import { KUBEADM_KUBE_PROXY_CONFIG } from "@whohas/core";
import { resourceNamed } from "./resources.js";
import type { KubeObject } from "./store.js";
import type { TestApiServer } from "./server.js";

export interface SeedService {
  readonly namespace: string;
  readonly name: string;
  readonly ip: string;
  readonly externalTrafficPolicy: "Cluster" | "Local";
  /** Nodes with a ready endpoint. */
  readonly endpointNodes: readonly string[];
}

const isV6 = (ip: string): boolean => ip.includes(":");

const create = (api: TestApiServer, resource: string, ns: string | null, body: object) =>
  api.store.create(resourceNamed(resource), ns, body as KubeObject);

/**
 * seedCluster gives the test API server what a kubeadm cluster with MetalLB layer 2 has: Nodes, LoadBalancer Services
 * with their ingress IPs and EndpointSlices, kube-proxy's ConfigMap and DaemonSet, and an L2Advertisement.
 */
export function seedCluster(api: TestApiServer, nodes: readonly string[], services: readonly SeedService[]): void {
  for (const n of nodes) {
    create(api, "nodes", null, {
      metadata: { name: n, labels: { "kubernetes.io/hostname": n, "kubernetes.io/os": "linux" } },
      status: { conditions: [{ type: "Ready", status: "True" }] },
    });
  }
  create(api, "configmaps", "kube-system", {
    metadata: { name: "kube-proxy", labels: { app: "kube-proxy" } },
    data: { "config.conf": KUBEADM_KUBE_PROXY_CONFIG },
  });
  create(api, "daemonsets", "kube-system", {
    metadata: { name: "kube-proxy", labels: { "k8s-app": "kube-proxy" } },
    spec: {
      selector: { matchLabels: { "k8s-app": "kube-proxy" } },
      template: {
        metadata: { labels: { "k8s-app": "kube-proxy" } },
        spec: { containers: [{ name: "kube-proxy", image: "registry.k8s.io/kube-proxy:v1.32.0" }] },
      },
    },
  });
  create(api, "namespaces", null, { metadata: { name: "metallb-system" } });
  create(api, "l2advertisements", "metallb-system", { metadata: { name: "l2" }, spec: {} });
  // The pool MetalLB would hand the Services' IPs out of (the lab's VIPs start at .200 of its benchmarking ranges); one
  // pool can hold both families.
  const ips = services.map((s) => s.ip);
  if (ips.length > 0)
    create(api, "ipaddresspools", "metallb-system", {
      metadata: { name: "lab-pool" },
      spec: { addresses: ips.map((ip) => `${ip}/${isV6(ip) ? 128 : 32}`) },
    });
  for (const s of services) {
    const family = isV6(s.ip) ? "IPv6" : "IPv4";
    if (!api.store.list(resourceNamed("namespaces"), null).some((n) => n.metadata.name === s.namespace))
      create(api, "namespaces", null, { metadata: { name: s.namespace } });
    create(api, "services", s.namespace, {
      metadata: { name: s.name },
      spec: {
        type: "LoadBalancer",
        // What the API server fills in for a single-stack Service of the ingress IP's family.
        ipFamilies: [family],
        ipFamilyPolicy: "SingleStack",
        externalTrafficPolicy: s.externalTrafficPolicy,
        ports: [{ port: 80, protocol: "TCP", targetPort: 8080 }],
        selector: { app: s.name },
      },
      status: { loadBalancer: { ingress: [{ ip: s.ip, ipMode: "VIP" }] } },
    });
    create(api, "endpointslices", s.namespace, {
      metadata: { name: `${s.name}-abc12`, labels: { "kubernetes.io/service-name": s.name } },
      addressType: family,
      endpoints: s.endpointNodes.map((n, i) => ({
        // Pod addresses: IPv4 from KUBEADM_KUBE_PROXY_CONFIG's clusterCIDR, IPv6 from a unique local prefix (RFC 4193).
        addresses: [family === "IPv6" ? `fd00:10:244:${i}::10` : `10.244.${i}.10`],
        conditions: { ready: true, serving: true, terminating: false },
        nodeName: n,
      })),
      ports: [{ port: 8080, protocol: "TCP" }],
    });
  }
}

/** seedAgentPods writes the whohas agent DaemonSet's Pods (namespace whohas, one per node, Running and Ready). */
export function seedAgentPods(api: TestApiServer, nodes: readonly string[]): void {
  if (!api.store.list(resourceNamed("namespaces"), null).some((n) => n.metadata.name === "whohas"))
    create(api, "namespaces", null, { metadata: { name: "whohas" } });
  for (const n of nodes) {
    create(api, "pods", "whohas", {
      metadata: { name: `whohas-agent-${n}`, labels: { "app.kubernetes.io/name": "whohas-agent" } },
      spec: { nodeName: n, serviceAccountName: "whohas-agent", containers: [{ name: "agent", image: "whohas/agent" }] },
      status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
    });
  }
}
