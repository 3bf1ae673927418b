import { describe, expect, it } from "vitest";
import { inventoryByIp, type ClusterInput, type LoadBalancerService } from "./expected-owner.js";

const svc = (over: Partial<LoadBalancerService> = {}): LoadBalancerService => ({
  namespace: "demo",
  name: "web",
  externalTrafficPolicy: "Cluster",
  ingressIPs: ["10.0.0.1"],
  ports: [{ port: 80, protocol: "TCP" }],
  endpoints: [{ nodeName: "node-a", ready: true, serving: true }],
  ...over,
});
const nodes = ["node-a", "node-b", "node-c"].map((name) => ({ name, labels: {}, networkUnavailable: false }));
const input = (over: Partial<ClusterInput> = {}): ClusterInput => ({
  services: [svc()],
  nodes,
  l2Advertisements: [{ nodeSelectors: [] }],
  l2Statuses: [],
  nodeAssigned: new Map(),
  metallbInstalled: true,
  ...over,
});
const all = new Set(["node-a", "node-b", "node-c"]);

describe("inventoryByIp", () => {
  it("computes the owner with MetalLB's election when nothing else says", () => {
    expect(inventoryByIp(input(), all).get("10.0.0.1")).toMatchObject({
      expectedOwner: { node: "node-b", source: "computed" },
      services: [{ name: "web" }],
      endpointNodes: ["node-a"],
    });
  });
  it("prefers MetalLB's ServiceL2Status, then the nodeAssigned event", () => {
    expect(inventoryByIp(input({ nodeAssigned: new Map([["demo/web", "node-c"]]) }), all).get("10.0.0.1")?.expectedOwner).toEqual({
      node: "node-c",
      source: "event",
    });
    expect(
      inventoryByIp(
        input({
          nodeAssigned: new Map([["demo/web", "node-c"]]),
          l2Statuses: [{ serviceNamespace: "demo", serviceName: "web", node: "node-a" }],
        }),
        all,
      ).get("10.0.0.1")?.expectedOwner,
    ).toEqual({ node: "node-a", source: "servicel2status" });
  });
  it("has no owner for a Service without an ingress IP or without serving endpoints", () => {
    expect(inventoryByIp(input({ services: [svc({ ingressIPs: [] })] }), all).size).toBe(0);
    expect(inventoryByIp(input({ services: [svc({ endpoints: [] })] }), all).get("10.0.0.1")?.expectedOwner).toBeNull();
  });
  it("lists every Service sharing an IP", () => {
    const inv = inventoryByIp(input({ services: [svc(), svc({ name: "web-udp" })] }), all);
    expect(inv.get("10.0.0.1")?.services.map((s) => s.name)).toEqual(["web", "web-udp"]);
  });
  it("uses only nodes with a live speaker (agent)", () => {
    expect(inventoryByIp(input(), new Set(["node-a", "node-c"])).get("10.0.0.1")?.expectedOwner?.node).toBe("node-a");
  });

  it("names the IP's MetalLB pool and keeps the Service's ports", () => {
    const inv = inventoryByIp(
      input({
        pools: [
          { name: "other", addresses: ["192.0.2.0/24"] },
          { name: "lb", addresses: ["10.0.0.0-10.0.0.9"] },
        ],
      }),
      all,
    );
    expect(inv.get("10.0.0.1")?.pool).toBe("lb");
    expect(inventoryByIp(input(), all).get("10.0.0.1")?.pool).toBeNull();
    expect(inv.get("10.0.0.1")?.services[0]?.ports).toEqual(svc().ports);
  });
});
