import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../stack.js";
import { inNs } from "../sh.js";
import { api, eventually, query, type AgentView, type IpView } from "./hub-client.js";

// The seed incident, with real kernels: three nodes hold the VIP on kube-ipvs0 and keep arp_ignore=0 (kube-proxy
// IPVS with strictARP false), so all three answer; strictARP's sysctls make the kernels stop.
describe("three nodes holding one VIP", () => {
  let stack: Stack;
  let vip: string;

  beforeAll(async () => {
    stack = await startStack({ nodes: 3, vips: 1, requestIntervalMs: 500 });
    vip = stack.lab.vips[0] ?? "";
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("every agent connects and reports its node's MAC", async () => {
    const agents = await eventually(
      () => query<AgentView[]>(stack, "agents.list"),
      (a) => a.filter((x) => x.up).length === 3,
      20_000,
    );
    for (const n of stack.lab.nodes) {
      expect(agents.find((a) => a.node === n.name)?.interfaces).toContainEqual(expect.objectContaining({ name: "eth0", mac: n.mac }));
    }
  });

  it("the hub reports three responders with the right node names", async () => {
    const view = await eventually(
      async () => (await api<IpView[]>(stack.url, stack.viewerToken, "ips")).find((i) => i.ip === vip),
      (v) => v?.responders.filter((r) => r.answering).length === 3,
      20_000,
    );
    expect(view?.state).toBe("multi-responder");
    const byMac = new Map(view?.responders.map((r) => [r.mac, r.node]));
    for (const n of stack.lab.nodes) expect(byMac.get(n.mac)).toBe(n.name);
    expect(view?.responders.every((r) => r.replies > 0)).toBe(true);
    // An independent client agrees: one broadcast request, three distinct MACs answer.
    const out = await inNs(stack.lab.client.ns, "arping", "-c", "1", "-w", "1000000", "-I", "eth0", vip);
    const macs = new Set([...out.matchAll(/bytes from ([0-9a-f:]{17})/g)].map((m) => m[1]));
    expect(macs).toEqual(new Set(stack.lab.nodes.map((n) => n.mac)));
  });

  it("agents reconnect when the hub restarts, and the new hub sees the three responders again", async () => {
    await stack.restartHub();
    const restartedAt = Date.now();
    // The new hub restores what the old one stored; only answers seen after the restart prove the agents are back.
    const view = await eventually(
      async () => (await api<IpView[]>(stack.url, stack.viewerToken, "ips")).find((i) => i.ip === vip),
      (v) => v?.responders.filter((r) => r.answering && r.node !== null && r.lastSeen > restartedAt).length === 3,
      30_000,
    );
    expect(view?.state).toBe("multi-responder");
    const agents = await eventually(
      () => query<AgentView[]>(stack, "agents.list"),
      (a) => a.filter((x) => x.up).length === 3,
      10_000,
    );
    expect(
      agents
        .filter((a) => a.up)
        .map((a) => a.node)
        .sort(),
    ).toEqual(stack.lab.nodes.map((n) => n.name));
  });

  it("after arp_ignore=1 and arp_announce=2 on every node, nobody answers and the hub says so", async () => {
    for (const n of stack.lab.nodes) await stack.lab.setStrictArp(n, true);
    const changedAt = Date.now();
    const view = await eventually(
      async () => (await api<IpView[]>(stack.url, stack.viewerToken, "ips")).find((i) => i.ip === vip),
      (v) => v?.state === "no-responder",
      20_000,
    );
    expect(view?.responders.filter((r) => r.answering)).toEqual([]);
    const requestsThen = view?.requests ?? 0;
    // Requests keep coming and still nobody answers.
    const later = await eventually(
      async () => (await api<IpView[]>(stack.url, stack.viewerToken, "ips")).find((i) => i.ip === vip),
      (v) => (v?.requests ?? 0) > requestsThen + 2,
      10_000,
    );
    expect(later?.state).toBe("no-responder");
    expect(Date.now() - changedAt).toBeLessThan(20_000);
  });

  it("an independent client (arping) confirms the kernels are silent", async () => {
    // Debian's arping exits non-zero when no reply came.
    await expect(inNs(stack.lab.client.ns, "arping", "-c", "2", "-w", "2000000", "-I", "eth0", vip)).rejects.toThrow(/100% unanswered/);
  });
});
