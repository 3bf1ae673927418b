import { describe, expect, it } from "vitest";
import type { ProbedIp } from "../actions/probe-all.js";
import { VERIFY_ROUNDS, judgeProbed, verifyProbes, type Checked } from "../remediation/verify.js";

/** probed is what probing one IP found: each round's replies by node. */
function probed(ip: string, over: Omit<Partial<ProbedIp>, "rounds"> & { rounds?: { node: string | null }[][] } = {}): ProbedIp {
  const rounds = (over.rounds ?? []).map((replies, i) => ({
    seq: i + 1,
    at: i * 1000,
    probers: ["node-1", "node-2"],
    replies: replies.map((r, j) => ({ mac: `02:00:5e:00:00:${j}${i % 10}`, latencyMs: 0.3, probers: ["node-2"], node: r.node })),
  }));
  return { ip, probers: ["node-1", "node-2"], failedProbers: [], messages: [], ...over, rounds };
}

const byOwner = [[{ node: "node-1" }], [{ node: "node-1" }]];

describe("judgeProbed", () => {
  it.each([
    { case: "each request answered once, by the owner", p: probed("192.0.2.1", { rounds: byOwner }), problem: null },
    {
      case: "failed on every prober",
      p: probed("192.0.2.3", { failedProbers: ["node-1", "node-2"], messages: ["node-1: busy", "node-2: no capture"] }),
      problem: "192.0.2.3: the probe failed on every prober (node-1: busy; node-2: no capture)",
    },
    {
      case: "one prober missing",
      p: probed("192.0.2.4", { failedProbers: ["node-2"], rounds: byOwner }),
      problem: "192.0.2.4: the probe from node-2 did not report, so what it heard is missing",
    },
    { case: "no request", p: probed("192.0.2.5"), problem: "192.0.2.5: the probe sent no request, so nothing shows the fix worked" },
    {
      case: "a request answered by two nodes",
      p: probed("192.0.2.6", { rounds: [[{ node: "node-1" }, { node: "node-2" }], [{ node: "node-1" }]] }),
      problem: "192.0.2.6: 1 requests answered by several MACs, 0 by a node other than node-1, 0 unanswered",
    },
    {
      case: "an IP in a VLAN answered by another node, and once not at all",
      p: probed("192.0.2.7@30", { rounds: [[{ node: "node-2" }], []] }),
      problem: "192.0.2.7@30: 0 requests answered by several MACs, 1 by a node other than node-1, 1 unanswered",
    },
    {
      case: "one prober where two nodes are up",
      p: probed("2001:db8::8", { probers: ["node-1"], rounds: byOwner }),
      problem: expect.stringMatching(/^2001:db8::8: probed from node-1 alone; a node never hears its own answer/),
    },
  ])("$case", ({ p, problem }) => {
    expect(judgeProbed(p, "node-1", 3)).toEqual({ ip: p.ip, owner: "node-1", requests: p.rounds.length, problem });
  });

  it("takes one answer from any node when no owner is known, and one prober when it is the only node up", () => {
    const p = probed("192.0.2.9", { probers: ["node-2"], rounds: [[{ node: "node-2" }], [{ node: "node-2" }]] });
    expect(judgeProbed(p, null, 1).problem).toBeNull();
  });
});

describe("verifyProbes", () => {
  it("probes every IP at once, VERIFY_ROUNDS requests each, and judges each as its probers are through", async () => {
    const asked: { ips: readonly string[]; by: string; rounds: number }[] = [];
    const said: string[] = [];
    const seen: Checked[] = [];
    const checked = await verifyProbes({
      ips: [
        { ip: "192.0.2.1", owner: "node-1" },
        { ip: "192.0.2.2@30", owner: "node-2" },
        { ip: "2001:db8::3", owner: null },
      ],
      actions: {
        probeAll: (ips, by, rounds, say, done) => {
          asked.push({ ips, by, rounds });
          say("probing");
          // As probers finish: the last IP first.
          const out = [
            probed("2001:db8::3", { rounds: [[{ node: "node-2" }]] }),
            probed("192.0.2.1", { rounds: byOwner }),
            probed("192.0.2.2@30", { rounds: byOwner }),
          ];
          out.forEach(done);
          return Promise.resolve(out);
        },
      },
      nodesUp: () => 2,
      by: "olga",
      say: (l) => said.push(l),
      checked: (c) => seen.push(c),
    });
    expect(asked).toEqual([{ ips: ["192.0.2.1", "192.0.2.2@30", "2001:db8::3"], by: "olga", rounds: VERIFY_ROUNDS }]);
    expect(said).toEqual(["probing"]);
    expect(seen).toEqual(checked);
    expect(checked.map((c) => [c.ip, c.owner, c.requests, c.problem])).toEqual([
      ["2001:db8::3", null, 1, null],
      ["192.0.2.1", "node-1", 2, null],
      ["192.0.2.2@30", "node-2", 2, "192.0.2.2@30: 0 requests answered by several MACs, 2 by a node other than node-2, 0 unanswered"],
    ]);
  });
  it("probes an IP named twice once, and names a problem for an IP the probe returned nothing for", async () => {
    const asked: (readonly string[])[] = [];
    const seen: Checked[] = [];
    const checked = await verifyProbes({
      ips: [
        { ip: "192.0.2.1", owner: "node-1" },
        { ip: "192.0.2.2", owner: "node-2" },
        { ip: "192.0.2.1", owner: "node-1" },
        { ip: "2001:db8::3", owner: null },
        { ip: "2001:db8:0:0::3", owner: null },
      ],
      actions: {
        probeAll: (ips, _by, _rounds, _say, done) => {
          asked.push(ips);
          // 192.0.2.2 never comes back; 192.0.2.1 comes back twice.
          const out = [
            probed("192.0.2.1", { rounds: byOwner }),
            probed("192.0.2.1", { rounds: byOwner }),
            probed("2001:db8::3", { rounds: byOwner }),
          ];
          out.forEach(done);
          return Promise.resolve(out);
        },
      },
      nodesUp: () => 2,
      by: "olga",
      say: () => undefined,
      checked: (c) => seen.push(c),
    });
    expect(asked).toEqual([["192.0.2.1", "192.0.2.2", "2001:db8::3"]]);
    expect(seen).toEqual(checked);
    expect(checked.map((c) => [c.ip, c.problem])).toEqual([
      ["192.0.2.1", null],
      ["2001:db8::3", null],
      ["192.0.2.2", "192.0.2.2: the probe returned nothing for it, so nothing shows the fix worked"],
    ]);
  });
});
