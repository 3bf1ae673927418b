// Benchmark of `whohas analyze`: frames per second end to end on one core and peak RSS, against tools reading the
// same file in the same run: `arp-count` (bench/ref, C and libpcap: reads and counts requests and replies per IP and
// MAC, the same counting without the judging: the floor), `tcpdump -nn -r` and `tshark -T fields` (which format
// every frame instead), and `arp-join` (bench/src/arp-join.ts: the per-request work in plain JavaScript, without
// verdicts: how close whohas comes to what JavaScript can do at all). Prints figures; asserts nothing.
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, existsSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { ISSUE_SHAPE, generateCapture, type CaptureShape } from "./generate.js";
import { target, targets } from "./report.js";

const AGENT_MAIN = fileURLToPath(new URL("../../apps/agent/dist/main.js", import.meta.url));
const RSS_HOOK = fileURLToPath(new URL("../src/rss-hook.mjs", import.meta.url));
const ARP_COUNT_C = fileURLToPath(new URL("../ref/arp-count.c", import.meta.url));
const ARP_JOIN = fileURLToPath(new URL("./arp-join.js", import.meta.url));
/** ROUNDS: turns of whohas and of the JavaScript floor; each keeps its fastest. */
const ROUNDS = 3;

async function ensureCapture(shape: CaptureShape): Promise<string> {
  const path = `${tmpdir()}/whohas-bench-${shape.frames}-${shape.vips}-${shape.clients}-${shape.responders}.pcap`;
  const expected = 24 + shape.frames * (16 + 60);
  if (existsSync(path) && statSync(path).size === expected) return path;
  process.stderr.write(`generating ${path} ...\n`);
  const out = createWriteStream(path);
  for (const chunk of generateCapture(shape)) {
    if (!out.write(chunk)) await new Promise<void>((r) => out.once("drain", () => r()));
  }
  await new Promise<void>((resolve, reject) => out.end((e?: Error | null) => (e ? reject(e) : resolve())));
  return path;
}

interface Run {
  readonly tool: string;
  readonly seconds: number;
  readonly maxRssMb: number | null;
  readonly exit: number | null;
}

/** timed runs a command pinned to CPU 0 (one core for every tool) and times it; stdout is kept only if asked. */
function timed(tool: string, cmd: string, args: string[], keepStdout = false): Promise<Run & { stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    // GNU time reports each tool's peak RSS the same way (node's own hook says it too).
    const time = existsSync("/usr/bin/time") ? ["/usr/bin/time", "-f", "whohas-bench-maxrss-kb %M"] : [];
    const child = spawn("taskset", ["-c", "0", ...time, cmd, ...args], { stdio: ["ignore", keepStdout ? "pipe" : "ignore", "pipe"] });
    let stderr = "";
    let stdout = "";
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const kbs = [...stderr.matchAll(/whohas-bench-maxrss-kb (\d+)/g)].map((m) => Number(m[1]));
      resolve({ tool, seconds, maxRssMb: kbs.length === 0 ? null : Math.max(...kbs) / 1024, exit: code, stderr, stdout });
    });
  });
}

function has(cmd: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;
}

async function main(): Promise<void> {
  const frames = Number(process.argv[2] ?? ISSUE_SHAPE.frames);
  const shape = { ...ISSUE_SHAPE, frames };
  const file = await ensureCapture(shape);
  const runs: Run[] = [];
  // whohas and the JavaScript floor run in turns, ROUNDS times each, and each keeps its fastest run: this machine's
  // speed drifts by more than their difference within a minute, and turns put both through the same drift.
  let whohas: Awaited<ReturnType<typeof timed>> | null = null;
  let floor: Awaited<ReturnType<typeof timed>> | null = null;
  for (let round = 0; round < ROUNDS; round++) {
    const w = await timed("whohas analyze", process.execPath, ["--import", RSS_HOOK, AGENT_MAIN, "analyze", "--json", file], true);
    if (w.exit !== 1) throw new Error(`whohas analyze exited ${w.exit} (expected 1: several responders):\n${w.stderr}`);
    if (whohas === null || w.seconds < whohas.seconds) whohas = w;
    const f = await timed("arp-join (JS floor)", process.execPath, [ARP_JOIN, file], true);
    if (f.exit !== 0) throw new Error(`arp-join exited ${f.exit}:\n${f.stderr}`);
    if (floor === null || f.seconds < floor.seconds) floor = f;
  }
  if (whohas === null || floor === null) throw new Error("no rounds ran");
  // A fast wrong answer is no answer: every frame must have been read, every VIP seen with all its responders.
  const report = JSON.parse(whohas.stdout) as {
    frames: number;
    ips: { ip: string; requests: number; responders: { mac: string }[]; findings: { type: string }[] }[];
  };
  if (report.frames !== frames || report.ips.length !== Math.min(shape.vips, Math.ceil(frames / (1 + shape.responders) / shape.clients))) {
    throw new Error(`whohas analyze read ${report.frames} frames and ${report.ips.length} IPs, expected ${frames} frames`);
  }
  if (report.ips.some((ip) => ip.responders.length !== shape.responders)) throw new Error("whohas analyze missed responders");
  runs.push(whohas);
  // The floor must have joined the same requests and answers: per IP, as many requests, the same MACs, and requests
  // answered by several MACs exactly where whohas found several responders.
  const joined = new Map(
    floor.stdout
      .trim()
      .split("\n")
      .map((line) => {
        const [ip = "", requests = "", multi = "", macs = ""] = line.split(" ");
        return [ip, { requests: Number(requests), multi: Number(multi), macs: macs.split(",").filter((m) => m !== "") }] as const;
      }),
  );
  const floorDiffers = report.ips.filter((ip) => {
    const f = joined.get(ip.ip);
    const multi = ip.findings.some((x) => x.type === "multi-responder");
    if (f === undefined) return true;
    return (
      f.requests !== ip.requests ||
      f.multi > 0 !== multi ||
      f.macs.join() !==
        ip.responders
          .map((r) => r.mac)
          .sort()
          .join()
    );
  });
  if (floorDiffers.length > 0 || joined.size !== report.ips.length)
    throw new Error(`whohas and arp-join disagree on ${floorDiffers.map((x) => x.ip).join(", ") || "the set of IPs"}`);
  runs.push(floor);
  // The C reference, built here from bench/ref (libpcap's headers are part of the set-up): without it there is no
  // figure to compare with, so the run fails.
  const arpCount = `${tmpdir()}/whohas-arp-count`;
  const built = has("cc") ? spawnSync("cc", ["-O2", "-o", arpCount, ARP_COUNT_C, "-lpcap"], { encoding: "utf8" }) : null;
  if (built?.status !== 0)
    throw new Error(`cannot build the C reference (cc and libpcap-dev, installed by scripts/setup.sh): ${built?.stderr ?? "no cc"}`);
  const ref = await timed("arp-count (C)", arpCount, [file], true);
  // It must have read every frame and found the same responders per VIP as whohas.
  if (!new RegExp(`^arp-count: ${frames} frames`, "m").test(ref.stderr))
    throw new Error(`arp-count read a different capture:\n${ref.stderr}`);
  const answeredBy = new Map<string, Set<string>>();
  for (const line of ref.stdout.split("\n")) {
    const [ip = "", mac = "", op = ""] = line.split(" ");
    if (op !== "op2") continue;
    let macs = answeredBy.get(ip);
    if (macs === undefined) answeredBy.set(ip, (macs = new Set()));
    macs.add(mac);
  }
  const differ = report.ips.filter((ip) => {
    const c = answeredBy.get(ip.ip) ?? new Set<string>();
    return c.size !== ip.responders.length || ip.responders.some((r) => !c.has(r.mac));
  });
  if (differ.length > 0 || answeredBy.size !== report.ips.length)
    throw new Error(`whohas and arp-count disagree on the responders of ${differ.map((x) => x.ip).join(", ") || "the set of IPs"}`);
  runs.push(ref);
  if (has("tcpdump")) runs.push(await timed("tcpdump -nn -r", "tcpdump", ["-nn", "-r", file]));
  if (has("tshark"))
    runs.push(await timed("tshark -T fields", "tshark", ["-r", file, "-T", "fields", "-e", "arp.src.hw_mac", "-e", "arp.src.proto_ipv4"]));

  const rate = (r: Run) => frames / r.seconds;
  const lines = [
    `whohas analyze benchmark: ${frames} ARP frames (${shape.vips} VIPs, ${shape.clients} clients, ${shape.responders} responders), one core (taskset -c 0)`,
    `file: ${file} (${(statSync(file).size / 1e6).toFixed(0)} MB)`,
    "",
    `${"tool".padEnd(20)} ${"seconds".padStart(8)} ${"frames/s".padStart(12)} ${"peak RSS".padStart(10)}  whohas is`,
  ];
  for (const r of runs) {
    const ratio =
      r === whohas
        ? ""
        : r.seconds >= whohas.seconds
          ? `${(r.seconds / whohas.seconds).toFixed(1)}x faster`
          : `${(whohas.seconds / r.seconds).toFixed(1)}x slower`;
    lines.push(
      `${r.tool.padEnd(20)} ${r.seconds.toFixed(2).padStart(8)} ${(rate(r) / 1e6).toFixed(2).padStart(10)} M ${r.maxRssMb === null ? "".padStart(10) : `${r.maxRssMb.toFixed(0)} MB`.padStart(10)}  ${ratio}`,
    );
  }
  lines.push(
    "",
    targets(
      target(">= 2.00 M frames/s", `${(rate(whohas) / 1e6).toFixed(2)} M`, rate(whohas) >= 2e6),
      target("peak RSS < 200 MB", `${(whohas.maxRssMb ?? NaN).toFixed(0)} MB`, (whohas.maxRssMb ?? Infinity) < 200),
    ),
  );
  process.stdout.write(lines.join("\n") + "\n");
  process.stdout.write(
    JSON.stringify({
      bench: "analyze",
      frames,
      runs: runs.map((r) => ({ tool: r.tool, seconds: r.seconds, framesPerSecond: rate(r), maxRssMb: r.maxRssMb })),
    }) + "\n",
  );
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${(e as Error).message}\n`);
  process.exit(1);
});
