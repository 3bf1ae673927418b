import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LINKTYPE_ETHERNET, newArpReply, newArpRequest, pcapFileHeader, pcapRecord, writePcapng } from "@whohas/core";
import { runAnalyze } from "../analyze.js";

const dir = mkdtempSync(join(tmpdir(), "whohas-analyze-"));
const CLIENT = { mac: "02:00:5e:00:00:01", ip: "192.0.2.1" };
const A = "02:00:5e:00:00:0a";
const B = "02:00:5e:00:00:0b";
const VIP = "192.0.2.200";
const T0 = Date.UTC(2026, 10, 29, 12, 0, 0);

function pcap(name: string, frames: [Uint8Array, number][]): string {
  const parts = [pcapFileHeader(LINKTYPE_ETHERNET), ...frames.map(([f, t]) => pcapRecord(f, t))];
  const path = join(dir, name);
  writeFileSync(path, Buffer.concat(parts));
  return path;
}

async function run(args: string[], stdin: Uint8Array[] = []) {
  let out = "";
  let err = "";
  const code = await runAnalyze(args, {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    stdin: (async function* () {
      yield* stdin;
    })(),
  });
  return { code, out, err };
}

const race = pcap("race.pcap", [
  [newArpRequest(CLIENT.mac, CLIENT.ip, VIP), T0],
  [newArpReply(A, VIP, CLIENT.mac, CLIENT.ip), T0 + 0.2],
  [newArpReply(B, VIP, CLIENT.mac, CLIENT.ip), T0 + 0.3],
]);
const healthy = pcap("healthy.pcap", [
  [newArpRequest(CLIENT.mac, CLIENT.ip, VIP), T0],
  [newArpReply(A, VIP, CLIENT.mac, CLIENT.ip), T0 + 0.2],
]);

describe("whohas analyze", () => {
  it("prints the documented JSON and exits 1 on several responders", async () => {
    const { code, out } = await run(["--json", race]);
    expect(code).toBe(1);
    const json = JSON.parse(out) as Record<string, unknown>;
    expect(json).toMatchObject({
      frames: 3,
      arpFrames: 3,
      ndpFrames: 0,
      ips: [
        {
          ip: VIP,
          requests: 1,
          responders: [
            { mac: A, replies: 1, gratuitous: 0, firstSeen: "2026-11-29T12:00:00.000Z", lastSeen: "2026-11-29T12:00:00.000Z" },
            { mac: B, replies: 1, gratuitous: 0 },
          ],
          findings: expect.arrayContaining([expect.objectContaining({ type: "multi-responder", macs: [A, B] })]),
        },
      ],
    });
  });

  it("reads the pcapng of an incident's evidence: frames of several nodes, nanosecond times, comments", async () => {
    const ns = BigInt(T0) * 1_000_000n;
    const path = join(dir, "evidence.pcapng");
    writeFileSync(
      path,
      writePcapng({
        comment: `whohas evidence for ${VIP}`,
        interfaces: [{ name: "node-a/eth0" }, { name: "node-b/eth0" }],
        packets: [
          { iface: 0, tNs: ns, data: newArpRequest(CLIENT.mac, CLIENT.ip, VIP), comment: "node-a" },
          { iface: 0, tNs: ns + 200_123n, data: newArpReply(A, VIP, CLIENT.mac, CLIENT.ip), comment: "node-a" },
          { iface: 1, tNs: ns + 300_456n, data: newArpReply(B, VIP, CLIENT.mac, CLIENT.ip), comment: "node-b" },
        ],
      }),
    );
    const { code, out } = await run(["--json", path]);
    expect(code).toBe(1);
    expect(JSON.parse(out)).toMatchObject({
      frames: 3,
      arpFrames: 3,
      ips: [
        {
          ip: VIP,
          requests: 1,
          responders: [
            { mac: A, replies: 1 },
            { mac: B, replies: 1 },
          ],
        },
      ],
    });
  });

  it("exits 0 on a healthy capture and prints a table", async () => {
    const { code, out } = await run([healthy]);
    expect(code).toBe(0);
    expect(out).toContain("2 frames: 2 ARP, 0 NDP");
    expect(out).toMatch(new RegExp(`${VIP}  requests 1, responders 1\\n  ${A}  replies +1`));
  });

  it("marks the IP with several responders in the table", async () => {
    expect((await run([race])).out).toContain(`${VIP}  requests 1, responders 2  <-- SEVERAL RESPONDERS`);
  });

  it("reads standard input with -", async () => {
    const { readFileSync } = await import("node:fs");
    const bytes = readFileSync(race);
    const { code, out } = await run(["--json", "-"], [bytes.subarray(0, 30), bytes.subarray(30)]);
    expect(code).toBe(1);
    expect((JSON.parse(out) as { frames: number }).frames).toBe(3);
  });

  it("reports a truncated file with its name and offset, after analysing what came before", async () => {
    const { readFileSync } = await import("node:fs");
    const cut = join(dir, "cut.pcap");
    const bytes = readFileSync(race);
    writeFileSync(cut, bytes.subarray(0, bytes.length - 20));
    const { code, out, err } = await run(["--json", cut]);
    expect(err).toBe(`whohas analyze: ${cut}: file truncated: 56 bytes of an incomplete record at byte offset 176\n`);
    expect((JSON.parse(out) as { frames: number }).frames).toBe(2);
    expect(code).toBe(2);
  });

  it("exits 2 on a file that is not a capture, and on one that does not exist", async () => {
    const text = join(dir, "notes.txt");
    writeFileSync(text, "these are not packets");
    expect(await run([text])).toMatchObject({ code: 2, err: expect.stringMatching(/not a pcap or pcapng file/) });
    expect(await run([join(dir, "missing.pcap")])).toMatchObject({ code: 2, err: expect.stringMatching(/cannot open: ENOENT/) });
  });

  it("flags wrong-owner with --owner once the wrong MAC has answered past the grace, and refuses a malformed --owner", async () => {
    // One answer is no proof (a failover's status lags its answers); ten seconds of answers are.
    const steady = pcap(
      "steady.pcap",
      Array.from({ length: 10 }, (_, k): [Uint8Array, number][] => [
        [newArpRequest(CLIENT.mac, CLIENT.ip, VIP), T0 + k * 1000],
        [newArpReply(A, VIP, CLIENT.mac, CLIENT.ip), T0 + k * 1000 + 0.2],
      ]).flat(),
    );
    expect((await run(["--json", "--owner", `${VIP}=${B}`, healthy])).out).not.toContain('"type": "wrong-owner"');
    const { out } = await run(["--json", "--owner", `${VIP}=${B}`, steady]);
    expect(out).toContain('"type": "wrong-owner"');
    await expect(run(["--owner", "nonsense", healthy])).rejects.toThrow(/--owner nonsense: expected IP=MAC/);
  });
});
