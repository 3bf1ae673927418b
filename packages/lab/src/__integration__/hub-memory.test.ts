import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import WebSocket from "ws";
import { observationsJson } from "../agent-messages.js";
import { startLoneHub, type LoneHub } from "../lone-hub.js";
import { eventually } from "./hub-client.js";

/** HEAP_MB: a small heap (the hub idles at about 60 MB of it): some 30,000 IPs fill it. */
const HEAP_MB = "160";
/** IPS: far more than that heap holds (a few KB each): without the guard the hub dies of it. */
const IPS = 60_000;
const PER_MESSAGE = 500;
const NODE_MAC = "02:00:5e:10:00:01";

const ipOf = (i: number) => `10.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;

/** metric reads one series of a /metrics text (`name` with its labels as the text writes them); NaN when absent. */
const metric = (text: string, series: string): number => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return Number(line?.slice(series.length + 1) ?? NaN);
};

// A flood of new IPs into a hub whose heap cannot hold them: the live view shrinks, the hub stays up and says why.
describe("the hub near its heap's bound", () => {
  let hub: LoneHub;
  beforeAll(async () => {
    hub = await startLoneHub(
      { limits: { newIpsPerAgentPerMinute: 10_000_000, newIpsPerMinute: 100_000_000 }, log: { level: "warn" } },
      { WHOHAS_HEAP_MB: HEAP_MB },
    );
  });
  afterAll(async () => {
    await hub.stop();
  });

  it("lets the least recently active IPs go instead of running out of memory", async () => {
    const ws = new WebSocket(`${hub.url.replace("http", "ws")}/agent`, {
      headers: { authorization: `Bearer ${hub.agentToken}` },
      perMessageDeflate: false,
    });
    await once(ws, "open");
    ws.send(
      JSON.stringify({
        v: 2,
        type: "hello",
        node: "flood-1",
        agentVersion: "test",
        interfaces: [{ name: "eth0", mac: NODE_MAC, up: true }],
      }),
    );
    const gone: { code: number | null } = { code: null };
    hub.process.once("exit", (code) => (gone.code = code ?? -1));
    for (let i = 0; i < IPS && gone.code === null; i += PER_MESSAGE) {
      const ips = Array.from({ length: PER_MESSAGE }, (_, k) => ipOf(i + k));
      // A client's request and this node's reply for each IP: two aggregates an IP.
      ws.send(observationsJson(ips, NODE_MAC, 0, ips.length * 2, Date.now()));
      // As an agent does: no more than a few messages in flight.
      while (ws.bufferedAmount > 1_000_000) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 5));
    }
    // Until every IP was taken in: each was sent once, so it is in the live view or was let go.
    const taken = (text: string) => metric(text, "whohas_hub_ips_tracked") + metric(text, 'whohas_hub_limit_hits_total{what="ip"}');
    const metrics = await eventually(
      async () => (gone.code !== null ? "" : await (await fetch(hub.metricsUrl)).text()),
      (text) => gone.code !== null || taken(text) === IPS,
      90_000,
      1_000,
    );
    ws.close();
    const tail = () => readFileSync(join(hub.dir, "hub.log"), "utf8").split("\n").slice(-15).join("\n");
    expect(gone.code, `the hub exited ${gone.code}; its log ends:\n${tail()}`).toBeNull();
    expect(taken(metrics)).toBe(IPS);
    // Memory set the limit, and kept a fair share of what the heap holds (a guard that emptied the view would not).
    const limit = metric(metrics, "whohas_hub_ip_limit");
    expect(limit).toBeLessThan(IPS);
    expect(limit).toBeGreaterThanOrEqual(5_000);
    expect(metric(metrics, "whohas_hub_ips_tracked")).toBeLessThanOrEqual(limit);
    // Told, with the heap near its bound when it was.
    const told = readFileSync(join(hub.dir, "hub.log"), "utf8")
      .split("\n")
      .filter((l) => l.includes('"event":"hub.limit_reached"'))
      .map((l) => JSON.parse(l) as { ipLimit: number; heap: { usedMb: number; limitMb: number } | null; hint: string });
    expect(told.length).toBeGreaterThan(0);
    for (const t of told) {
      expect(t.heap?.limitMb).toBe(Number(HEAP_MB));
      expect((t.heap?.usedMb ?? 0) / Number(HEAP_MB)).toBeGreaterThanOrEqual(0.8);
      expect(t.hint).toMatch(/^the hub's heap came near its bound: the live view holds at most \d+ IPs/);
    }
    expect((await fetch(`${hub.url}/healthz`)).status).toBe(200);
  });
});
