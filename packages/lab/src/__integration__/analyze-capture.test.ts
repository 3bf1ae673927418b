import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AGENT_MAIN, startStack, type Stack } from "../stack.js";

// Captures written by real tools (tcpdump: pcap, Ethernet and Linux cooked SLL2; tshark: pcapng) on the lab's real
// traffic, analysed by the real `whohas analyze` binary.
const dir = mkdtempSync(join(tmpdir(), "whohas-captures-"));

/**
 * capture runs a capture command inside a namespace for `seconds` after it says it is listening (tcpdump: "listening
 * on", tshark: "Capturing on"), so a slow start on a loaded machine does not shorten the capture.
 */
async function capture(ns: string, cmd: string[], seconds: number): Promise<void> {
  const child = spawn("ip", ["netns", "exec", ns, ...cmd], { stdio: ["ignore", "ignore", "pipe"] });
  await new Promise<void>((resolve) => {
    const t = setTimeout(resolve, 10_000);
    child.stderr.on("data", (d: Buffer) => {
      if (/listening on|Capturing on/.test(d.toString())) {
        clearTimeout(t);
        resolve();
      }
    });
  });
  await new Promise((r) => setTimeout(r, seconds * 1000));
  child.kill("SIGINT");
  await new Promise((r) => child.once("exit", r));
}

interface Report {
  frames: number;
  arpFrames: number;
  ips: { ip: string; requests: number; responders: { mac: string }[]; findings: { type: string }[] }[];
}

function analyze(...files: string[]): { code: number | null; report: Report; stderr: string } {
  const r = spawnSync(process.execPath, [AGENT_MAIN, "analyze", "--json", ...files], { encoding: "utf8" });
  return { code: r.status, report: JSON.parse(r.stdout) as Report, stderr: r.stderr };
}

describe("whohas analyze output through a pipe", () => {
  it("delivers a JSON report of several hundred kilobytes whole", async () => {
    const { LINKTYPE_ETHERNET, newArpReply, newArpRequest, pcapFileHeader, pcapRecord } = await import("@whohas/core");
    const parts = [pcapFileHeader(LINKTYPE_ETHERNET)];
    for (let i = 0; i < 3000; i++) {
      const vip = `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}`;
      parts.push(pcapRecord(newArpRequest("02:00:5e:00:00:01", "10.0.0.1", vip), 1000 * i));
      parts.push(pcapRecord(newArpReply("02:00:5e:00:00:0a", vip, "02:00:5e:00:00:01", "10.0.0.1"), 1000 * i + 1));
    }
    const file = join(dir, "many-ips.pcap");
    const { writeFileSync } = await import("node:fs");
    writeFileSync(file, Buffer.concat(parts));
    const r = spawnSync(process.execPath, [AGENT_MAIN, "analyze", "--json", file], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    expect(r.stdout.length).toBeGreaterThan(256 * 1024);
    expect((JSON.parse(r.stdout) as Report).ips).toHaveLength(3000);
    expect(r.status).toBe(0);
  });
});

describe("whohas analyze on real captures of the lab", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ nodes: 3, vips: 2, requestIntervalMs: 300 });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("finds the three responders in tcpdump, tcpdump -i any and tshark captures", async () => {
    const pcap = join(dir, "client.pcap");
    const anyPcap = join(dir, "node-any.pcap");
    const ng = join(dir, "client.pcapng");
    const node = stack.lab.nodes[0];
    if (node === undefined) throw new Error("no node");
    await Promise.all([
      capture(stack.lab.client.ns, ["tcpdump", "-i", "eth0", "-w", pcap, "arp"], 3),
      capture(node.ns, ["tcpdump", "-i", "any", "-w", anyPcap, "arp"], 3),
      capture(stack.lab.client.ns, ["tshark", "-q", "-i", "eth0", "-f", "arp", "-w", ng], 4),
    ]);
    const macs = stack.lab.nodes.map((n) => n.mac).sort();
    for (const file of [pcap, ng]) {
      const { code, report } = analyze(file);
      expect(code, file).toBe(1);
      expect(report.ips.map((i) => i.ip)).toEqual(stack.lab.vips);
      for (const ip of report.ips) {
        expect(ip.responders.map((r) => r.mac).sort(), file).toEqual(macs);
        expect(
          ip.findings.map((f) => f.type),
          file,
        ).toContain("multi-responder");
      }
    }
    // On a node, tcpdump -i any sees the requests and only that node's own replies: one responder, no finding.
    const { code, report } = analyze(anyPcap);
    expect(code).toBe(0);
    expect(report.ips[0]?.responders.map((r) => r.mac)).toEqual([node.mac]);
    expect(report.ips[0]?.requests).toBeGreaterThanOrEqual(2);
  });

  it("after strictARP's sysctls a capture shows no responder and exits 0", async () => {
    for (const n of stack.lab.nodes) await stack.lab.setStrictArp(n, true);
    const file = join(dir, "after.pcap");
    await capture(stack.lab.client.ns, ["tcpdump", "-i", "eth0", "-w", file, "arp"], 4.5);
    const { code, report } = analyze(file);
    expect(code).toBe(0);
    // Every VIP was asked for: an empty report would pass the loop below.
    expect(report.ips.map((i) => i.ip)).toEqual(stack.lab.vips);
    for (const ip of report.ips) {
      expect(ip.responders).toEqual([]);
      expect(ip.findings.map((f) => f.type)).toEqual(["no-responder"]);
    }
  });
});
