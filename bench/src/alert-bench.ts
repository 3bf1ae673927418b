// Benchmark of detection latency: in the lab, from the first ARP reply of a second responder on the wire to
// the webhook arriving at a receiver, with group_wait 0. Each trial makes a node that did not hold an IP start
// answering for it (its kube-ipvs0 gets the address, as IPVS does for a new Service): the reply's time comes from
// tcpdump in the client's namespace (kernel timestamps), the arrival from the receiver on loopback (same clock).
// The same trials are timed to the state change a dashboard sees: the IP's live subscription (tRPC over SSE, opened
// before the trial) pushing multi-responder. The reference in the same run is the agent-to-hub path alone: the same
// trials timed to the state change seen by the read API, polled every 20 ms. Asserts nothing; prints p50 / p99 / max.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { REQUESTER, collectGarbage, inNs, listening, requireRoot, startStack, startTcpdump } from "@whohas/lab";
import { target, targets } from "./report.js";

const TRIALS = Number(process.argv[2] ?? 50);
/** Trial IPs: on the lab's link, outside the stack's own VIPs (198.18.0.200+). */
const trialIp = (k: number) => `198.18.0.${100 + k}`;

/**
 * watchState subscribes to one IP's live view as the dashboard does (tRPC over SSE) and resolves with the moment it
 * first says multi-responder; the subscription ends then, or when `signal` aborts.
 */
async function watchState(base: string, token: string, ip: string, signal: AbortSignal): Promise<number> {
  const input = encodeURIComponent(JSON.stringify({ ip }));
  const res = await fetch(`${base}/api/trpc/ips.byIpLive?input=${input}`, {
    signal,
    headers: { accept: "text/event-stream", authorization: `Bearer ${token}` },
  });
  if (!res.ok || res.body === null) throw new Error(`subscription to ${ip}: HTTP ${res.status}`);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`subscription to ${ip} ended`);
    buf += dec.decode(value, { stream: true });
    let i: number;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const data = buf
        .slice(0, i)
        .split("\n")
        .find((l) => l.startsWith("data: "));
      buf = buf.slice(i + 2);
      if (data?.includes('"state":"multi-responder"') === true) {
        const at = Date.now();
        void reader.cancel();
        return at;
      }
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? Number.NaN;

async function main(): Promise<void> {
  await requireRoot();
  await collectGarbage();
  const arrivals = new Map<string, number>();
  const receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const at = Date.now();
      const n = JSON.parse(body) as { ip: string; alerts: { type: string; status: string }[] };
      if (n.alerts.some((a) => a.type === "multi-responder" && a.status === "firing") && !arrivals.has(n.ip)) arrivals.set(n.ip, at);
      res.writeHead(200).end("ok");
    });
  });
  receiver.listen(0, "127.0.0.1");
  await new Promise((r) => receiver.once("listening", r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const stack = await startStack({
    nodes: 2,
    vips: 1,
    requestIntervalMs: 1000,
    hubConfig: {
      // Latency, not the caps: 50 trials within a minute pass the receiver's default 30 a minute.
      alerting: { groupWait: 0, maxPerIpPerHour: 1000, maxPerMinute: 1000, allowHosts: ["127.0.0.1"] },
      webhooks: [{ name: "bench", url, format: "generic" }],
      log: { level: "warn" },
    },
  });
  const [first, second] = stack.lab.nodes;
  if (first === undefined || second === undefined) throw new Error("two nodes needed");
  const ips = Array.from({ length: TRIALS }, (_, k) => trialIp(k));
  const wire = new Map<string, number>();
  const children: ReturnType<typeof spawn>[] = [];
  try {
    // Every trial IP is held by the first node only: one responder, no incident.
    for (const ip of ips) await inNs(first.ns, "ip", "addr", "add", `${ip}/32`, "dev", "kube-ipvs0");
    // A client asking for each of them every 100 ms, and tcpdump noting the second node's replies.
    children.push(
      spawn("ip", ["netns", "exec", stack.lab.client.ns, process.execPath, REQUESTER, "eth0", stack.lab.client.ip, "100", ...ips], {
        stdio: "ignore",
      }),
    );
    const dump = startTcpdump(stack.lab.client.ns, ["-i", "eth0", "-nn", "-tt", "-l", "-Q", "in", `arp and ether src ${second.mac}`]);
    children.push(dump);
    let buf = "";
    dump.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const m = /^(\d+\.\d+) ARP, Reply (\S+) is-at/.exec(line);
        if (m?.[1] !== undefined && m[2] !== undefined && !wire.has(m[2])) wire.set(m[2], Number(m[1]) * 1000);
      }
    });
    await listening(dump);
    await sleep(3000); // the hub has seen every trial IP with its one responder

    const stateAt = new Map<string, number>();
    const sseAt = new Map<string, number>();
    const lat: number[] = [];
    const sseLat: number[] = [];
    const apiLat: number[] = [];
    for (const ip of ips) {
      const ac = new AbortController();
      const sse = watchState(stack.url, stack.viewerToken, ip, ac.signal).then(
        (at) => sseAt.set(ip, at),
        () => undefined,
      );
      // The subscription's first event (the IP as it is) has come once the hub has it open: give it a moment.
      await sleep(200);
      await inNs(second.ns, "ip", "addr", "add", `${ip}/32`, "dev", "kube-ipvs0");
      const start = Date.now();
      // Until every end is known: the webhook, the SSE push, the read API's state, and tcpdump's line for the reply
      // (its output may come after): a trial missing one would bias the figures, so it fails the run instead.
      while (!(arrivals.has(ip) && wire.has(ip) && stateAt.has(ip) && sseAt.has(ip)) && Date.now() - start < 15_000) {
        if (!stateAt.has(ip)) {
          const res = await fetch(`${stack.url}/api/v1/ips/${ip}`, { headers: { authorization: `Bearer ${stack.viewerToken}` } });
          if (res.ok && ((await res.json()) as { state: string }).state === "multi-responder") stateAt.set(ip, Date.now());
        }
        await sleep(20);
      }
      ac.abort();
      await sse;
      const t0 = wire.get(ip);
      const t1 = arrivals.get(ip);
      const ts = stateAt.get(ip);
      const tsse = sseAt.get(ip);
      if (t0 === undefined || t1 === undefined || ts === undefined || tsse === undefined)
        throw new Error(
          `trial ${ip}: ${t0 === undefined ? "no reply of the second node captured" : t1 === undefined ? "no webhook within 15 s" : ts === undefined ? "the read API never said multi-responder within 15 s" : "the live subscription never pushed multi-responder within 15 s"}`,
        );
      lat.push(t1 - t0);
      sseLat.push(tsse - t0);
      apiLat.push(ts - t0);
      await sleep(300);
    }
    const fmt = (xs: number[]) =>
      `p50 ${pct(xs, 0.5).toFixed(0)} ms, p99 ${pct(xs, 0.99).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms (${xs.length} trials)`;
    process.stdout.write(
      [
        `detection latency benchmark: ${TRIALS} trials in the lab, 2 nodes, group_wait 0, client asking every 100 ms`,
        "",
        `first reply of the second responder on the wire -> webhook at the receiver: ${fmt(lat)}`,
        `first reply of the second responder on the wire -> the IP's live subscription (SSE) pushes multi-responder: ${fmt(sseLat)}`,
        `reference, same trials -> the read API shows the IP as multi-responder (polled every 20 ms): ${fmt(apiLat)}`,
        `ratio of p50s to the reference: webhook ${(pct(lat, 0.5) / pct(apiLat, 0.5)).toFixed(2)}, SSE ${(pct(sseLat, 0.5) / pct(apiLat, 0.5)).toFixed(2)}`,
        "",
        targets(target("wire -> webhook p99 <= 250 ms", `${pct(lat, 0.99).toFixed(0)} ms`, pct(lat, 0.99) <= 250)),
        targets(target("wire -> SSE state change p99 <= 100 ms", `${pct(sseLat, 0.99).toFixed(0)} ms`, pct(sseLat, 0.99) <= 100)),
      ].join("\n") + "\n",
    );
  } finally {
    for (const c of children) c.kill("SIGTERM");
    await stack.stop();
    receiver.close();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`alert-bench: ${(e as Error).message}\n`);
  process.exit(1);
});
