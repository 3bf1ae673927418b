import { request } from "node:https";
import { parseKubeProxyConfig } from "@whohas/core";
import type { Lab, LabNode } from "./lab.js";
import { TEMPLATE_GENERATION } from "./kube/server.js";

/** A KubeClient is the stand-ins' REST client of the test API server (HTTPS, its CA, a Bearer token). */
interface KubeClient {
  readonly url: string;
  readonly ca: string;
  readonly token: string;
}

function call(c: KubeClient, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      `${c.url}${path}`,
      {
        method,
        ca: c.ca,
        headers: {
          authorization: `Bearer ${c.token}`,
          accept: "application/json",
          ...(text === undefined ? {} : { "content-type": "application/json" }),
        },
      },
      (res) => {
        let data = "";
        res.on("data", (d: Buffer) => (data += d.toString()));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, json: data === "" ? {} : (JSON.parse(data) as Record<string, unknown>) }),
        );
      },
    );
    req.on("error", reject);
    req.end(text);
  });
}

const DS = "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy";
const CM = "/api/v1/namespaces/kube-system/configmaps/kube-proxy";
const PODS = "/api/v1/namespaces/kube-system/pods";

/** A KubeProxies handle runs one kube-proxy stand-in per lab node. */
export interface KubeProxies {
  /** The DaemonSet generation each node's kube-proxy last started with. */
  readonly started: ReadonlyMap<string, number>;
  /**
   * Nodes whose kube-proxy runs in iptables mode whatever the ConfigMap says (a node started with its own flags):
   * it restarts and reports Ready, and never sets the sysctls.
   */
  readonly iptablesOn: Set<string>;
  stop(): void;
}

/**
 * startKubeProxies runs a kube-proxy stand-in for every node of the lab: what the real one does about ARP and no
 * more. It starts with the DaemonSet (and again on every restart of it, one node after the other), reads
 * `config.conf` of ConfigMap kube-system/kube-proxy, and, as the IPVS proxier does at start, sets arp_ignore=1 and
 * arp_announce=2 when the mode is ipvs and strictARP is true; it never puts them back (kube-proxy does not either).
 * It then writes its node's Pod, Ready with the DaemonSet's generation, from which the test API server's DaemonSet
 * controller counts the rollout (`kubectl rollout status` completes once every node has restarted).
 */
export function startKubeProxies(client: KubeClient, lab: Lab, log: (line: string) => void = () => undefined): KubeProxies {
  const started = new Map<string, number>();
  const iptablesOn = new Set<string>();
  let busy = false;
  let stopped = false;

  const startOn = async (node: LabNode, generation: number): Promise<void> => {
    const cm = await call(client, "GET", CM);
    const text = ((cm.json.data ?? {}) as Record<string, string>)["config.conf"];
    const parsed = cm.status === 200 && text !== undefined ? parseKubeProxyConfig(text) : null;
    const iptables = iptablesOn.has(node.name);
    if (!iptables && parsed?.ok === true && parsed.value.mode === "ipvs" && parsed.value.strictARP) await lab.setStrictArp(node, true);
    log(
      `kube-proxy on ${node.name}: started generation ${generation} (${iptables ? "mode iptables on this node" : parsed === null ? "no ConfigMap" : parsed.ok ? `mode ${parsed.value.mode}, strictARP ${parsed.value.strictARP}` : parsed.message})`,
    );
    const name = `kube-proxy-${node.name}`;
    const pod = {
      metadata: {
        name,
        namespace: "kube-system",
        labels: { "k8s-app": "kube-proxy" },
        annotations: { [TEMPLATE_GENERATION]: String(generation) },
      },
      spec: { nodeName: node.name, containers: [{ name: "kube-proxy", image: "registry.k8s.io/kube-proxy:v1.32.0" }] },
    };
    const cur = await call(client, "GET", `${PODS}/${name}`);
    const saved =
      cur.status === 200
        ? await call(client, "PUT", `${PODS}/${name}`, {
            ...pod,
            metadata: { ...pod.metadata, resourceVersion: (cur.json.metadata as { resourceVersion: string }).resourceVersion },
          })
        : await call(client, "POST", PODS, pod);
    const rv = (saved.json.metadata as { resourceVersion?: string } | undefined)?.resourceVersion;
    // Started before the Pod says Ready: the Ready Pod completes the rollout, and whoever waited for it (kubectl
    // rollout status) must find this node started.
    started.set(node.name, generation);
    try {
      await call(client, "PUT", `${PODS}/${name}/status`, {
        ...pod,
        metadata: { ...pod.metadata, resourceVersion: rv },
        status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
      });
    } catch (e) {
      started.delete(node.name);
      throw e;
    }
  };

  const loop = async (): Promise<void> => {
    if (busy || stopped) return;
    busy = true;
    try {
      const ds = await call(client, "GET", DS);
      if (ds.status !== 200) return;
      const generation = Number((ds.json.metadata as { generation?: number }).generation ?? 1);
      // A rolling restart: one node at a time, as the DaemonSet controller does with maxUnavailable 1.
      const stale = lab.nodes.find((n) => started.get(n.name) !== generation);
      if (stale !== undefined) await startOn(stale, generation);
    } catch (e) {
      log(`kube-proxy stand-in: ${(e as Error).message}`);
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void loop(), 250);
  timer.unref();
  void loop();
  return {
    started,
    iptablesOn,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
