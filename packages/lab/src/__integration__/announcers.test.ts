import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resourceNamed } from "../kube/resources.js";
import type { TestApiServer } from "../kube/server.js";
import { startStack, type Stack, type StackOptions } from "../stack.js";
import { api as readApi, electedBy, eventually, findingsIn, type IncidentView as Incident } from "./hub-client.js";

interface IpRow {
  ip: string;
  state: string;
  announcer: string | null;
  expectedOwner: { node: string; source: string } | null;
  ownerUnknown: string | null;
  interfaces: { names: string[]; patterns: boolean } | null;
  findings: { type: string }[];
}

/**
 * startAnnouncerLab starts the lab both suites below judge: three nodes answering every one of three VIPs, the client
 * asking twice a second, and the test API server, which `kubeSetup` fills with the announcers of the suite.
 */
const startAnnouncerLab = (o: Pick<StackOptions, "kubeSetup">) =>
  startStack({ nodes: 3, vips: 3, kube: true, requestIntervalMs: 500, ...o });

/** The lab's three VIPs are the Services demo/web-0 (Cluster), web-1 (Local, endpoint on node-3), web-2 (Cluster). */
const row = (rows: IpRow[], ip: string | undefined) => rows.find((r) => r.ip === ip);

function apiOf(stack: Stack): TestApiServer {
  if (stack.api === null) throw new Error("no API server");
  return stack.api;
}

/** update changes an object as a client would: `status` through the status subresource (a Pod's readiness). */
function update(
  api: TestApiServer,
  resource: string,
  ns: string | null,
  name: string,
  change: (o: Record<string, unknown>) => void,
  status = false,
): void {
  const r = resourceNamed(resource);
  const cur = structuredClone(api.store.get(r, ns, name)) as unknown as Record<string, unknown>;
  change(cur);
  api.store.update(r, ns, name, cur as never, { status });
}

// Every node answers every VIP (strictARP false): what differs is who should, by the announcer the cluster shows.
describe("the expected owner comes from the announcer: kube-vip, Cilium, MetalLB BGP, or nobody", () => {
  let stack: Stack;
  const ips = () => readApi<IpRow[]>(stack.url, stack.viewerToken, "ips");
  const open = (ip: string) => readApi<Incident[]>(stack.url, stack.viewerToken, `incidents?state=open&ip=${ip}`);

  beforeAll(async () => {
    stack = await startAnnouncerLab({
      kubeSetup: (api) => {
        const ipOf = (name: string) =>
          (api.store.get(resourceNamed("services"), "demo", name) as unknown as { status: { loadBalancer: { ingress: { ip: string }[] } } })
            .status.loadBalancer.ingress[0]?.ip ?? "";
        const [vip0, vip1, vip2] = [ipOf("web-0"), ipOf("web-1"), ipOf("web-2")];
        // web-0: kube-vip with service election: its Lease, held by node-1.
        api.store.create(resourceNamed("leases"), "demo", { metadata: { name: "kubevip-web-0" }, spec: { holderIdentity: "node-1" } });
        // web-1: MetalLB BGP only: its own pool, advertised by a BGPAdvertisement; the L2Advertisement keeps the rest.
        update(api, "ipaddresspools", "metallb-system", "lab-pool", (p) => {
          p.spec = { addresses: [`${vip0}/32`, `${vip2}/32`] };
        });
        api.store.create(resourceNamed("ipaddresspools"), "metallb-system", {
          metadata: { name: "bgp-pool" },
          spec: { addresses: [`${vip1}/32`] },
        });
        update(api, "l2advertisements", "metallb-system", "l2", (a) => {
          a.spec = { ipAddressPools: ["lab-pool"] };
        });
        api.store.create(resourceNamed("bgpadvertisements"), "metallb-system", {
          metadata: { name: "bgp" },
          spec: { ipAddressPools: ["bgp-pool"] },
        });
        // web-2: a loadBalancerClass no announcer whohas knows.
        update(api, "services", "demo", "web-2", (s) => {
          (s.spec as Record<string, unknown>).loadBalancerClass = "example.com/other-lb";
        });
      },
    });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("takes kube-vip's Lease holder as the owner, and calls the other answering nodes wrong owners", async () => {
    const vip0 = stack.lab.vips[0] ?? "";
    const rows = await eventually(ips, (r) => row(r, vip0)?.findings.some((f) => f.type === "wrong-owner") === true, 30_000);
    expect(row(rows, vip0)).toMatchObject({ announcer: "kube-vip", expectedOwner: { node: "node-1", source: "kube-vip-lease" } });
    const types = findingsIn(await open(vip0)).map((f) => f.type);
    expect(types).toEqual(expect.arrayContaining(["wrong-owner", "multi-responder"]));
  });

  it("judges nothing of an IP MetalLB advertises by BGP only, however many nodes answer ARP for it", async () => {
    const vip1 = stack.lab.vips[1] ?? "";
    // By now the other VIPs have their incidents: this one, answered by the same three nodes, has none.
    await eventually(ips, (r) => row(r, stack.lab.vips[2])?.findings.some((f) => f.type === "multi-responder") === true, 30_000);
    const r = row(await ips(), vip1);
    expect(r).toMatchObject({ announcer: "metallb-bgp", state: "not-layer2", expectedOwner: null, findings: [] });
    expect(r?.ownerUnknown).toMatch(/BGP/);
    expect(await open(vip1)).toEqual([]);
  });

  it("names no owner when no announcer is recognised: several responders, never a wrong owner", async () => {
    const vip2 = stack.lab.vips[2] ?? "";
    const r = row(await ips(), vip2);
    expect(r).toMatchObject({ announcer: null, expectedOwner: null });
    expect(r?.ownerUnknown).toMatch(/loadBalancerClass example\.com\/other-lb/);
    const types = findingsIn(await open(vip2)).map((f) => f.type);
    expect(types).toContain("multi-responder");
    expect(types).not.toContain("wrong-owner");
  });

  it("follows kube-vip's Lease when it moves", async () => {
    const vip0 = stack.lab.vips[0] ?? "";
    update(apiOf(stack), "leases", "demo", "kubevip-web-0", (l) => {
      l.spec = { holderIdentity: "node-3" };
    });
    const rows = await eventually(ips, (r) => row(r, vip0)?.expectedOwner?.node === "node-3", 15_000);
    expect(row(rows, vip0)?.expectedOwner).toEqual({ node: "node-3", source: "kube-vip-lease" });
  });

  it("takes Cilium's Lease holder as the owner, and follows it when it moves", async () => {
    const vip2 = stack.lab.vips[2] ?? "";
    const api = apiOf(stack);
    api.store.create(resourceNamed("leases"), "kube-system", {
      metadata: { name: "cilium-l2announce-demo-web-2" },
      spec: { holderIdentity: "node-2" },
    });
    let rows = await eventually(ips, (r) => row(r, vip2)?.announcer === "cilium", 15_000);
    expect(row(rows, vip2)?.expectedOwner).toEqual({ node: "node-2", source: "cilium-lease" });
    update(api, "leases", "kube-system", "cilium-l2announce-demo-web-2", (l) => {
      l.spec = { holderIdentity: "node-1" };
    });
    rows = await eventually(ips, (r) => row(r, vip2)?.expectedOwner?.node === "node-1", 15_000);
    expect(row(rows, vip2)?.expectedOwner).toEqual({ node: "node-1", source: "cilium-lease" });
  });
});

// MetalLB layer 2's own rules, each changed on the test API server and followed by the hub's informers.
describe("MetalLB layer 2: the owner among the nodes its advertisements, speakers and endpoints allow", () => {
  let stack: Stack;
  const ips = () => readApi<IpRow[]>(stack.url, stack.viewerToken, "ips");
  const api = () => apiOf(stack);
  const nodes = ["node-1", "node-2", "node-3"];

  beforeAll(async () => {
    stack = await startAnnouncerLab({
      kubeSetup: (a) => {
        // MetalLB's speaker DaemonSet: a ready speaker Pod on every node (the manifests' labels).
        for (const n of nodes)
          a.store.create(resourceNamed("pods"), "metallb-system", {
            metadata: { name: `speaker-${n}`, labels: { app: "metallb", component: "speaker" } },
            spec: { nodeName: n, containers: [{ name: "speaker", image: "quay.io/metallb/speaker" }] },
            status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
          });
      },
    });
  });
  afterAll(async () => {
    await stack.stop();
  });

  const vip0 = () => stack.lab.vips[0] ?? "";
  /** speakerReady sets the Ready condition of a node's MetalLB speaker Pod, through its status subresource. */
  const speakerReady = (node: string, ready: boolean) =>
    update(
      api(),
      "pods",
      "metallb-system",
      `speaker-${node}`,
      (p) => {
        p.status = { phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] };
      },
      true,
    );
  const elected = (candidates: string[]) => electedBy(candidates, vip0());

  it("elects among every node with a ready speaker, as MetalLB does", async () => {
    const rows = await eventually(ips, (r) => row(r, vip0())?.expectedOwner !== null, 20_000);
    expect(row(rows, vip0())).toMatchObject({ announcer: "metallb-l2", expectedOwner: { node: elected(nodes), source: "computed" } });
  });

  it("leaves out a node whose speaker is not ready", async () => {
    const first = elected(nodes) ?? "";
    speakerReady(first, false);
    const rest = nodes.filter((n) => n !== first);
    const rows = await eventually(ips, (r) => row(r, vip0())?.expectedOwner?.node === elected(rest), 15_000);
    expect(row(rows, vip0())?.expectedOwner?.node).not.toBe(first);
    speakerReady(first, true);
    await eventually(ips, (r) => row(r, vip0())?.expectedOwner?.node === first, 15_000);
  });

  it("leaves out a node labelled exclude-from-external-load-balancers", async () => {
    const first = elected(nodes) ?? "";
    update(api(), "nodes", null, first, (n) => {
      const meta = n.metadata as { labels: Record<string, string> };
      meta.labels = { ...meta.labels, "node.kubernetes.io/exclude-from-external-load-balancers": "" };
    });
    const rest = nodes.filter((n) => n !== first);
    const rows = await eventually(ips, (r) => row(r, vip0())?.expectedOwner?.node === elected(rest), 15_000);
    expect(row(rows, vip0())?.expectedOwner?.node).not.toBe(first);
    update(api(), "nodes", null, first, (n) => {
      const meta = n.metadata as { labels: Record<string, string> };
      delete meta.labels["node.kubernetes.io/exclude-from-external-load-balancers"];
    });
    await eventually(ips, (r) => row(r, vip0())?.expectedOwner?.node === first, 15_000);
  });

  it("elects only among the nodes the L2Advertisement's nodeSelectors admit", async () => {
    const last = nodes.find((n) => n !== elected(nodes)) ?? "";
    update(api(), "l2advertisements", "metallb-system", "l2", (a) => {
      a.spec = { nodeSelectors: [{ matchLabels: { "kubernetes.io/hostname": last } }] };
    });
    const rows = await eventually(ips, (r) => row(r, vip0())?.expectedOwner?.node === last, 15_000);
    expect(row(rows, vip0())?.expectedOwner).toEqual({ node: last, source: "computed" });
  });

  it("calls an answer from an interface the advertisement does not name wrong-interface", async () => {
    // The lab's nodes answer on eth0: an advertisement limited to eth9 makes the owner's answers wrong-interface.
    update(api(), "l2advertisements", "metallb-system", "l2", (a) => {
      a.spec = { interfaces: ["eth9"] };
    });
    const rows = await eventually(ips, (r) => row(r, vip0())?.findings.some((f) => f.type === "wrong-interface") === true, 30_000);
    expect(row(rows, vip0())?.interfaces).toEqual({ names: ["eth9"], patterns: false });
    update(api(), "l2advertisements", "metallb-system", "l2", (a) => {
      a.spec = {};
    });
  });

  it("needs a local endpoint under externalTrafficPolicy Local, and names no owner without one", async () => {
    const vip1 = stack.lab.vips[1] ?? "";
    let rows = await eventually(ips, (r) => row(r, vip1)?.expectedOwner?.node === "node-3", 15_000);
    expect(row(rows, vip1)?.expectedOwner).toEqual({ node: "node-3", source: "computed" });
    update(api(), "endpointslices", "demo", "web-1-abc12", (s) => {
      s.endpoints = [];
    });
    rows = await eventually(ips, (r) => row(r, vip1)?.expectedOwner === null, 15_000);
    expect(row(rows, vip1)?.ownerUnknown).toMatch(/no-serving-endpoint/);
  });

  it("names no owner for an IP whose pool no advertisement covers", async () => {
    update(api(), "l2advertisements", "metallb-system", "l2", (a) => {
      a.spec = { ipAddressPools: ["some-other-pool"] };
    });
    const rows = await eventually(ips, (r) => row(r, vip0())?.announcer === null, 15_000);
    expect(row(rows, vip0())).toMatchObject({
      expectedOwner: null,
      ownerUnknown: expect.stringMatching(/no L2Advertisement or BGPAdvertisement/),
    });
  });
});
