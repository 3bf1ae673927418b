import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CaptureReader, GRATUITOUS_TICK_MS, gratuitousFrames } from "@whohas/core";
import { AGENT_MAIN, startStack, type Stack } from "../stack.js";
import { inNs, ip } from "../sh.js";
import { listening, startTcpdump } from "../tcpdump.js";
import { eventually, query } from "./hub-client.js";

interface Facts {
  interfaces: { name: string; captured: boolean; effective: { arpIgnore: number; arpAnnounce: number } }[];
  kubeIpvs0: { present: boolean; addresses: number };
  kubeProxyMode: string;
  capture: { frames: number; kernelDropped: number };
}
interface AgentRow {
  node: string;
  up: boolean;
  facts: Facts | null;
}
interface IpRow {
  ip: string;
  requests: number;
}

const dir = mkdtempSync(join(tmpdir(), "whohas-agent-it-"));

function whohas(ns: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync("ip", ["netns", "exec", ns, process.execPath, AGENT_MAIN, ...args], { encoding: "utf8" });
}

describe("the agent in the lab", () => {
  let stack: Stack;
  const factsOf = async (node: string) => (await query<AgentRow[]>(stack, "agents.list")).find((a) => a.node === node)?.facts ?? null;

  beforeAll(async () => {
    stack = await startStack({ nodes: 3, vips: 2, requestIntervalMs: 500 });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("reports its node's facts: kube-ipvs0 and its addresses, IPVS mode, arp_ignore 0 on eth0", async () => {
    const f = await eventually(
      () => factsOf("node-1"),
      (x) => x !== null,
      20_000,
    );
    expect(f?.kubeIpvs0).toEqual({ present: true, addresses: 2 });
    expect(f?.kubeProxyMode).toBe("ipvs");
    expect(f?.interfaces.find((i) => i.name === "eth0")).toMatchObject({ captured: true, effective: { arpIgnore: 0, arpAnnounce: 0 } });
  });

  it("reports the effective settings after strictARP's sysctls change on `all` (within one 10 s report)", async () => {
    const node = stack.lab.nodes[1];
    if (node === undefined) throw new Error("no node");
    await stack.lab.setStrictArp(node, true);
    try {
      // The two sysctls are written one after the other: a report may fall between them, the next one has both.
      const f = await eventually(
        () => factsOf(node.name),
        (x) => x?.interfaces.find((i) => i.name === "eth0")?.effective.arpAnnounce === 2,
        15_000,
      );
      expect(f?.interfaces.find((i) => i.name === "eth0")?.effective).toEqual({ arpIgnore: 1, arpAnnounce: 2 });
    } finally {
      // Put the node back whatever happened: the tests after this one need all three nodes answering.
      await stack.lab.setStrictArp(node, false);
    }
  });

  it("starts capturing on an interface added at run time", async () => {
    const node = stack.lab.nodes[0];
    if (node === undefined) throw new Error("no node");
    await ip("-n", node.ns, "link", "add", "eth9", "type", "veth", "peer", "name", "peer9");
    await ip("-n", node.ns, "link", "set", "eth9", "up");
    await ip("-n", node.ns, "link", "set", "peer9", "up");
    const f = await eventually(
      () => factsOf(node.name),
      (x) => x?.interfaces.find((i) => i.name === "eth9")?.captured === true,
      25_000,
    );
    expect(f?.interfaces.find((i) => i.name === "peer9")?.captured).toBe(false); // up, but --interfaces ^eth leaves it out
  });

  it("serves Prometheus metrics and health inside its namespace", async () => {
    const node = stack.lab.nodes[0];
    if (node === undefined) throw new Error("no node");
    const get = (path: string) =>
      inNs(node.ns, process.execPath, "-e", `fetch("http://127.0.0.1:9472${path}").then(async r => console.log(r.status, await r.text()))`);
    const metrics = await get("/metrics");
    expect(metrics).toMatch(/^200 /);
    expect(metrics).toMatch(/whohas_agent_frames_total\{kind="request"\} \d+/);
    expect(metrics).toMatch(/whohas_agent_kernel_dropped_packets\{interface="eth0"\} 0/);
    expect(metrics).toMatch(/whohas_agent_hub_connected 1/);
    expect(await get("/healthz")).toMatch(/^200 ok/);
    expect(await get("/readyz")).toMatch(/^200 ok/);
  });

  it("whohas probe counts the three responders on every request and exits 1", () => {
    const vip = stack.lab.vips[0] ?? "";
    const r = whohas(stack.lab.client.ns, ["probe", vip, "--duration", "3s", "--interval", "500ms"]);
    expect(r.status).toBe(1);
    const lines = r.stdout.split("\n").filter((l) => l.startsWith("#"));
    expect(lines.length).toBeGreaterThanOrEqual(5);
    for (const l of lines) expect(l).toMatch(/ 3 replies .*<-- SEVERAL/);
    expect(r.stdout).toMatch(new RegExp(`(\\d+) requests, 0 unanswered, \\1 answered by more than one MAC`));
    for (const n of stack.lab.nodes) expect(r.stdout).toContain(n.mac);
  });

  it("whohas announce sends MetalLB's frames, byte for byte, at MetalLB's times", async () => {
    const node = stack.lab.nodes[0];
    const vip = stack.lab.vips[1] ?? "";
    if (node === undefined) throw new Error("no node");
    const file = join(dir, "announce.pcap");
    const dump = startTcpdump(stack.lab.client.ns, ["--immediate-mode", "-i", "eth0", "-U", "-w", file, `arp and ether src ${node.mac}`]);
    // Start announcing only once tcpdump says it listens (a loaded machine can take seconds).
    await listening(dump);
    const r = whohas(node.ns, ["announce", vip, "--force", "--duration", "1s"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/: 5 bursts/);
    const want = gratuitousFrames({ name: "eth0", mac: node.mac, linkLocal: null }, vip).map((f) => Buffer.from(f).toString("hex"));
    // tcpdump writes each frame as it comes (-U): read the file until the last burst is in it.
    const gratuitous = async () => {
      const frames: { t: number; hex: string }[] = [];
      const reader = new CaptureReader((b, s, e, _l, t) => frames.push({ t, hex: Buffer.from(b.subarray(s, e)).toString("hex") }));
      // Only whole records count: the last one may still be being written.
      reader.push(readFileSync(file));
      // Replies the node's kernel sends to the client are in the capture too: keep the gratuitous frames only.
      return frames.filter((f) => want.includes(f.hex));
    };
    const grat = await eventually(gratuitous, (g) => g.length >= 10, 10_000);
    dump.kill("SIGINT");
    await new Promise((res) => dump.once("exit", res));
    expect(grat).toHaveLength(10);
    expect(grat.map((f) => f.hex)).toEqual(Array.from({ length: 5 }, () => want).flat());
    // MetalLB's tick is 1.1 s (its exact schedule is core's unit test). On the wire a burst may leave a little late
    // and the next on time, so the bounds are the neighbouring schedules: bursts sent together or twice as often
    // (gaps under half a tick), or half as often (two ticks), fail; scheduling noise does not.
    const bursts = grat.filter((_, i) => i % 2 === 0).map((f) => f.t);
    const gaps = bursts.slice(1).map((t, i) => t - (bursts[i] ?? 0));
    expect(gaps).toHaveLength(4);
    for (const g of gaps) {
      expect(g).toBeGreaterThan(GRATUITOUS_TICK_MS / 2);
      expect(g).toBeLessThan(2 * GRATUITOUS_TICK_MS);
    }
  });

  it("shuts down cleanly on SIGTERM: exit 0 within 5 s, and the hub sees it leave", async () => {
    const node = stack.lab.nodes[2];
    if (node === undefined) throw new Error("no node");
    const tokenFile = join(dir, "token");
    writeFileSync(tokenFile, stack.token);
    const extra = spawn(
      "ip",
      [
        "netns",
        "exec",
        node.ns,
        process.execPath,
        AGENT_MAIN,
        "agent",
        "--hub",
        `ws+unix://${stack.lab.names.hubSocket}:/agent`,
        "--node",
        "extra-agent",
        "--interfaces",
        "^eth0$",
        "--token-file",
        tokenFile,
        "--metrics-address",
        "",
      ],
      { stdio: "ignore" },
    );
    await eventually(
      async () => (await query<AgentRow[]>(stack, "agents.list")).find((a) => a.node === "extra-agent")?.up,
      (up) => up === true,
      15_000,
    );
    const t0 = Date.now();
    extra.kill("SIGTERM");
    const code = await new Promise<number | null>((r) => extra.once("exit", (c) => r(c)));
    expect(code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5000);
    await eventually(
      async () => (await query<AgentRow[]>(stack, "agents.list")).find((a) => a.node === "extra-agent")?.up,
      (up) => up === false,
      5000,
    );
  });

  it("keeps what it captured while the hub was away and delivers it after the restart", async () => {
    const vip = stack.lab.vips[0] ?? "";
    const requests = async () => (await query<IpRow[]>(stack, "ips.list")).find((i) => i.ip === vip)?.requests ?? 0;
    const node = stack.lab.nodes[0]?.ns ?? "";
    const buffered = async () =>
      Number(
        /^whohas_agent_buffered_bytes (\d+)$/m.exec(
          await inNs(node, process.execPath, "-e", `fetch("http://127.0.0.1:9472/metrics").then(async r => console.log(await r.text()))`),
        )?.[1] ?? NaN,
      );
    const before = await requests();
    await stack.stopHub();
    // The outage: 4 s of requests (one every 500 ms) the agents must hold; then the client falls silent, so whatever
    // the hub counts after its restart was held by the agents.
    await new Promise((r) => setTimeout(r, 4000));
    stack.pauseRequests();
    expect(await buffered()).toBeGreaterThan(0);
    await stack.startHub();
    await eventually(
      () => query<AgentRow[]>(stack, "agents.list"),
      (a) => a.filter((x) => x.up).length >= 3,
      20_000,
    );
    try {
      await eventually(requests, (n) => n - before >= 7, 20_000);
    } finally {
      stack.resumeRequests();
    }
  });
});
