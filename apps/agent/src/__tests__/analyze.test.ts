import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  LINKTYPE_ETHERNET,
  newArpReply,
  newArpRequest,
  newNeighborSolicitation,
  newSolicitedAdvertisement,
  pcapFileHeader,
  pcapRecord,
  tagFrame,
  writePcapng,
} from "@whohas/core";
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

describe("whohas analyze on VLANs and IPv6", () => {
  const VIP6 = "2001:db8::c8";
  const CLIENT6 = "2001:db8::1";
  /** Three rounds a second apart: VIP on VLAN 30 answered by A, on VLAN 40 by A and B; VIP6 on VLAN 40 by A and B. */
  const trunk = pcap(
    "trunk.pcap",
    [0, 1, 2].flatMap((k): [Uint8Array, number][] => {
      const t = T0 + k * 1000;
      return [
        [tagFrame(newArpRequest(CLIENT.mac, CLIENT.ip, VIP), 30), t],
        [tagFrame(newArpReply(A, VIP, CLIENT.mac, CLIENT.ip), 30), t + 0.2],
        [tagFrame(newArpRequest(CLIENT.mac, CLIENT.ip, VIP), 40), t + 10],
        [tagFrame(newArpReply(A, VIP, CLIENT.mac, CLIENT.ip), 40), t + 10.2],
        [tagFrame(newArpReply(B, VIP, CLIENT.mac, CLIENT.ip), 40), t + 10.3],
        [tagFrame(newNeighborSolicitation(CLIENT.mac, CLIENT6, VIP6), 40), t + 20],
        [tagFrame(newSolicitedAdvertisement(A, "fe80::a", VIP6, CLIENT.mac, CLIENT6), 40), t + 20.2],
        [tagFrame(newSolicitedAdvertisement(B, "fe80::b", VIP6, CLIENT.mac, CLIENT6), 40), t + 20.3],
      ];
    }),
  );

  it("--json: an entry per address and VLAN with vlan and family, multi-responder only where two answered", async () => {
    const { code, out } = await run(["--json", trunk]);
    expect(code).toBe(1);
    const json = JSON.parse(out) as {
      frames: number;
      arpFrames: number;
      ndpFrames: number;
      ips: {
        ip: string;
        vlan: number | null;
        family: number;
        requests: number;
        responders: { mac: string }[];
        findings: { type: string }[];
      }[];
    };
    expect([json.frames, json.arpFrames, json.ndpFrames]).toEqual([24, 15, 9]);
    expect(
      json.ips.map((e) => ({
        ip: e.ip,
        vlan: e.vlan,
        family: e.family,
        requests: e.requests,
        macs: e.responders.map((r) => r.mac).sort(),
        findings: e.findings.map((f) => f.type),
      })),
    ).toEqual([
      { ip: VIP, vlan: 30, family: 4, requests: 3, macs: [A], findings: [] },
      { ip: VIP, vlan: 40, family: 4, requests: 3, macs: [A, B], findings: ["multi-responder"] },
      { ip: VIP6, vlan: 40, family: 6, requests: 3, macs: [A, B], findings: ["multi-responder"] },
    ]);
  });

  it("the table names each VLAN and flags only the entries two MACs answered", async () => {
    const { code, out } = await run([trunk]);
    expect(code).toBe(1);
    expect(out).toContain(`${VIP} (VLAN 30)  requests 3, responders 1\n`);
    expect(out).toContain(`${VIP} (VLAN 40)  requests 3, responders 2  <-- SEVERAL RESPONDERS\n`);
    expect(out).toContain(`${VIP6} (VLAN 40)  requests 3, responders 2  <-- SEVERAL RESPONDERS\n`);
    expect(out).not.toMatch(/VLAN 30\)[^\n]*SEVERAL/);
  });
});
