import { describe, expect, it } from "vitest";
import type { Actions } from "../actions/actions.js";
import { PROBE_BATCH, verifyProbes, type Checked } from "../remediation/verify.js";

type View = NonNullable<ReturnType<Actions["view"]>>;

/** view is a finished probe run as Actions shows it: each round's replies by node. */
function view(over: Omit<Partial<View>, "rounds"> & { rounds?: { node: string | null }[][] }): View {
  const given: { node: string | null }[][] = over.rounds ?? [];
  const rounds = given.map((replies, seq) => ({
    seq,
    sentAt: seq * 1000,
    replies: replies.map((r, i) => ({ mac: `02:00:5e:00:00:${i}${seq % 10}`, latencyMs: 0.3, node: r.node })),
  }));
  return {
    id: "x",
    ip: "x",
    by: "op",
    probers: ["node-1", "node-2"],
    startedAt: 0,
    durationMs: 3000,
    state: "done",
    summary: null,
    messages: [],
    failedProbers: [],
    version: 1,
    ...over,
    rounds,
  } as unknown as View;
}

const byOwner = [[{ node: "node-1" }], [{ node: "node-1" }]];

describe("verifyProbes", () => {
  it("probes every IP in batches and finds no evidence where a probe is gone, failed, lacks a prober or got no request", async () => {
    const cases: Record<string, View | null> = {
      "192.0.2.1": view({ rounds: byOwner }),
      "192.0.2.2": null,
      "192.0.2.3": view({ state: "failed", messages: ["node-1: no capture", "node-2: no capture"], rounds: [] }),
      "192.0.2.4": view({ failedProbers: ["node-2"], rounds: byOwner }),
      "192.0.2.5": view({ rounds: [] }),
      "192.0.2.6": view({ rounds: [[{ node: "node-1" }, { node: "node-2" }]] }),
      "192.0.2.7": view({ probers: ["node-1"], rounds: byOwner }),
      "192.0.2.8": view({ rounds: byOwner }),
    };
    const ips = Object.keys(cases).map((ip) => ({ ip, owner: "node-1" }));
    expect(ips.length).toBeGreaterThan(PROBE_BATCH);
    const said: string[] = [];
    const seen: Checked[] = [];
    const probed: string[] = [];
    const checked = await verifyProbes({
      ips,
      actions: {
        probe: (ip) => (probed.push(ip), ip),
        view: (id) => cases[id] ?? null,
        durations: { probeMs: 3000, announceMs: 5000 },
      },
      nodesUp: () => 3,
      by: "op",
      say: (l) => said.push(l),
      checked: (c) => seen.push(c),
      pollMs: 1,
    });
    expect(probed).toEqual(Object.keys(cases));
    expect(said.map((l) => /\(batch (\d) of (\d), 8 IPs\)$/.exec(l)?.slice(1))).toEqual([
      ["1", "2"],
      ["2", "2"],
    ]);
    expect(seen).toEqual(checked);
    expect(Object.fromEntries(checked.map((c) => [c.ip, c.problem]))).toEqual({
      "192.0.2.1": null,
      "192.0.2.2": "192.0.2.2: the probe is gone",
      "192.0.2.3": "192.0.2.3: the probe failed on every prober (node-1: no capture; node-2: no capture)",
      "192.0.2.4": "192.0.2.4: the probe from node-2 did not report, so what it heard is missing",
      "192.0.2.5": "192.0.2.5: the probe sent no request, so nothing shows the fix worked",
      "192.0.2.6": "192.0.2.6: 1 requests answered by several MACs, 0 by a node other than node-1, 0 unanswered",
      "192.0.2.7": expect.stringMatching(/^192\.0\.2\.7: probed from node-1 alone; a node never hears its own answer/),
      "192.0.2.8": null,
    });
    expect(checked.find((c) => c.ip === "192.0.2.1")?.requests).toBe(2);
  });

  it("waits for running probes before judging them", async () => {
    let looks = 0;
    const checked = await verifyProbes({
      ips: [{ ip: "192.0.2.1", owner: "node-1" }],
      actions: {
        probe: (ip) => ip,
        view: () => (++looks < 3 ? view({ state: "running", rounds: [] }) : view({ rounds: byOwner })),
        durations: { probeMs: 3000, announceMs: 5000 },
      },
      nodesUp: () => 2,
      by: "op",
      say: () => undefined,
      checked: () => undefined,
      pollMs: 1,
    });
    expect(looks).toBe(3);
    expect(checked).toEqual([{ ip: "192.0.2.1", owner: "node-1", requests: 2, problem: null }]);
  });
});
