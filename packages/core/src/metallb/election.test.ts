import { describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import fc from "fast-check";
import { EXCLUDE_LB_LABEL, canServe, elect, orderCandidates, type ElectionInput, type ElectionNode } from "./election.js";

const node = (name: string, labels: Record<string, string> = {}, networkUnavailable = false): ElectionNode => ({
  name,
  labels,
  networkUnavailable,
});
const ready = (nodeName: string) => ({ nodeName, ready: true, serving: true });

function input(over: Partial<ElectionInput> = {}): ElectionInput {
  const nodes = over.nodes ?? [node("node-a"), node("node-b"), node("node-c")];
  return {
    ingressIPs: ["10.0.0.1"],
    externalTrafficPolicy: "Cluster",
    endpoints: [ready("node-a")],
    nodes,
    speakers: new Set(nodes.map((n) => n.name)),
    l2Advertisements: [{ nodeSelectors: [] }],
    ...over,
  };
}

describe("orderCandidates agrees with what it does not share code with", () => {
  // MetalLB's speaker/layer2_controller_test.go (TestShouldAnnounceEPSlices): speakers iris1 and iris2, one
  // L2Advertisement for both, externalTrafficPolicy Local with a ready endpoint on each node: 10.20.30.1 is
  // announced by iris2 ("" for controller 2, "notOwner" for 1), 10.20.30.2 by iris1.
  it.each([
    { ip: "10.20.30.1", owner: "iris2" },
    { ip: "10.20.30.2", owner: "iris1" },
  ])("MetalLB's own test: $ip -> $owner", ({ ip, owner }) => {
    expect(orderCandidates(["iris1", "iris2"], ip)[0]).toBe(owner);
    const both = elect({
      ingressIPs: [ip],
      externalTrafficPolicy: "Local",
      endpoints: [ready("iris1"), ready("iris2")],
      nodes: [node("iris1"), node("iris2")],
      speakers: new Set(["iris1", "iris2"]),
      l2Advertisements: [{ nodeSelectors: [] }],
    });
    expect(both.owner).toBe(owner);
  });

  it("MetalLB's own test: the owner's endpoint not ready, the other node announces (10.20.30.1 -> iris1)", () => {
    const e = elect({
      ingressIPs: ["10.20.30.1"],
      externalTrafficPolicy: "Local",
      endpoints: [ready("iris1"), { nodeName: "iris2", ready: false, serving: null }],
      nodes: [node("iris1"), node("iris2")],
      speakers: new Set(["iris1", "iris2"]),
      l2Advertisements: [{ nodeSelectors: [] }],
    });
    expect(e.owner).toBe("iris1");
  });

  // The rule written again here from its definition: ascending sha256 of "node#ip" (hex order is byte order).
  const byHash = (nodes: string[], ip: string) =>
    nodes
      .map((n) => ({ n, h: createHash("sha256").update(`${n}#${ip}`).digest("hex") }))
      .sort((a, b) => (a.h < b.h ? -1 : a.h > b.h ? 1 : 0))
      .map((x) => x.n);

  it.each([
    { nodes: ["node-a", "node-b", "node-c"], ip: "10.0.0.1" },
    { nodes: ["node-a", "node-b", "node-c"], ip: "10.0.0.2" },
    { nodes: ["worker-1", "worker-2", "worker-3", "worker-4"], ip: "192.0.2.77" },
    { nodes: ["k8s-a", "k8s-b"], ip: "2001:db8::10" },
  ])("sha256(node#ip) ascending over $nodes for $ip", ({ nodes, ip }) => {
    expect(orderCandidates(nodes, ip)).toEqual(byHash(nodes, ip));
  });
});

describe("elect", () => {
  it("gives the IP to the first node in hash order", () => {
    expect(elect(input())).toMatchObject({ owner: "node-b", order: ["node-b", "node-a", "node-c"], key: "10.0.0.1", reason: null });
  });

  it("hashes Go's text of the first ingress IP (IPv6 compressed, IPv4-mapped as IPv4)", () => {
    expect(elect(input({ ingressIPs: ["2001:DB8:0:0::1", "10.0.0.9"] })).key).toBe("2001:db8::1");
    expect(elect(input({ ingressIPs: ["::ffff:10.0.0.1"] })).owner).toBe(elect(input()).owner);
  });

  it.each([
    { case: "no ingress IP", over: { ingressIPs: [] }, reason: "no-ingress-ip" },
    { case: "no endpoint", over: { endpoints: [] }, reason: "no-serving-endpoint" },
    {
      case: "only unready endpoints",
      over: { endpoints: [{ nodeName: "node-a", ready: false, serving: false }] },
      reason: "no-serving-endpoint",
    },
    { case: "no L2Advertisement", over: { l2Advertisements: [] }, reason: "no-candidate" },
  ])("nobody announces with $case", ({ over, reason }) => {
    expect(elect(input(over))).toMatchObject({ owner: null, reason });
  });

  it("counts an endpoint with ready absent, or terminating but serving, as able to serve", () => {
    expect(canServe({ nodeName: "x", ready: null, serving: null })).toBe(true);
    expect(canServe({ nodeName: "x", ready: false, serving: true })).toBe(true);
    expect(canServe({ nodeName: "x", ready: false, serving: null })).toBe(false);
  });

  it("excludes nodes without a speaker, with NetworkUnavailable, with the exclusion label, or not selected", () => {
    const nodes = [
      node("node-a"),
      node("node-b", {}, true),
      node("node-c", { [EXCLUDE_LB_LABEL]: "" }),
      node("node-d", { zone: "b" }),
      node("node-e", { zone: "a" }),
    ];
    const e = elect(
      input({
        nodes,
        speakers: new Set(["node-b", "node-c", "node-d", "node-e"]),
        l2Advertisements: [
          { nodeSelectors: [{ matchLabels: { zone: "a" } }] },
          { nodeSelectors: [{ matchExpressions: [{ key: "zone", operator: "In", values: ["x"] }] }] },
        ],
      }),
    );
    expect(e.excluded).toEqual([
      { node: "node-a", reason: "no-speaker" },
      { node: "node-b", reason: "network-unavailable" },
      { node: "node-c", reason: "excluded-by-label" },
      { node: "node-d", reason: "not-selected" },
    ]);
    expect(e.owner).toBe("node-e");
  });

  it("keeps cordoned or NotReady nodes: only the listed conditions exclude", () => {
    // There is no field for cordon or readiness in ElectionNode on purpose: MetalLB ignores both.
    expect(elect(input()).order).toHaveLength(3);
  });

  it("under externalTrafficPolicy Local keeps only nodes with a serving endpoint", () => {
    const e = elect(
      input({ externalTrafficPolicy: "Local", endpoints: [ready("node-c"), { nodeName: "node-b", ready: false, serving: false }] }),
    );
    expect(e).toMatchObject({ owner: "node-c", order: ["node-c"] });
    expect(e.excluded).toContainEqual({ node: "node-b", reason: "no-local-endpoint" });
  });
});

describe("elect: properties", () => {
  const names = fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/), { minLength: 1, maxLength: 12 });
  const ip = fc.ipV4();

  it("N speakers with the same view agree on exactly one owner", () => {
    fc.assert(
      fc.property(names, ip, (ns, addr) => {
        const owners = ns.map(() => elect(input({ nodes: ns.map((n) => node(n)), ingressIPs: [addr] })).owner);
        expect(new Set(owners).size).toBe(1);
        expect(ns).toContain(owners[0]);
      }),
    );
  });

  it("input order does not matter", () => {
    fc.assert(
      fc.property(names, ip, fc.integer(), (ns, addr, seed) => {
        const shuffled = [...ns].sort((a, b) => ((a.length * 31 + seed) % 7) - ((b.length * 31 + seed) % 7) || (a < b ? 1 : -1));
        expect(orderCandidates(shuffled, addr)).toEqual(orderCandidates(ns, addr));
      }),
    );
  });

  it("two speakers with different views can both think they own the IP (why split brain happens)", () => {
    // node-b wins over {a, b}; if node-a cannot see node-b (partition), node-a wins its own view.
    const full = elect(input({ nodes: [node("node-a"), node("node-b")] })).owner;
    const partitioned = elect(input({ nodes: [node("node-a"), node("node-b")], speakers: new Set(["node-a"]) })).owner;
    expect([full, partitioned]).toEqual(["node-b", "node-a"]);
  });
});
