import { describe, expect, it } from "vitest";
import type { NodeFacts } from "../wire.js";
import { fixVerdict, nodesAfterFix, nodesNotFixed, probeCoverage, strictArpFix } from "./plan.js";

const IPVS = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\nipvs:\n  strictARP: false\n";

describe("strictArpFix", () => {
  it("patches an IPVS config, says who answers now, and warns of kubeadm and Antrea when present", () => {
    const plan = strictArpFix({ config: IPVS, kubeadm: true, antrea: true, nodes: [] });
    expect(plan).toMatchObject({ ok: true, mode: "ipvs", strictARP: false, changed: true, disabledReason: null });
    if (!plan.ok) throw new Error(plan.message);
    expect(plan.patched).toContain("strictARP: true");
    expect(plan.warnings.map((w) => w.split(":")[0])).toEqual([
      "kubeadm",
      "If an installer manages this cluster, persist the setting there too or its next run undoes it",
      "Antrea is installed",
    ]);
  });
  it("has nothing to do in iptables mode, or when strictARP is set already", () => {
    expect(strictArpFix({ config: IPVS.replace("mode: ipvs", 'mode: ""'), kubeadm: false, antrea: false, nodes: [] })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/\(iptables\): only IPVS mode binds LoadBalancer IPs/) as string,
    });
    expect(strictArpFix({ config: IPVS.replace("false", "true"), kubeadm: false, antrea: false, nodes: [] })).toMatchObject({
      ok: true,
      changed: false,
      disabledReason: expect.stringMatching(/^strictARP is already true/) as string,
    });
  });
});

describe("fixVerdict", () => {
  it("passes a probe whose every request the owner alone answered, and says what else it saw", () => {
    const once = { replies: [{ node: "node-a" }] };
    expect(fixVerdict("192.0.2.10", "node-a", [once, once])).toBeNull();
    expect(
      fixVerdict("192.0.2.10", "node-a", [
        once,
        { replies: [{ node: "node-a" }, { node: "node-b" }] },
        { replies: [{ node: "node-b" }] },
        { replies: [] },
      ]),
    ).toBe("192.0.2.10: 1 requests answered by several MACs, 1 by a node other than node-a, 1 unanswered");
  });

  it("never passes a probe without evidence, and asks only for one answer when no owner is known", () => {
    expect(fixVerdict("192.0.2.10", "node-a", [])).toBe("192.0.2.10: the probe sent no request, so nothing shows the fix worked");
    expect(fixVerdict("192.0.2.10", null, [{ replies: [{ node: "node-b" }] }])).toBeNull();
    expect(fixVerdict("192.0.2.10", null, [{ replies: [] }])).toMatch(/1 unanswered$/);
  });
});

/** factsOf is a node whose captured eth0 has these effective settings. */
function factsOf(node: string, arpIgnore: number, arpAnnounce: number): NodeFacts {
  const pair = { arpIgnore, arpAnnounce };
  return {
    node,
    agentVersion: "test",
    interfaces: [
      { name: "eth0", mac: "02:00:5e:00:00:0a", up: true, master: null, addresses: [], own: pair, effective: pair, captured: true },
    ],
    sysctl: { all: pair, default: { arpIgnore: 0, arpAnnounce: 0 } },
    kubeIpvs0: { present: true, addresses: 1 },
    kubeProxyMode: "ipvs",
    capture: { frames: 0, dropped: {}, kernelReceived: 0, kernelDropped: 0 },
  };
}

describe("nodesAfterFix", () => {
  it("counts a node as fixed only on its agent's report: no agent, a down agent or no facts is silent, not fixed", () => {
    const agents = [
      { node: "a", up: true, facts: factsOf("a", 1, 2) },
      { node: "b", up: true, facts: factsOf("b", 0, 0) },
      { node: "c", up: false, facts: factsOf("c", 1, 2) },
      { node: "d", up: true, facts: null },
    ];
    expect(nodesAfterFix(["a", "b", "c", "d", "e"], agents)).toEqual({ strict: ["a"], loose: ["b"], silent: ["c", "d", "e"] });
    expect(nodesNotFixed(nodesAfterFix(["a", "b", "e"], agents), 15)).toBe(
      "b still answer ARP for any local address: their kube-proxy did not apply strictARP (is it in IPVS mode there? did its pod restart?); e: no report from whohas's agent in 15 s, so the fix is not verified there (is the agent running on that node?)",
    );
    expect(nodesNotFixed(nodesAfterFix([], agents), 15)).toBe("no node to check: no agent reports and the cluster lists no Node");
    // An agent on a node the cluster does not list is not what the fix must reach.
    expect(nodesAfterFix(["a"], agents)).toEqual({ strict: ["a"], loose: [], silent: [] });
  });
});

describe("probeCoverage", () => {
  it("takes a probe as evidence only when every prober reported, and two probed wherever two nodes can", () => {
    expect(probeCoverage("192.0.2.10", ["a", "b"], [], 3)).toBeNull();
    expect(probeCoverage("192.0.2.10", ["a", "b"], ["b"], 3)).toBe(
      "192.0.2.10: the probe from b did not report, so what it heard is missing",
    );
    expect(probeCoverage("192.0.2.10", ["a"], [], 3)).toMatch(/^192\.0\.2\.10: probed from a alone; a node never hears its own answer/);
    // A cluster of one node: one prober is all there can be.
    expect(probeCoverage("192.0.2.10", ["a"], [], 1)).toBeNull();
  });
});
