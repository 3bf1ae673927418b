import { describe, expect, it } from "vitest";
import { advise, ciscoMac, type Facts } from "./advice";

const N1 = "02:00:00:00:00:01";
const N2 = "02:00:00:00:00:02";
const STRANGER = "00:1a:2b:3c:4d:5e";
const ip: NonNullable<Facts["ip"]> = {
  ip: "198.18.0.10",
  address: "198.18.0.10",
  family: 4,
  services: [{ namespace: "demo", name: "web", externalTrafficPolicy: "Local" }],
  expectedOwner: "node-2",
  endpointNodes: ["node-2"],
  responders: [
    { mac: N1, node: "node-1", vendor: null, answering: true },
    { mac: N2, node: "node-2", vendor: null, answering: true },
    { mac: STRANGER, node: null, vendor: "Acme Networks", answering: true },
  ],
};
const strict = { configured: { mode: "ipvs", strictARP: true }, looseIpvsNodes: [], drift: [] };
const loose = { configured: { mode: "ipvs", strictARP: false }, looseIpvsNodes: ["node-1", "node-2"], drift: [] };
const facts = (type: string, macs: string[], over: Partial<Facts> = {}): Facts => ({
  findings: [{ type, macs, detail: `${type} detail` }],
  node: null,
  ip,
  kubernetes: "connected",
  strictArp: strict,
  ...over,
});
const commands = (f: Facts) => advise(f).flatMap((s) => s.commands);

describe("advise", () => {
  it("sends several nodes answering under IPVS without strictARP to the Fix page, naming the loose nodes", () => {
    const [s, ...rest] = advise(facts("multi-responder", [N1, N2], { strictArp: loose }));
    expect(rest).toEqual([]);
    expect(s?.link?.href).toBe("/fix");
    expect(s?.why).toContain("node-1 and node-2 answer ARP for any local address");
    expect(s?.commands.join("\n")).toContain("kubectl -n kube-system get configmap kube-proxy");
  });

  it("does not blame strictARP when it is on: it asks to count who answers", () => {
    const s = advise(facts("multi-responder", [N1, N2]));
    expect(s.map((x) => x.link)).toEqual([null]);
    expect(commands(facts("multi-responder", [N1, N2]))[0]).toBe("whohas probe 198.18.0.10 --duration 60s --interval 1s   # from any node");
  });

  it("points a split brain at the speakers' memberlist and logs", () => {
    const got = advise(facts("split-brain", [N1, N2]));
    expect(got[0]?.why).toContain("node-1 and node-2 both announce 198.18.0.10");
    expect(got[0]?.commands.join("\n")).toContain("kubectl -n metallb-system logs -l component=speaker");
  });

  it("finds a stranger by its MAC and vendor, never as a node", () => {
    const got = advise(facts("address-conflict", [STRANGER]));
    expect(got[0]?.why).toContain(`${STRANGER} (Acme Networks)`);
    expect(got[0]?.commands).toContain(
      `show mac address-table address 001a.2b3c.4d5e   # on the switch (Cisco IOS; ${STRANGER} elsewhere)`,
    );
    expect(got[0]?.commands[0]).toMatch(/^arping -b -c 3 198\.18\.0\.10/);
  });

  it.each([
    { case: "wrong owner", type: "wrong-owner" },
    { case: "stale announcer", type: "stale-announcer" },
    { case: "changed", type: "changed" },
  ])("has the expected owner announce on a $case", ({ type }) => {
    expect(commands(facts(type, [N1]))).toContain(
      "whohas announce 198.18.0.10 --force   # on node-2 only: from another node it creates a second responder",
    );
  });

  it("flushes clients' caches after a change without announcement", () => {
    expect(commands(facts("changed", [N1]))).toContain(
      "ip neigh flush to 198.18.0.10   # on each client or router that cached the old MAC",
    );
  });

  it("asks MetalLB's status for the owner when whohas does not know it", () => {
    const got = advise(facts("wrong-owner", [N1], { ip: { ...ip, expectedOwner: null } }));
    expect(got[0]?.commands).toEqual(["kubectl get servicel2statuses -A -l metallb.io/service-name=web,metallb.io/service-namespace=demo"]);
  });

  it("looks at a node's agent when it is down", () => {
    const got = advise({ ...facts("agent-down", []), node: "node-3", ip: null });
    expect(got[0]?.commands[0]).toContain(
      "kubectl -n whohas get pods -l app.kubernetes.io/component=agent -o wide --field-selector spec.nodeName=node-3",
    );
  });

  it("sends strictARP drift to the Fix page with the node's sysctls", () => {
    const drift = [{ node: "node-3", reason: "not-restarted", message: "kube-proxy on node-3 has not restarted." }];
    const got = advise({ ...facts("strictarp-drift", []), node: "node-3", ip: null, strictArp: { ...strict, drift } });
    expect(got[0]?.link?.href).toBe("/fix");
    expect(got[0]?.commands[0]).toContain("# on node-3");
  });

  it("puts the installer's persistence step first for a strictARP revert, naming who wrote it, then the Fix page", () => {
    const step = {
      name: "Kubermatic KKP",
      title: "Set spec.clusterNetwork.ipvs.strictArp: true in the KKP Cluster object",
      why: "KKP reconciles it.",
      commands: ["kubectl patch clusters.kubermatic.k8c.io"],
    };
    const revert = { manager: "kubermatic-operator", at: Date.parse("2026-03-01T10:00:00Z"), installer: "kkp", step };
    const got = advise({ ...facts("strictarp-reverted", []), ip: null, revert });
    expect(got.map((s) => s.key)).toEqual(["persist", "refix"]);
    expect(got[0]).toMatchObject({ title: step.title, commands: step.commands, link: null });
    expect(got[0]?.why).toBe("Field manager kubermatic-operator turned strictARP off at 2026-03-01T10:00:00.000Z. KKP reconciles it.");
    expect(got[1]?.link?.href).toBe("/fix");
  });

  it("gives each step once when findings share it", () => {
    const f = facts("multi-responder", [N1, N2], { strictArp: loose });
    const got = advise({ ...f, findings: [...f.findings, { type: "wrong-owner", macs: [N1], detail: "" }] });
    expect(got.map((s) => s.key)).toEqual(["strictarp"]);
  });
});

describe("ciscoMac", () => {
  it("writes a MAC as IOS's MAC address table does", () => expect(ciscoMac("00:1A:2B:3C:4D:5E")).toBe("001a.2b3c.4d5e"));
});
