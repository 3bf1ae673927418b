import { describe, expect, it } from "vitest";
import type { ElectionNode } from "../metallb/election.js";
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
const POOL = { name: "lb", addresses: ["10.0.0.0/24"], labels: { tier: "public" } };
const input = (over: Partial<ClusterInput> = {}): ClusterInput => ({
  services: [svc()],
  nodes,
  l2Advertisements: [{ name: "l2", nodeSelectors: [] }],
  l2Statuses: [],
  nodeAssigned: new Map(),
  metallbInstalled: true,
  pools: [POOL],
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
    expect(inventoryByIp(input({ pools: [] }), all).get("10.0.0.1")?.pool).toBeNull();
    expect(inv.get("10.0.0.1")?.services[0]?.ports).toEqual(svc().ports);
  });

  it("makes an IP layer 2 only when an L2Advertisement covers its pool: by name, by label, or every pool", () => {
    const announcer = (l2Advertisements: ClusterInput["l2Advertisements"]) =>
      inventoryByIp(input({ l2Advertisements }), all).get("10.0.0.1")?.announcer ?? null;
    expect(announcer([{ name: "a", nodeSelectors: [] }])).toBe("metallb-l2");
    expect(announcer([{ name: "a", ipAddressPools: ["lb"], nodeSelectors: [] }])).toBe("metallb-l2");
    expect(announcer([{ name: "a", ipAddressPoolSelectors: [{ matchLabels: { tier: "public" } }], nodeSelectors: [] }])).toBe("metallb-l2");
    expect(announcer([{ name: "a", ipAddressPools: ["other"], nodeSelectors: [] }])).toBeNull();
    expect(announcer([{ name: "a", ipAddressPoolSelectors: [{ matchLabels: { tier: "private" } }], nodeSelectors: [] }])).toBeNull();
    const unknown = inventoryByIp(input({ l2Advertisements: [{ name: "a", ipAddressPools: ["other"], nodeSelectors: [] }] }), all).get(
      "10.0.0.1",
    );
    expect(unknown).toMatchObject({ expectedOwner: null, ownerUnknown: expect.stringContaining("no L2Advertisement") as unknown });
  });

  it("elects among the nodes the covering advertisements select (their union), with a ready speaker, not excluded", () => {
    const labelled: ElectionNode[] = [
      { name: "node-a", labels: { zone: "a" }, networkUnavailable: false },
      { name: "node-b", labels: { zone: "b", "node.kubernetes.io/exclude-from-external-load-balancers": "" }, networkUnavailable: false },
      { name: "node-c", labels: { zone: "c" }, networkUnavailable: false },
    ];
    const owner = (over: Partial<ClusterInput>) => inventoryByIp(input({ nodes: labelled, ...over }), all).get("10.0.0.1");
    // node-b would win the election on every node: it is excluded by label, so node-a or node-c.
    expect(owner({})?.expectedOwner?.node).not.toBe("node-b");
    const onlyC = owner({ l2Advertisements: [{ name: "c", nodeSelectors: [{ matchLabels: { zone: "c" } }] }] });
    expect(onlyC?.expectedOwner).toEqual({ node: "node-c", source: "computed" });
    expect(onlyC?.election?.excluded).toEqual(
      expect.arrayContaining([
        { node: "node-a", reason: "not-selected" },
        { node: "node-b", reason: "excluded-by-label" },
      ]),
    );
    const union = owner({
      l2Advertisements: [
        { name: "c", nodeSelectors: [{ matchLabels: { zone: "c" } }] },
        { name: "a", nodeSelectors: [{ matchLabels: { zone: "a" } }] },
      ],
    });
    expect(union?.election?.order).toEqual(expect.arrayContaining(["node-a", "node-c"]));
    // Speakers: the ready speaker Pods decide, not the agents.
    expect(owner({ speakerNodes: new Set(["node-c"]) })?.expectedOwner?.node).toBe("node-c");
    expect(owner({ speakerNodes: new Set<string>() })).toMatchObject({
      expectedOwner: null,
      ownerUnknown: expect.stringContaining("no-candidate") as unknown,
    });
  });

  it("needs a local endpoint on the owner under externalTrafficPolicy Local", () => {
    const local = svc({ externalTrafficPolicy: "Local", endpoints: [{ nodeName: "node-c", ready: true, serving: true }] });
    expect(inventoryByIp(input({ services: [local] }), all).get("10.0.0.1")?.expectedOwner?.node).toBe("node-c");
  });

  it("limits the owner to its advertisements' interfaces; any interface when one of them names none", () => {
    const inv = (ads: ClusterInput["l2Advertisements"]) => inventoryByIp(input({ l2Advertisements: ads }), all).get("10.0.0.1")?.interfaces;
    expect(inv([{ name: "a", nodeSelectors: [], interfaces: ["eth1"] }])).toEqual({ names: ["eth1"], patterns: false });
    expect(
      inv([
        { name: "a", nodeSelectors: [], interfaces: ["eth1"] },
        { name: "b", nodeSelectors: [] },
      ]),
    ).toBeNull();
  });

  it("counts nodeAssigned only for layer 2 IPs, and judges an IP advertised by BGP only as not layer 2", () => {
    const bgp = input({ l2Advertisements: [], bgpAdvertisements: [{ name: "bgp" }], nodeAssigned: new Map([["demo/web", "node-c"]]) });
    expect(inventoryByIp(bgp, all).get("10.0.0.1")).toMatchObject({
      announcer: "metallb-bgp",
      expectedOwner: null,
      ownerUnknown: expect.stringContaining("BGP") as unknown,
    });
    // Both: judged for its layer 2 part.
    expect(inventoryByIp({ ...bgp, l2Advertisements: [{ name: "l2", nodeSelectors: [] }] }, all).get("10.0.0.1")?.announcer).toBe(
      "metallb-l2",
    );
  });

  it("takes kube-vip's owner from its Lease (per Service, else global), else its vipHost annotation", () => {
    const kv = (over: Partial<ClusterInput>, s: Partial<LoadBalancerService> = {}) =>
      inventoryByIp(input({ metallbInstalled: false, pools: [], l2Advertisements: [], services: [svc(s)], ...over }), all).get("10.0.0.1");
    const global = { namespace: "kube-system", name: "plndr-svcs-lock", holder: "node-c" };
    expect(kv({ leases: [global] })).toMatchObject({ announcer: "kube-vip", expectedOwner: { node: "node-c", source: "kube-vip-lease" } });
    const perService = { namespace: "demo", name: "kubevip-web", holder: "node-a" };
    expect(kv({ leases: [global, perService] })?.expectedOwner).toEqual({ node: "node-a", source: "kube-vip-lease" });
    // A lease of that name in another namespace is another Service's.
    expect(kv({ leases: [global, { ...perService, namespace: "other" }] })?.expectedOwner?.node).toBe("node-c");
    expect(kv({}, { annotations: { "kube-vip.io/vipHost": "node-b" } })).toMatchObject({
      announcer: "kube-vip",
      expectedOwner: { node: "node-b", source: "kube-vip-annotation" },
    });
    expect(kv({}, { loadBalancerClass: "kube-vip.io/kube-vip-class" })).toMatchObject({ announcer: "kube-vip", expectedOwner: null });
    // kube-vip's own Service marks beat MetalLB's pools; its global lease alone does not.
    const both = input({ leases: [global] });
    expect(inventoryByIp(both, all).get("10.0.0.1")?.announcer).toBe("metallb-l2");
  });

  it("takes Cilium's owner from its Lease, with the interfaces of the policies that select the Service and node", () => {
    const policy = {
      name: "p",
      serviceSelector: { matchLabels: { app: "web" } },
      nodeSelector: null,
      interfaces: ["^eth[0-9]+"],
      loadBalancerIPs: true,
    };
    const c = (over: Partial<ClusterInput>, s: Partial<LoadBalancerService> = { labels: { app: "web" } }) =>
      inventoryByIp(input({ metallbInstalled: false, pools: [], l2Advertisements: [], services: [svc(s)], ...over }), all).get("10.0.0.1");
    const lease = { namespace: "kube-system", name: "cilium-l2announce-demo-web", holder: "node-b" };
    expect(c({ leases: [lease], ciliumPolicies: [policy] })).toMatchObject({
      announcer: "cilium",
      expectedOwner: { node: "node-b", source: "cilium-lease" },
      interfaces: { names: ["^eth[0-9]+"], patterns: true },
    });
    // Selected by a policy, no lease yet: Cilium's, owner unknown.
    expect(c({ ciliumPolicies: [policy] })).toMatchObject({ announcer: "cilium", expectedOwner: null });
    // A policy that does not select the Service, nothing else: unknown.
    expect(c({ ciliumPolicies: [policy] }, { labels: { app: "db" } })).toMatchObject({ announcer: null, expectedOwner: null });
  });

  it("guesses nothing when no announcer is recognised", () => {
    const none = inventoryByIp(input({ metallbInstalled: false, pools: [], l2Advertisements: [] }), all).get("10.0.0.1");
    expect(none).toMatchObject({ announcer: null, expectedOwner: null, election: null });
    expect(none?.ownerUnknown).toMatch(/no announcer/);
    expect(inventoryByIp(input({}), all).get("10.0.0.1")?.announcer).toBe("metallb-l2");
    const otherClass = inventoryByIp(input({ services: [svc({ loadBalancerClass: "example.com/lb" })] }), all).get("10.0.0.1");
    expect(otherClass).toMatchObject({ announcer: null, expectedOwner: null });
  });
});
