import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STRANGER_GRACE_MS } from "@whohas/core";
import { startStack, type Stack } from "../stack.js";
import { api, eventually, findingsIn, query, type IncidentView } from "./hub-client.js";

interface ApiIp {
  ip: string;
  responders: { mac: string; node: string | null; vendor: string | null; replies: number }[];
  requests: number;
}

/** INTERVAL_MS: the hub's background probe, shortened from the product's 30 s for the test (it accepts 5 s to 60 s). */
const INTERVAL_MS = 5000;
/** LISTEN_MS: how long the probing agent listens for the answers to its one request (the hub's background probe). */
const LISTEN_MS = 500;
/** POLL_MS: how often `eventually` reads the API. */
const POLL_MS = 250;

/** backgroundProbes reads the hub's count of background probes by outcome from its metrics. */
async function backgroundProbes(metricsUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(metricsUrl)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^whohas_background_probes_total\{outcome="(\w+)"\} (\d+)/gm)) out[m[1] ?? ""] = Number(m[2]);
  return out;
}

// A host that answers only off-cluster clients answers them by unicast, which no agent sees; the hub's background
// probe asks for every LoadBalancer IP from one node at a time, and that node hears the host's answer.
describe("the background probe", () => {
  let stack: Stack;
  const ips = () => api<ApiIp[]>(stack.url, stack.viewerToken, "ips");
  const one = async (ip: string) => (await ips()).find((x) => x.ip === ip);

  beforeAll(async () => {
    // The client asks for each IP once, at its start, and then not for an hour: every later request is the probe's.
    stack = await startStack({ nodes: 3, vips: 2, kube: true, requestIntervalMs: 3_600_000, backgroundProbe: `${INTERVAL_MS / 1000}s` });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("hears a host that answers no request the agents see within one interval, and calls it an address conflict", async () => {
    const vip = stack.lab.vips[1] ?? "";
    const STRANGER = "00:1b:21:00:00:3b";
    await eventually(
      () => query<{ node: string; up: boolean }[]>(stack, "agents.list"),
      (a) => a.filter((x) => x.up).length === 3,
      30_000,
    );
    // Each node's facts name its addresses: the probe's requests are known as the hub's own only once they are in.
    await new Promise((r) => setTimeout(r, 2000));
    await stack.lab.addStranger(STRANGER, [vip]);
    const t0 = Date.now();
    // The hub asks for each IP at least once an interval: the next probe after the stranger took the address hears it,
    // its answer is reported within the probe's listen window, and the API read after it says so.
    const bound = INTERVAL_MS + LISTEN_MS + POLL_MS;
    const seen = await eventually(
      () => one(vip),
      (v) => v?.responders.some((r) => r.mac === STRANGER) === true,
      bound + 5000,
    );
    const heardAfter = Date.now() - t0;
    process.stdout.write(`background probe: stranger first heard ${heardAfter} ms after it took the address (bound ${bound} ms)\n`);
    expect(heardAfter).toBeLessThanOrEqual(bound);
    expect(seen?.responders.find((r) => r.mac === STRANGER)).toMatchObject({ node: null, vendor: "Intel Corporate" });
    const open = await eventually(
      () => api<IncidentView[]>(stack.url, stack.viewerToken, `incidents?state=open&ip=${vip}`),
      (list) => findingsIn(list).some((f) => f.type === "address-conflict"),
      STRANGER_GRACE_MS + 3 * INTERVAL_MS,
    );
    expect(findingsIn(open).find((f) => f.type === "address-conflict")?.macs).toEqual([STRANGER]);
  }, 90_000);

  it("keeps its own requests out of what clients did, while counting who answered them", async () => {
    const vip = stack.lab.vips[0] ?? "";
    const before = await one(vip);
    const probes = await backgroundProbes(stack.metricsUrl);
    await new Promise((r) => setTimeout(r, 3 * INTERVAL_MS));
    const after = await one(vip);
    const later = await backgroundProbes(stack.metricsUrl);
    const sent = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
    // Two IPs probed every 5 s for 15 s: about six probes more, each answered (the lab's nodes all answer).
    expect(sent(later) - sent(probes)).toBeGreaterThanOrEqual(4);
    expect((later.answered ?? 0) - (probes.answered ?? 0)).toBeGreaterThanOrEqual(4);
    // Not one of them counted as a client's request; their answers counted as replies.
    expect(after?.requests).toBe(before?.requests);
    const replies = (v: ApiIp | undefined) => (v?.responders ?? []).reduce((n, r) => n + r.replies, 0);
    expect(replies(after)).toBeGreaterThan(replies(before));
  }, 60_000);
});
