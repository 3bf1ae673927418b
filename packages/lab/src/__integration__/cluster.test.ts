import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KUBEADM_KUBE_PROXY_CONFIG } from "@whohas/core";
import { startStack, type Stack } from "../stack.js";
import { resourceNamed } from "../kube/resources.js";
import { api as readApi, electedBy, eventually, query } from "./hub-client.js";

interface IpRow {
  ip: string;
  state: string;
  services: { namespace: string; name: string; externalTrafficPolicy: string; ports: { port: number; protocol: string }[] }[];
  pool: string | null;
  expectedOwner: { node: string; source: string } | null;
  responders: { node: string | null; answering: boolean }[];
  silentDropNodes: string[];
}
interface Summary {
  kubernetes: string;
  metallb: boolean;
  kubeProxy: { mode: string; strictARP: boolean } | null;
  kubeProxyRollout: { desired: number; complete: boolean } | null;
  strictArp: { verdict: string; drift: { node: string; reason: string }[]; looseIpvsNodes: string[] };
}

// The hub with real agents and the test API server, through the real @kubernetes/client-node informers.
describe("the hub joins traffic with the cluster", () => {
  let stack: Stack;
  const ips = () => readApi<IpRow[]>(stack.url, stack.viewerToken, "ips");

  beforeAll(async () => {
    stack = await startStack({ nodes: 3, vips: 2, kube: true, requestIntervalMs: 500 });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("reads kube-proxy's mode and strictARP from the ConfigMap, and sees MetalLB", async () => {
    const s = await eventually(
      () => query<Summary>(stack, "cluster.summary"),
      (x) => x.kubeProxy !== null,
      20_000,
    );
    expect(s).toMatchObject({ kubernetes: "connected", metallb: true, kubeProxy: { mode: "ipvs", strictARP: false } });
  });

  it("shows each VIP's Service and the owner MetalLB's election gives, labelled computed", async () => {
    const [vip0, vip1] = stack.lab.vips;
    const rows = await eventually(
      ips,
      (r) => r.filter((x) => x.expectedOwner !== null).length === 2 && r.every((x) => x.responders.length === 3),
      20_000,
    );
    const r0 = rows.find((r) => r.ip === vip0);
    expect(r0?.services).toEqual([
      { namespace: "demo", name: "web-0", externalTrafficPolicy: "Cluster", ports: [{ port: 80, protocol: "TCP" }] },
    ]);
    expect(r0?.pool).toBe("lab-pool");
    expect(r0?.expectedOwner).toEqual({ node: electedBy(["node-1", "node-2", "node-3"], vip0 ?? ""), source: "computed" });
    // ETP Local: only the node with the endpoint (node-3) may own the IP...
    expect(rows.find((r) => r.ip === vip1)?.expectedOwner).toEqual({ node: "node-3", source: "computed" });
    // ...and the other two answer anyway: traffic that reaches them is dropped without a word.
    expect(rows.find((r) => r.ip === vip1)?.silentDropNodes).toEqual(["node-1", "node-2"]);
    expect(r0?.silentDropNodes).toEqual([]);
  });

  it("prefers MetalLB's ServiceL2Status when there is one", async () => {
    api().store.create(resourceNamed("servicel2statuses"), "metallb-system", {
      metadata: { name: "l2-web-0" },
      status: { node: "node-1", serviceName: "web-0", serviceNamespace: "demo" },
    });
    const rows = await eventually(
      ips,
      (r) => r.find((x) => x.ip === stack.lab.vips[0])?.expectedOwner?.source === "servicel2status",
      15_000,
    );
    expect(rows.find((r) => r.ip === stack.lab.vips[0])?.expectedOwner).toEqual({ node: "node-1", source: "servicel2status" });
  });

  it("takes the owner from MetalLB's nodeAssigned Event when there is no ServiceL2Status", async () => {
    api().store.create(resourceNamed("events"), "demo", {
      metadata: { name: "web-1.17a3" },
      involvedObject: { kind: "Service", namespace: "demo", name: "web-1", apiVersion: "v1" },
      reason: "nodeAssigned",
      message: 'announcing from node "node-2" with protocol "layer2"',
      type: "Normal",
      lastTimestamp: new Date().toISOString(),
    });
    const rows = await eventually(ips, (r) => r.find((x) => x.ip === stack.lab.vips[1])?.expectedOwner?.source === "event", 15_000);
    expect(rows.find((r) => r.ip === stack.lab.vips[1])?.expectedOwner).toEqual({ node: "node-2", source: "event" });
  });

  it("follows the ConfigMap through the watch when strictARP is switched on", async () => {
    const cm = resourceNamed("configmaps");
    const cur = api().store.get(cm, "kube-system", "kube-proxy");
    api().store.update(cm, "kube-system", "kube-proxy", {
      ...cur,
      data: { "config.conf": KUBEADM_KUBE_PROXY_CONFIG.replace("strictARP: false", "strictARP: true") },
    });
    const s = await eventually(
      () => query<Summary>(stack, "cluster.summary"),
      (x) => x.kubeProxy?.strictARP === true,
      15_000,
    );
    expect(s.kubeProxy).toMatchObject({ mode: "ipvs", strictARP: true });
    // The nodes have not restarted kube-proxy: every one of them drifts from the configuration.
    expect(s.strictArp.drift.map((d) => [d.node, d.reason])).toEqual([
      ["node-1", "not-restarted"],
      ["node-2", "not-restarted"],
      ["node-3", "not-restarted"],
    ]);
    expect(s.strictArp.verdict).toBe("exposed");
    expect(s.kubeProxyRollout).toMatchObject({ desired: 3 });
  });

  it("sees a node's drift end when its kernel turns strict, from the agent's next facts report", async () => {
    const node = stack.lab.nodes[0];
    if (node === undefined) throw new Error("no node");
    await stack.lab.setStrictArp(node, true);
    const s = await eventually(
      () => query<Summary>(stack, "cluster.summary"),
      (x) => !x.strictArp.drift.some((d) => d.node === "node-1"),
      15_000,
    );
    expect(s.strictArp.looseIpvsNodes).toEqual(["node-2", "node-3"]);
    await stack.lab.setStrictArp(node, false);
  });

  function api() {
    if (stack.api === null) throw new Error("no API server");
    return stack.api;
  }
});
