// Micro-benchmark of the agent's evidence ring: 10 s of simulated capture at 50,000 ARP frames/s (500,000 frames,
// the ring's 4 MiB default turned over about nine times), pushed as fast as one core goes. The reference, in the same
// run, copies the same frames into a preallocated buffer of the same size: the floor of any byte log. Prints the
// frames/s each sustains, their ratio, the share of a core 50,000 frames/s would cost, and the heap and RSS growth
// over the pushes. Run after a build: node --expose-gc bench/dist/ring-bench.js [frames/s] [seconds]
import { FrameRing } from "@whohas/agent";
import { newArpReply, newArpRequest, tagFrame } from "@whohas/core";

const RATE = Number(process.argv[2] ?? 50_000);
const SECONDS = Number(process.argv[3] ?? 10);
const BOUND = 4 * 1024 * 1024;
const T0 = Date.UTC(2026, 10, 29, 12, 0, 0);
const IFACES = ["eth0", "eth1", "bond0"];
const ROUNDS = 3;

const hex2 = (n: number) => (n & 255).toString(16).padStart(2, "0");

/**
 * traffic is a pool of frames such as a busy segment carries: requests of 200 clients for 300 VIPs, the owners'
 * replies, a few tagged frames; padded to 60 bytes as on the wire, 42 as libpcap delivers the node's own sends.
 */
function traffic(n: number): { frame: Uint8Array; iface: string; vlan: number }[] {
  const pool = [];
  for (let i = 0; i < n; i++) {
    const client = { mac: `02:00:5e:01:${hex2(i >> 8)}:${hex2(i)}`, ip: `10.1.${(i % 200) >> 8}.${(i % 200) + 1}` };
    const vip = `192.0.2.${(i % 300) % 254}`;
    const owner = `02:00:5e:00:00:${hex2(i % 3)}`;
    let frame = i % 2 === 0 ? newArpRequest(client.mac, client.ip, vip) : newArpReply(owner, vip, client.mac, client.ip);
    if (i % 7 === 0) frame = frame.subarray(0, 42);
    const vlan = i % 11 === 0 ? 42 : -1;
    if (vlan > 0) frame = tagFrame(frame, vlan);
    pool.push({ frame, iface: IFACES[i % IFACES.length] ?? "eth0", vlan });
  }
  return pool;
}

const gc = (globalThis as { gc?: () => void }).gc;
function memory(): { heap: number; rss: number } {
  gc?.();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, rss: m.rss };
}

const pool = traffic(4096);
const frames = RATE * SECONDS;
const stepMs = 1000 / RATE;

/** pushRing pushes `frames` frames of simulated time into `ring`; returns the seconds it took. */
function pushRing(ring: FrameRing, t0: number): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < frames; i++) {
    const p = pool[i & 4095];
    if (p !== undefined) ring.push(t0 + i * stepMs, p.iface, p.vlan, p.frame);
  }
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** pushReference copies the same frames into `log` end to end, wrapping at its end. */
function pushReference(log: Uint8Array): number {
  const start = process.hrtime.bigint();
  let at = 0;
  for (let i = 0; i < frames; i++) {
    const p = pool[i & 4095];
    if (p === undefined) continue;
    if (at + p.frame.length > log.length) at = 0;
    log.set(p.frame, at);
    at += p.frame.length;
  }
  return Number(process.hrtime.bigint() - start) / 1e9;
}

function main(): void {
  if (gc === undefined) process.stderr.write("ring-bench: run node with --expose-gc for exact heap figures\n");
  const log = Buffer.alloc(BOUND);
  const ring = new FrameRing({ maxBytes: BOUND, maxAgeMs: 10 * 60_000 });
  // Warm up both (JIT), then measure over a second ring so that memory growth is that of a run, not of the first lap.
  pushRing(ring, T0);
  pushReference(log);
  const before = memory();
  let ringBest = Infinity;
  let refBest = Infinity;
  for (let r = 0; r < ROUNDS; r++) {
    refBest = Math.min(refBest, pushReference(log));
    ringBest = Math.min(ringBest, pushRing(ring, T0 + (r + 1) * SECONDS * 1000));
  }
  const after = memory();
  const ringRate = frames / ringBest;
  const refRate = frames / refBest;
  const mb = (n: number) => (n / 1024 / 1024).toFixed(2);
  process.stdout.write(
    [
      `ring benchmark: ${frames.toLocaleString("en")} ARP frames (${RATE.toLocaleString("en")}/s for ${SECONDS} s simulated), best of ${ROUNDS}`,
      `  ring:      ${Math.round(ringRate).toLocaleString("en")} frames/s (${((ringBest / frames) * 1e9).toFixed(0)} ns/frame)`,
      `  reference: ${Math.round(refRate).toLocaleString("en")} frames/s (${((refBest / frames) * 1e9).toFixed(0)} ns/frame, copy into a preallocated Buffer)`,
      `  ratio:     ring takes ${(refRate / ringRate).toFixed(2)}x the reference's time per frame`,
      `  at ${RATE.toLocaleString("en")} frames/s the ring costs ${((RATE / ringRate) * 100).toFixed(2)}% of one core`,
      `  held:      ${ring.frames.toLocaleString("en")} frames, ${mb(ring.bytes)} of ${mb(ring.bound)} MiB; evicted ${ring.evicted.toLocaleString("en")}`,
      `  growth over ${(ROUNDS * frames).toLocaleString("en")} pushes: heap ${mb(after.heap - before.heap)} MiB, RSS ${mb(after.rss - before.rss)} MiB${gc === undefined ? " (no --expose-gc)" : ""}`,
      "",
    ].join("\n"),
  );
}

main();
