// Benchmark of the agent: a node of the lab receives 20,000 ARP frames/s for 60 s while its agent captures;
// tcpdump -w /dev/null captures the same interface in the same run as the reference. Prints CPU (share of one core),
// peak RSS and libpcap's kernel drops; then the agent's idle CPU, and its evidence ring's bytes (sampled each second
// of the flood) against its bound. `node agent-bench.js RATE SECONDS` (default 20000 60). Asserts nothing.
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { collectGarbage, inNs, requireRoot, startStack } from "@whohas/lab";
import { TICKS, cpuTicks, rssMb } from "./sim.js";
import { cells, target, targets } from "./report.js";

/** The widths of the table's columns. */
const WIDTHS = [22, 12, 10, 13, 9];

/** FIND_MS: the agent is looked for this long after the stack has started. */
const FIND_MS = 3000;
/** IDLE_SETTLE_MS / IDLE_MS: idle CPU is measured this long after the agent is found, over this long. */
const IDLE_SETTLE_MS = 17_000;
const IDLE_MS = 30_000;

const FLOOD = fileURLToPath(new URL("./arp-flood.js", import.meta.url));
/** pidsIn lists the processes named `comm` running inside a namespace. */
function pidsIn(ns: string, comm: string): number[] {
  const pids = execFileSync("ip", ["netns", "pids", ns], { encoding: "utf8" })
    .split("\n")
    .map(Number)
    .filter((p) => p > 0);
  return pids.filter((p) => readFileSync(`/proc/${p}/comm`, "utf8").trim() === comm);
}
async function metric(ns: string, name: string): Promise<number> {
  const text = await inNs(
    ns,
    process.execPath,
    "-e",
    'fetch("http://127.0.0.1:9472/metrics").then(r=>r.text()).then(t=>process.stdout.write(t))',
  );
  return text
    .split("\n")
    .filter((l) => l.startsWith(name))
    .reduce((n, l) => n + Number(l.split(" ").pop()), 0);
}

async function main(): Promise<void> {
  const rate = Number(process.argv[2] ?? 20_000);
  const seconds = Number(process.argv[3] ?? 60);
  await requireRoot();
  await collectGarbage();
  // One node, a client that asks once a minute (quiet), 300 VIPs on kube-ipvs0.
  const stack = await startStack({ nodes: 1, vips: 300, requestIntervalMs: 60_000 });
  try {
    const node = stack.lab.nodes[0];
    if (node === undefined) throw new Error("no node");
    await new Promise((r) => setTimeout(r, FIND_MS));
    const [agent] = pidsIn(node.ns, "node");
    if (agent === undefined) throw new Error("agent process not found");

    // Idle: nothing but the lab's background, once the agent has settled. Its first 15 s or so cost more (compiling
    // its code, the first facts and inventory, the first drains), up to 2.4 % in 5 s here; that is start-up, not idle.
    await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
    const idle0 = cpuTicks(agent);
    // Start-up, reported apart: every CPU tick the agent used from its start to the idle window.
    const startupCpuSeconds = idle0 / TICKS;
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idleCpu = (cpuTicks(agent) - idle0) / TICKS / (IDLE_MS / 1000);

    const dump = spawn("ip", ["netns", "exec", node.ns, "tcpdump", "-i", "eth0", "-w", "/dev/null"], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let dumpErr = "";
    dump.stderr.on("data", (d: Buffer) => (dumpErr += d.toString()));
    await new Promise((r) => setTimeout(r, 1000));
    const [tcpdump] = pidsIn(node.ns, "tcpdump");
    if (tcpdump === undefined) throw new Error("tcpdump did not start");
    const drops0 = await metric(node.ns, "whohas_agent_kernel_dropped_packets");
    // The lab's client falls silent: every frame the agent counts from here on is the flood's.
    stack.pauseRequests();
    const frames0 = await metric(node.ns, "whohas_agent_frames_total");
    const a0 = cpuTicks(agent);
    const t0 = cpuTicks(tcpdump);
    const evicted0 = await metric(node.ns, "whohas_agent_evidence_evicted_total");
    // The ring's size each second of the flood: it must never pass its bound.
    let ringPeak = 0;
    const sampler = setInterval(() => {
      void metric(node.ns, "whohas_agent_evidence_bytes ").then(
        (b) => (ringPeak = Math.max(ringPeak, b)),
        () => undefined,
      );
    }, 1000);
    const started = Date.now();
    const flood = await inNs(stack.lab.client.ns, process.execPath, FLOOD, "eth0", String(rate), String(seconds));
    const sent = JSON.parse(flood) as { sent: number; rate: number };
    clearInterval(sampler);
    // CPU over the flood's own sending time (its start-up excluded): the agent's work per second of flood.
    const wall = (Date.now() - started) / 1000;
    const flooding = sent.rate > 0 ? sent.sent / sent.rate : wall;
    const agentCpu = (cpuTicks(agent) - a0) / TICKS / flooding;
    const dumpCpu = (cpuTicks(tcpdump) - t0) / TICKS / flooding;
    const dumpRss = rssMb(tcpdump, "VmHWM");
    await new Promise((r) => setTimeout(r, 1500));
    const frames = (await metric(node.ns, "whohas_agent_frames_total")) - frames0;
    const drops = (await metric(node.ns, "whohas_agent_kernel_dropped_packets")) - drops0;
    const ringBound = await metric(node.ns, "whohas_agent_evidence_bound_bytes");
    ringPeak = Math.max(ringPeak, await metric(node.ns, "whohas_agent_evidence_bytes "));
    const evicted = (await metric(node.ns, "whohas_agent_evidence_evicted_total")) - evicted0;
    dump.kill("SIGINT");
    await new Promise((r) => dump.once("exit", r));
    const dumpDrops = /(\d+) packets dropped by kernel/.exec(dumpErr)?.[1] ?? "?";
    // Every frame sent must be counted, and nothing else was on the wire (nobody answers the flood).
    const countedAll = frames === sent.sent;
    const rows = [
      `agent benchmark: ${sent.sent} ARP frames at ${Math.round(sent.rate)}/s for ${flooding.toFixed(1)} s into one lab node holding 300 VIPs (the lab's client silent meanwhile)`,
      "",
      cells(WIDTHS, "", "CPU (1 core)", "peak RSS", "kernel drops", "frames"),
      cells(
        WIDTHS,
        "whohas agent",
        `${(agentCpu * 100).toFixed(1)} %`,
        `${rssMb(agent, "VmHWM").toFixed(0)} MB`,
        String(drops),
        String(frames),
      ),
      cells(WIDTHS, "tcpdump -w /dev/null", `${(dumpCpu * 100).toFixed(1)} %`, `${dumpRss.toFixed(0)} MB`, dumpDrops),
      "",
      `agent start-up: ${startupCpuSeconds.toFixed(2)} s of CPU in its first ${(FIND_MS + IDLE_SETTLE_MS) / 1000} s or so`,
      `agent idle CPU (${IDLE_MS / 1000} s, no flood, from ${(FIND_MS + IDLE_SETTLE_MS) / 1000} s after the stack started): ${(idleCpu * 100).toFixed(2)} %`,
      `frames counted by the agent: ${frames} of ${sent.sent} sent (${countedAll ? "all" : "NOT all"})`,
      `evidence ring: peak ${ringPeak} bytes of its ${ringBound}-byte bound (sampled each second), ${evicted} frames evicted for room or age`,
      targets(
        target("every frame counted", `${frames} of ${sent.sent}`, countedAll),
        target("zero drops", String(drops), drops === 0),
        target("CPU <= 30 %", `${(agentCpu * 100).toFixed(1)} %`, agentCpu <= 0.3),
        target("RSS <= 120 MB", `${rssMb(agent, "VmHWM").toFixed(0)} MB`, rssMb(agent, "VmHWM") <= 120),
        target("idle <= 1 %", `${(idleCpu * 100).toFixed(2)} %`, idleCpu <= 0.01),
        target("ring within its bound", "", ringPeak <= ringBound && ringBound > 0),
      ),
    ];
    process.stdout.write(rows.join("\n") + "\n");
    process.stdout.write(
      JSON.stringify({
        bench: "agent",
        sent: sent.sent,
        rate: sent.rate,
        agentCpu,
        agentRssMb: rssMb(agent, "VmHWM"),
        kernelDrops: drops,
        frames,
        tcpdumpCpu: dumpCpu,
        idleCpu,
        idleFromSeconds: (FIND_MS + IDLE_SETTLE_MS) / 1000,
        startupCpuSeconds,
        ringPeakBytes: ringPeak,
        ringBoundBytes: ringBound,
        ringEvicted: evicted,
      }) + "\n",
    );
  } finally {
    await stack.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${(e as Error).message}\n`);
  process.exit(1);
});
