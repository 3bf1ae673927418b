// Benchmark of the strictARP fix's verification: the lab with 300 LoadBalancer IPs (those past the 56th in
// 198.19.0.0/16) on three nodes, the fix applied as an operator through the hub's dashboard API. The figure is the
// run's own probe step, on the hub's clock; tcpdump on the client's link records every ARP request the nodes send for
// the IPs, for the rate each IP is asked at. The reference in the same run: Thomas Habets' arping, 300 of them at once
// from one node, each asking one IP as many times at its default one a second: what an operator would script to ask
// every IP in parallel by hand, timed and recorded on the wire the same way (the floor a parallel check cannot beat,
// and how it sends). The scheme before (six IPs at a time, actions.probeDuration each) is computed from its rounds:
// run, it takes fifty minutes. `node verify-bench.js [VIPS] [NODES]` (default 300 3). Asserts nothing.
import { spawn } from "node:child_process";
import { collectGarbage, listening, requireRoot, startStack, startTcpdump, type Stack } from "@whohas/lab";
import { cells, target, targets } from "./report.js";

/** ROUNDS: the requests each prober sends each IP during verification (the hub's VERIFY_ROUNDS). */
const ROUNDS = 10;
/** OLD_BATCH / OLD_PROBE_S: the verification before: six IPs at a time, each probed for actions.probeDuration (60 s). */
const OLD_BATCH = 6;
const OLD_PROBE_S = 60;

interface Run {
  result: string;
  message: string;
  steps: { name: string; state: string; detail: string; startedAt: number | null; endedAt: number | null }[];
  checked: { ip: string; problem: string | null; requests: number }[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** operator signs in as the lab's operator, as the dashboard does: the session cookie and the CSRF token. */
async function operator(stack: Stack) {
  const login = await fetch(`${stack.url}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: stack.users.operator.name, password: stack.users.operator.password }),
  });
  if (!login.ok) throw new Error(`sign-in: HTTP ${login.status}`);
  const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const { csrf } = (await (await fetch(`${stack.url}/api/auth/me`, { headers: { cookie } })).json()) as { csrf: string };
  const headers = { cookie, "x-whohas-csrf": csrf, "content-type": "application/json" };
  return {
    query: async <T>(path: string): Promise<T> => {
      const res = await fetch(`${stack.url}/api/trpc/${path}`, { headers });
      if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
      return ((await res.json()) as { result: { data: T } }).result.data;
    },
    mutate: async (path: string, input: unknown) => {
      const res = await fetch(`${stack.url}/api/trpc/${path}`, { method: "POST", headers, body: JSON.stringify(input) });
      if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
    },
    /** run reads the current run: the first message of the live subscription. */
    run: async (): Promise<Run | null> => {
      const ac = new AbortController();
      const res = await fetch(`${stack.url}/api/trpc/remediation.live`, {
        headers: { ...headers, accept: "text/event-stream" },
        signal: ac.signal,
      });
      const reader = res.body?.getReader();
      let text = "";
      for (;;) {
        const chunk = await reader?.read();
        if (chunk === undefined || chunk.done) return null;
        text += new TextDecoder().decode(chunk.value);
        for (const block of text.split("\n\n").slice(0, -1)) {
          const data = /^event:/m.test(block) ? undefined : /^data: (.*)$/m.exec(block)?.[1];
          if (data === undefined) continue;
          ac.abort();
          return JSON.parse(data) as Run | null;
        }
      }
    },
  };
}

/** A Request is one ARP request on the wire: when (ms), who asked (its sender IP), for what. */
interface Request {
  readonly t: number;
  readonly asker: string;
  readonly ip: string;
}

/** WireFigures says how often each IP was asked, from each asker and from all, within a window of time. */
function wireFigures(requests: readonly Request[], askers: ReadonlySet<string>, ips: ReadonlySet<string>, from: number, to: number) {
  const mine = requests.filter((r) => r.t >= from && r.t <= to && askers.has(r.asker) && ips.has(r.ip));
  const byPair = new Map<string, number[]>();
  const byIp = new Map<string, number[]>();
  for (const r of mine) {
    byPair.set(`${r.asker} ${r.ip}`, [...(byPair.get(`${r.asker} ${r.ip}`) ?? []), r.t]);
    byIp.set(r.ip, [...(byIp.get(r.ip) ?? []), r.t]);
  }
  /** most is the largest number of `times` (sorted) within any window [t, t + ms). */
  const most = (times: readonly number[], ms: number) => {
    let best = 0;
    for (let i = 0, j = 0; i < times.length; i++) {
      while ((times[j] ?? Infinity) < (times[i] ?? 0) - ms + 1e-6) j++;
      best = Math.max(best, i - j + 1);
    }
    return best;
  };
  const pairs = [...byPair.values()].map((t) => t.sort((a, b) => a - b));
  const gaps = pairs.flatMap((t) => t.slice(1).map((x, i) => x - (t[i] ?? 0)));
  const perAsker = new Map<string, number[]>();
  for (const r of mine) perAsker.set(r.asker, [...(perAsker.get(r.asker) ?? []), r.t]);
  const times = mine.map((r) => r.t);
  return {
    requests: mine.length,
    /** The first and last request, in ms from `from`. */
    firstMs: Math.min(...times) - from,
    lastMs: Math.max(...times) - from,
    pairs: pairs.length,
    perPair: [Math.min(...pairs.map((t) => t.length)), Math.max(...pairs.map((t) => t.length))],
    minGapMs: gaps.length === 0 ? Number.NaN : Math.min(...gaps),
    /** The most requests one asker sent for one IP within any second. */
    perSecondPerAsker: Math.max(...pairs.map((t) => most(t, 1000))),
    /** The most requests for one IP within any second, all askers together. */
    perSecondPerIp: Math.max(
      ...[...byIp.values()].map((t) =>
        most(
          t.sort((a, b) => a - b),
          1000,
        ),
      ),
    ),
    /** The most requests one asker sent within any 10 ms (all IPs): a burst or a spread. */
    per10Ms: Math.max(
      ...[...perAsker.values()].map((t) =>
        most(
          t.sort((a, b) => a - b),
          10,
        ),
      ),
    ),
  };
}

/** The widths of the table's columns. */
const WIDTHS = [44, 8, 9, 13, 10, 15, 9, 10];

/** wireCells are the table's cells of what one sender put on the wire, after its time. */
function wireCells(f: ReturnType<typeof wireFigures>): string[] {
  return [
    String(f.requests),
    f.perPair.join("-"),
    `${f.minGapMs.toFixed(1)} ms`,
    String(f.perSecondPerAsker),
    String(f.perSecondPerIp),
    String(f.per10Ms),
  ];
}

/** arpingAll runs Habets' arping for every IP at once in `ns`, `count` requests each; resolves with its start and end. */
async function arpingAll(ns: string, ips: readonly string[], count: number): Promise<{ from: number; to: number; answered: number }> {
  const script = `for ip in ${ips.join(" ")}; do arping -c ${count} -i eth0 $ip | grep -c 'bytes from' & done; wait`;
  const from = Date.now();
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn("ip", ["netns", "exec", ns, "sh", "-c", script], { stdio: ["ignore", "pipe", "pipe"] });
    let text = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (text += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("exit", (code) => (code === 0 ? resolve(text) : reject(new Error(`arping: exit ${code}: ${err.slice(0, 300)}`))));
  });
  const to = Date.now();
  const answered = out
    .split("\n")
    .filter((l) => l !== "")
    .reduce((n, l) => n + Number(l), 0);
  return { from, to, answered };
}

async function main(): Promise<void> {
  const vips = Number(process.argv[2] ?? 300);
  const nodes = Number(process.argv[3] ?? 3);
  await requireRoot();
  await collectGarbage();
  const started = Date.now();
  const stack = await startStack({ nodes, vips, kube: true, cluster: true });
  try {
    process.stderr.write(`verify-bench: lab of ${nodes} nodes and ${vips} VIPs up in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
    const ips = new Set(stack.lab.vips);
    // The hub knows every IP's Service and owner before the fix runs (it verifies those).
    for (const end = Date.now() + 120_000; ; await sleep(1000)) {
      const res = await fetch(`${stack.url}/api/v1/ips`, { headers: { authorization: `Bearer ${stack.viewerToken}` } });
      const rows = res.ok ? ((await res.json()) as { ip: string; expectedOwner: unknown }[]) : [];
      if (rows.filter((r) => ips.has(r.ip) && r.expectedOwner !== null).length === vips) break;
      if (Date.now() > end) throw new Error(`the hub did not know all ${vips} IPs and their owners within 2 min`);
    }
    const dump = startTcpdump(stack.lab.client.ns, ["-i", "eth0", "-nn", "-tt", "-l", "arp and arp[6:2] = 1"]);
    const requests: Request[] = [];
    let buf = "";
    dump.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        const m = /^(\d+\.\d+) ARP, Request who-has (\S+) tell (\S+),/.exec(buf.slice(0, i));
        buf = buf.slice(i + 1);
        if (m !== null) requests.push({ t: Number(m[1]) * 1000, ip: m[2] ?? "", asker: m[3] ?? "" });
      }
    });
    await listening(dump);
    const op = await operator(stack);
    const preview = await op.query<{ resourceVersion: string }>("remediation.preview");
    await op.mutate("remediation.apply", { resourceVersion: preview.resourceVersion });
    let run: Run | null = null;
    for (const end = Date.now() + 600_000; Date.now() < end; await sleep(1000)) {
      run = await op.run();
      if (run !== null && run.result !== "running") break;
    }
    const probe = run?.steps.find((s) => s.name === "probe");
    if (run === null || probe === undefined || probe.startedAt === null || probe.endedAt === null)
      throw new Error(`the fix did not reach its probe step: ${run?.result ?? "no run"} ${run?.message ?? ""}`);
    const verifyS = (probe.endedAt - probe.startedAt) / 1000;
    const verified = run.result === "verified";
    const problems = run.checked.filter((c) => c.problem !== null);

    const node1 = stack.lab.nodes[0];
    if (node1 === undefined) throw new Error("no node");
    await sleep(2000);
    const ref = await arpingAll(node1.ns, stack.lab.vips, ROUNDS);
    await sleep(1500);
    dump.kill("SIGINT");
    await new Promise((r) => dump.once("exit", r));

    const nodeIps = new Set(stack.lab.nodes.map((n) => n.ip));
    const ours = wireFigures(requests, nodeIps, ips, probe.startedAt, probe.endedAt);
    const theirs = wireFigures(requests, new Set([node1.ip]), ips, ref.from, ref.to + 1000);
    const oldS = Math.ceil(vips / OLD_BATCH) * OLD_PROBE_S;
    const oldRoundsS = Math.ceil(vips / OLD_BATCH) * ROUNDS;
    const rateMet = ours.perSecondPerAsker <= 1 && ours.perPair[1] === ROUNDS;
    const rows = [
      `fix verification benchmark: ${vips} LoadBalancer IPs on ${nodes} lab nodes, the strictARP fix applied through the hub's API (run: ${run.result})`,
      "",
      cells(WIDTHS, "", "time", "requests", "per IP+asker", "min gap", "max/s IP+asker", "max/s IP", "max/10 ms"),
      cells(WIDTHS, "whohas verification (2 probers per IP)", `${verifyS.toFixed(1)} s`, ...wireCells(ours)),
      cells(WIDTHS, `arping -c ${ROUNDS} x ${vips} at once, node-1`, `${((ref.to - ref.from) / 1000).toFixed(1)} s`, ...wireCells(theirs)),
      "(per IP+asker: requests each asker sent each IP; min gap: the shortest time between two of them; max/s: the most",
      " within any second, per asker and IP, then all askers of one IP together; max/10 ms: the most one asker sent within",
      " any 10 ms, all IPs together: a spread round or a burst)",
      "",
      `whohas: ${run.checked.length} IPs judged, ${problems.length} with a problem` +
        `${problems.length > 0 ? ` (first: ${problems[0]?.problem ?? ""})` : ""}; arping: ${ref.answered} of ${vips * ROUNDS} ` +
        "requests answered (from one node, and it counts no second responder: a reference for time and rate, not a check)",
      `whohas's requests went out from ${(ours.firstMs / 1000).toFixed(1)} s to ${(ours.lastMs / 1000).toFixed(1)} s of the ${verifyS.toFixed(1)} s step (the rest: commands on their way, the last round's reply window, judging)`,
      `ratio to arping's time: ${(verifyS / ((ref.to - ref.from) / 1000)).toFixed(2)}`,
      `before (computed from its rounds): ${Math.ceil(vips / OLD_BATCH)} batches of ${OLD_BATCH} IPs x ${OLD_PROBE_S} s = ${oldS} s; with ${ROUNDS} requests per IP, ${oldRoundsS} s`,
      "",
      targets(
        target(
          `fix verification of ${vips} IPs <= 120 s`,
          `${verifyS.toFixed(1)} s${verified ? "" : `, but the run ${run.result}: ${run.message.slice(0, 200)}`}`,
          verifyS <= 120 && verified,
        ),
      ),
      targets(
        target(
          "at most one request per IP a second from each prober, as a client re-asks",
          `at most ${ours.perSecondPerAsker} in any second, smallest gap ${ours.minGapMs.toFixed(1)} ms`,
          rateMet,
        ),
      ),
    ];
    process.stdout.write(rows.join("\n") + "\n");
    process.stdout.write(
      JSON.stringify({
        bench: "verify",
        vips,
        nodes,
        verifyS,
        result: run.result,
        ours,
        arping: { ...theirs, seconds: (ref.to - ref.from) / 1000, answered: ref.answered },
        oldS,
      }) + "\n",
    );
  } finally {
    await stack.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`verify-bench: ${(e as Error).message}\n`);
  process.exit(1);
});
