// Benchmark of the hub: 200 simulated agents over real WebSockets, 300 IPs each, 50,000 observations/s in
// total for 60 s, against the production hub (`whohas-hub --config`, SQLite on disk). Measures the hub's CPU and peak
// RSS, whether it keeps up (every message sent was accepted, nothing left buffered on either side, and at most 1 % of
// the request reports read too late to judge their request in order), and the latency
// from an agent's send to the state change a subscriber sees (tRPC over SSE). The reference in the same run is a
// bare `ws` server that only parses the same messages: the floor of receiving them in Node. Asserts nothing.
// `node hub-bench.js [AGENTS] [OBSERVATIONS_PER_SECOND] [SECONDS] [IPS_PER_AGENT] [NODES_PER_SEGMENT] [--postgres]`
// (default 200 50000 60 300 1; the 5,000-agent target is 5000 100000 60 60). With --postgres the hub stores on a
// throwaway PostgreSQL server started for the run (the lab's), and that server's CPU is counted beside the hub's. NODES_PER_SEGMENT nodes see the same IPs and
// every request for them, and one answers each (SimAgent): 1 gives every node IPs of its own, the most IPs to hold;
// 50 is a cluster of racks of 50 nodes, each rack one L2 segment, where every request is reported by 50 agents.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocketServer } from "ws";
import { freePort, startPostgres, type TestPostgres } from "@whohas/lab";
import { MAX_IPS, SimAgent, TICKS, VIEWER, cpuTicks, rssMb, sleep, startHub } from "./sim.js";
import { target, targets } from "./report.js";

const MAX_ROWS_PER_FLUSH_NOTE = "the hub writes at most 15,000 rows a second, oldest first";
/**
 * BACKLOG_TICKS: the disk backlog is read from /metrics every 3 s of the load (ticks of 100 ms). A scrape walks every
 * IP for the per-IP series, about 80 ms at 60,000 IPs here: read every second it was 8 % of the hub's busy time, a
 * load this bench put on the hub and not on the reference (Prometheus scrapes every 15 to 60 s).
 */
const BACKLOG_TICKS = 30;
/** MIN_BACKLOG_SAMPLES: fewer samples than this (a run under 24 s) cannot tell a flat backlog from a growing one. */
const MIN_BACKLOG_SAMPLES = 8;

interface Load {
  agents: number;
  ipsPerAgent: number;
  perSecond: number;
  seconds: number;
  segmentSize: number;
}

/**
 * drive runs the load: each agent sends at the pace the hub set it (every 100 ms unless told otherwise) what its
 * node saw since its last message; returns the peak of bytes buffered on the client side.
 */
async function drive(
  agents: SimAgent[],
  load: Load,
  during?: (elapsed: number, tick: number) => void,
): Promise<{ seconds: number; maxBuffered: number; maxLagMs: number }> {
  // Aggregates a batch covers: a request each, and a reply for the IPs this node answers (one node of a segment does).
  const perBatch = Math.round(((load.perSecond / load.agents / 10) * 2) / (1 + 1 / load.segmentSize));
  const started = Date.now();
  // Positions are counted from each agent's cursor at the start: the same for every node of a segment, so that they
  // report the same requests at the same times.
  const base = agents.map((a) => a.cursor);
  const upTo = (i: number, ticks: number) => (base[i] ?? 0) + ticks * perBatch;
  // A tick's requests were on the wire when it began, by the clock (a load that falls behind its schedule does not
  // report stale times), the same for every node of a segment.
  const tickAt: number[] = [];
  const askedAt = (i: number) => (c: number) => tickAt[Math.floor((c - (base[i] ?? 0)) / perBatch)] ?? Date.now();
  let maxBuffered = 0;
  let maxLagMs = 0;
  let tick = 0;
  while (Date.now() - started < load.seconds * 1000) {
    // Spread the agents over the 100 ms slot, as real agents are not in phase; each slice at its own deadline.
    for (let slice = 0; slice < 10; slice++) {
      const due = started + tick * 100 + slice * 10 - Date.now();
      if (due > 0) await sleep(due);
      else maxLagMs = Math.max(maxLagMs, -due);
      const now = Date.now();
      if (slice === 0) tickAt[tick] = now;
      for (let i = slice; i < agents.length; i += 10) {
        const a = agents[i];
        if (a === undefined) continue;
        // An agent that sends every N ticks sends in one tick of N, at its own phase, what the ticks since brought.
        const every = Math.max(1, Math.round(a.flushMs / 100));
        if (tick % every !== Math.floor(i / 10) % every) continue;
        a.batch(upTo(i, tick + 1) - a.cursor, now, askedAt(i));
      }
    }
    tick++;
    if (tick % 10 === 0)
      maxBuffered = Math.max(
        maxBuffered,
        agents.reduce((n, a) => n + a.ws.bufferedAmount, 0),
      );
    during?.(Date.now() - started, tick);
  }
  // Each agent sends what its last ticks brought: the nodes of a segment stay at one position.
  agents.forEach((a, i) => {
    if (a.cursor < upTo(i, tick)) a.batch(upTo(i, tick) - a.cursor, Date.now(), askedAt(i));
  });
  return { seconds: (Date.now() - started) / 1000, maxBuffered, maxLagMs };
}

/** sseLatency opens a tRPC subscription for a fresh IP, sends it from one agent, and times the state change. */
async function sseLatency(base: string, agent: SimAgent, ip: string): Promise<number> {
  const ac = new AbortController();
  const input = encodeURIComponent(JSON.stringify({ ip }));
  const res = await fetch(`${base}/api/trpc/ips.byIpLive?input=${input}`, {
    signal: ac.signal,
    headers: { accept: "text/event-stream", authorization: `Bearer ${VIEWER}` },
  });
  if (res.body === null) throw new Error("no SSE body");
  const reader: ReadableStreamDefaultReader<Uint8Array> = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  let sentAt = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error("SSE ended");
      buf += dec.decode(value, { stream: true });
      let i: number;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const event = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = event
          .split("\n")
          .find((l) => l.startsWith("data: "))
          ?.slice(6);
        if (data === undefined) continue;
        const parsed = JSON.parse(data) as unknown;
        if (sentAt === 0) {
          // The first event is the IP as it is now (unknown: null). Send its first reply now.
          const now = Date.now();
          agent.reply(ip, now);
          sentAt = performance.now();
          continue;
        }
        if (parsed !== null) return performance.now() - sentAt;
      }
    }
  } finally {
    ac.abort();
  }
}

async function hubMetric(metrics: string, name: string): Promise<number> {
  const text = await (await fetch(metrics)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(name))
    .reduce((n, l) => n + Number(l.split(" ").pop()), 0);
}

async function connectAll(url: string, load: Load): Promise<SimAgent[]> {
  // Made 20 at a time, as they are opened: a socket made long before it is waited for may open unheard.
  const agents: SimAgent[] = [];
  for (let i = 0; i < load.agents; i += 20) {
    const batch = Array.from(
      { length: Math.min(20, load.agents - i) },
      (_, k) => new SimAgent(url, i + k, load.ipsPerAgent, load.segmentSize),
    );
    await Promise.all(batch.map((a) => a.open()));
    agents.push(...batch);
  }
  return agents;
}

/** reference: a bare ws server parsing every message, in a child process, under the same load. */
async function reference(load: Load, flushMs: number): Promise<{ cpu: number; rss: number; entries: number; sent: number }> {
  const port = await freePort();
  const child = spawn(process.execPath, [new URL(import.meta.url).pathname, "--reference-server", String(port)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
  const agents = await connectAll(`ws://127.0.0.1:${port}/agent`, load);
  // The same messages as the hub got: at the pace it set its agents.
  for (const a of agents) a.flushMs = flushMs;
  const pid = child.pid ?? 0;
  const c0 = cpuTicks(pid);
  const { seconds } = await drive(agents, load);
  const cpu = (cpuTicks(pid) - c0) / TICKS / seconds;
  const rss = rssMb(pid, "VmHWM");
  await sleep(1000);
  for (const a of agents) a.ws.close();
  const entries = await new Promise<number>((resolve) => {
    child.stdout.once("data", (d: Buffer) => resolve(Number(d.toString().trim())));
    child.kill("SIGUSR2");
  });
  child.kill("SIGTERM");
  return { cpu, rss, entries, sent: agents.reduce((n, a) => n + a.entries, 0) };
}

function referenceServer(port: number): void {
  let entries = 0;
  const http = createServer();
  const wss = new WebSocketServer({ server: http, maxPayload: 1024 * 1024 });
  wss.on("connection", (ws) =>
    ws.on("message", (d: Buffer) => (entries += ((JSON.parse(d.toString()) as { entries?: unknown[] }).entries ?? []).length)),
  );
  process.on("SIGUSR2", () => process.stdout.write(`${entries}\n`));
  http.listen(port, "127.0.0.1", () => process.stdout.write("ready\n"));
}

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((a) => a !== "--postgres");
  const load: Load = {
    agents: Number(args[0] ?? 200),
    ipsPerAgent: Number(args[3] ?? 300),
    perSecond: Number(args[1] ?? 50_000),
    seconds: Number(args[2] ?? 60),
    segmentSize: Math.max(1, Number(args[4] ?? 1)),
  };
  const dir = mkdtempSync(join(tmpdir(), "whohas-hub-bench-"));
  let hub: Awaited<ReturnType<typeof startHub>> | null = null;
  let pg: TestPostgres | null = null;
  try {
    if (process.argv.includes("--postgres")) pg = await startPostgres();
    hub = await startHub(dir, pg?.url ?? null);
    const { base, port, pid, wrapper, metrics } = hub;
    const agents = await connectAll(`ws://127.0.0.1:${port}/agent`, load);
    // Warm up: the hub learns every IP once before the clock starts.
    await drive(agents, { ...load, seconds: 5 });
    const msgs0 = await hubMetric(metrics, 'whohas_hub_agent_messages_total{type="observations"}');
    const sent0 = agents.reduce((n, a) => n + a.sent, 0);
    const entries0 = agents.reduce((n, a) => n + a.entries, 0);
    const c0 = cpuTicks(pid);
    const pg0 = pg?.cpuTicks() ?? 0;
    const latencies: number[] = [];
    let markers = 0;
    let probing = false;
    const rssSamples: number[] = [];
    const pending0 = await hubMetric(metrics, "whohas_hub_store_pending_rows");
    // The disk backlog, sampled while the load runs (after it the hub drains it, which would hide a growing one).
    const pendingSamples: number[] = [];
    const { seconds, maxBuffered, maxLagMs } = await drive(agents, load, (elapsed, tick) => {
      if (tick % 10 === 0) rssSamples.push(rssMb(pid, "VmRSS"));
      if (tick % BACKLOG_TICKS === 0) {
        // A sample the hub is too busy to answer is missing, not the end of the run.
        void hubMetric(metrics, "whohas_hub_store_pending_rows").then(
          (n) => pendingSamples.push(n),
          () => undefined,
        );
      }
      if (probing || elapsed > load.seconds * 1000 - 2000) return;
      probing = true;
      // One marker at a time, from a rotating agent, for an IP nobody has seen.
      const agent = agents[markers % agents.length];
      const ip = `198.51.${100 + Math.floor(markers / 250)}.${(markers % 250) + 1}`;
      markers++;
      if (agent === undefined) return;
      void sseLatency(base, agent, ip)
        .then(
          (ms) => latencies.push(ms),
          () => undefined,
        )
        .finally(() => (probing = false));
    });
    const cpu = (cpuTicks(pid) - c0) / TICKS / seconds;
    const pgCpu = pg === null ? null : (pg.cpuTicks() - pg0) / TICKS / seconds;
    // The peak over warm-up and load, before the queries below build their own large answers.
    const peak = rssMb(pid, "VmHWM");
    const wrapperRss = wrapper === pid ? 0 : rssMb(wrapper, "VmHWM");
    await sleep(2000);
    const accepted = (await hubMetric(metrics, 'whohas_hub_agent_messages_total{type="observations"}')) - msgs0;
    const sent = agents.reduce((n, a) => n + a.sent, 0) - sent0;
    const pending = await hubMetric(metrics, "whohas_hub_store_pending_rows");
    const ticks = await (await fetch(metrics)).text();
    const pass = (name: string) => {
      const count = Number(new RegExp(`whohas_hub_tick_seconds_count\\{pass="${name}"\\} (\\d+)`).exec(ticks)?.[1] ?? 0);
      const sum = Number(new RegExp(`whohas_hub_tick_seconds_sum\\{pass="${name}"\\} ([\\d.e-]+)`).exec(ticks)?.[1] ?? 0);
      return `${((sum / Math.max(1, count)) * 1000).toFixed(1)} ms mean over ${count}`;
    };
    const ipCount = ((await (await fetch(`${base}/api/v1/ips`, { headers: { authorization: `Bearer ${VIEWER}` } })).json()) as unknown[])
      .length;
    const open = (await (
      await fetch(`${base}/api/v1/incidents?state=open&limit=5000`, { headers: { authorization: `Bearer ${VIEWER}` } })
    ).json()) as { type: string }[];
    const openByType = [...open.reduce((m, i) => m.set(i.type, (m.get(i.type) ?? 0) + 1), new Map<string, number>())]
      .map(([t, n]) => `${t} ${n}`)
      .join(", ");
    const rssAfterQueries = rssMb(pid, "VmRSS");
    const heapUsed = (await hubMetric(metrics, "nodejs_heap_size_used_bytes")) / 1e6;
    const heapTotal = (await hubMetric(metrics, "nodejs_heap_size_total_bytes")) / 1e6;
    // Below limits.maxIps only when memory set it (the hub's heap guard): then the hub holds fewer IPs than were sent.
    const ipLimit = await hubMetric(metrics, "whohas_hub_ip_limit");
    // Reports of a request that reached the hub 2 s or more after it, too late to judge it in order (warm-up included).
    const lateReports = await hubMetric(metrics, "whohas_hub_late_request_reports_total");
    const pace = agents[0]?.flushMs ?? 100;
    // drive() sends in whole ticks of 100 ms: a pace of 150 ms is sent every 200.
    const sentEvery = Math.max(1, Math.round(pace / 100)) * 100;
    for (const a of agents) a.ws.close();
    await hub.stop();
    hub = null;

    // The reference carries the same load for as long as the hub did.
    const ref = await reference(load, pace);
    latencies.sort((a, b) => a - b);
    const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN;
    const entriesPerSecond = (agents.reduce((n, a) => n + a.entries, 0) - entries0) / seconds;
    // Keeping up: every message taken, nothing piling up in the client's buffers, and the disk backlog not growing
    // while the load runs: its peak over the last quarter no higher than over the first (5 % for where a flush stops).
    const quarter = Math.max(1, Math.floor(pendingSamples.length / 4));
    const firstPeak = Math.max(pending0, ...pendingSamples.slice(0, quarter));
    const lastPeak = Math.max(...pendingSamples.slice(-quarter));
    // Samples the busy hub did not answer are missing: too few cannot tell flat from growing, and say so.
    const enough = pendingSamples.length >= MIN_BACKLOG_SAMPLES;
    const backlogFlat = enough && lastPeak <= firstPeak * 1.05;
    const backlog = !enough ? `not judged: ${pendingSamples.length} samples, too few` : backlogFlat ? "flat" : "GROWING";
    // Taking every message is not keeping up if it reads them late: a report of a request that reaches the judge 2 s
    // or more after the request is too late to judge it in order. At most 1 % of them may be.
    const reportsSent = agents.reduce((n, a) => n + a.reports, 0);
    const lateShare = lateReports / Math.max(1, reportsSent);
    const keepsUp = accepted >= sent && backlogFlat && maxBuffered < 1024 * 1024 && lateShare <= 0.01;
    if (ref.entries !== ref.sent) throw new Error(`the reference parsed ${ref.entries} of ${ref.sent} entries: it did not carry the load`);
    const rows = [
      `hub benchmark: ${load.agents} agents over WebSockets, ${load.ipsPerAgent} IPs each, ${load.segmentSize === 1 ? "each node on its own segment" : `${load.segmentSize} nodes a segment`} (${ipCount} IPs in the hub), ${Math.round(entriesPerSecond)} observations/s for ${seconds.toFixed(1)} s`,
      `each agent sends every ${sentEvery} ms (the hub set it ${pace} ms: limits.agentMessagesPerSecond 10,000), and the reference's agents as often; the load ran at most ${maxLagMs} ms behind its schedule`,
      "",
      `${"".padEnd(28)} ${"CPU (1 core)".padStart(12)} ${"peak RSS".padStart(10)}`,
      `${(pgCpu === null ? "whohas-hub (SQLite, WAL)" : "whohas-hub (PostgreSQL)").padEnd(28)} ${`${(cpu * 100).toFixed(1)} %`.padStart(12)} ${`${peak.toFixed(0)} MB`.padStart(10)}`,
      ...(pgCpu === null
        ? []
        : [`${"PostgreSQL server".padEnd(28)} ${`${(pgCpu * 100).toFixed(1)} %`.padStart(12)}   (its processes, beside the hub's)`]),
      `${"bare ws + JSON.parse (ref)".padEnd(28)} ${`${(ref.cpu * 100).toFixed(1)} %`.padStart(12)} ${`${ref.rss.toFixed(0)} MB`.padStart(10)}   (${ref.entries}/${ref.sent} entries parsed)`,
      `ratio hub / reference CPU: ${(cpu / ref.cpu).toFixed(2)}x; the hub's CPU per message: ${((cpu * seconds * 1e6) / Math.max(1, accepted)).toFixed(0)} µs (wire-bench.js --hub-us N: what reading it costs)`,
      "",
      `keeps up: ${accepted}/${sent} messages accepted (${markers} of them latency markers), rows waiting for the disk ` +
        `${pending0} at the start and ${pending} at the end (bounded: ${MAX_ROWS_PER_FLUSH_NOTE}; during the load, peak of ` +
        `the first quarter ${firstPeak}, of the last ${lastPeak}: ${backlog}), client-side send buffer peak ${maxBuffered} bytes`,
      `passes (each every 1 s, warm-up included): judging ${pass("judge")}, writing ${pass("write")}`,
      `V8 heap at the end: ${heapUsed.toFixed(0)} MB used of ${heapTotal.toFixed(0)} MB (the launcher bounds it at 384 MB: WHOHAS_HEAP_MB); the IP limit in force: ${ipLimit < MAX_IPS ? `${ipLimit}, set by memory (limits.maxIps ${MAX_IPS})` : `limits.maxIps ${MAX_IPS}`}`,
      `open incidents at the end: ${open.length === 0 ? "none" : openByType}; request reports too late to judge in order (2 s or more after the request): ${lateReports} of ${reportsSent} (${(lateShare * 100).toFixed(1)} %, at most 1 % to keep up)`,
      `the whohas-hub launcher that bounds the heap (parent process): ${wrapperRss.toFixed(0)} MB peak RSS, ~0 CPU`,
      `RSS over the run: ${rssSamples.length > 0 ? `${Math.min(...rssSamples).toFixed(0)} -> ${Math.max(...rssSamples).toFixed(0)} MB` : "?"}; after answering /api/v1/ips for every IP and the other queries: ${rssAfterQueries.toFixed(0)} MB`,
      `send -> state change seen over SSE (${latencies.length} markers): p50 ${pct(50).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms, max ${(latencies.at(-1) ?? NaN).toFixed(1)} ms`,
      targets(
        target("keeps up", `${accepted}/${sent} accepted, backlog ${backlog}, ${(lateShare * 100).toFixed(1)} % of reports late`, keepsUp),
        target("p99 <= 50 ms", `${pct(99).toFixed(1)} ms`, pct(99) <= 50),
        target("CPU <= 1 core", `${(cpu * 100).toFixed(1)} %`, cpu <= 1),
        target("RSS <= 500 MB", `${(peak + wrapperRss).toFixed(0)} MB, hub and launcher together`, peak + wrapperRss <= 500),
      ),
    ];
    process.stdout.write(rows.join("\n") + "\n");
  } finally {
    await hub?.stop();
    await pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--reference-server") referenceServer(Number(process.argv[3]));
else
  main().catch((e: unknown) => {
    process.stderr.write(`hub-bench: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  });
