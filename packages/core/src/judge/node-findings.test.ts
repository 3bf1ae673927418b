import { describe, expect, it } from "vitest";
import { nodeFindings, subjectCluster, subjectIsIp, subjectNode } from "./node-findings.js";

describe("nodeFindings", () => {
  it("finds a down agent and a node whose kernel drifted, keyed by node subject", () => {
    const f = nodeFindings(
      [
        { node: "node-1", down: false, silentForMs: 0 },
        { node: "node-2", down: true, silentForMs: 45_000 },
      ],
      [{ node: "node-1", reason: "not-restarted", message: "strictARP is true in the ConfigMap but kube-proxy has not restarted here" }],
    );
    expect([...f.keys()]).toEqual(["node/node-1", "node/node-2"]);
    expect(f.get("node/node-1")?.map((x) => x.type)).toEqual(["strictarp-drift"]);
    expect(f.get("node/node-2")).toEqual([{ type: "agent-down", macs: [], detail: expect.stringContaining("silent for 45 s") }]);
    expect([subjectNode("node/node-2"), subjectNode("192.0.2.1")]).toEqual(["node-2", null]);
  });

  it.each([
    { case: "an IP", subject: "192.0.2.1", node: null, cluster: null, ip: true },
    { case: "an IP on a VLAN", subject: "2001:db8::1@30", node: null, cluster: null, ip: true },
    { case: "a node", subject: "node/node-2", node: "node-2", cluster: null, ip: false },
    { case: "kube-proxy's ConfigMap", subject: "cluster/kube-proxy", node: null, cluster: "kube-proxy", ip: false },
  ])("tells the subject of $case apart", ({ subject, node, cluster, ip }) => {
    expect([subjectNode(subject), subjectCluster(subject), subjectIsIp(subject)]).toEqual([node, cluster, ip]);
  });
});
