import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { capturedBytes, evidenceFile, evidenceFilter, mergeFrames, sectionComment, type EvidenceInput } from "./capture-file.js";
import { newNeighborSolicitation } from "../packet/ndp.js";
import { newArpReply, newArpRequest } from "../packet/arp.js";
import { tagFrame } from "../packet/vlan.js";
import { CaptureReader } from "../capture/pcap.js";
import type { EvidenceFrame } from "../wire.js";
import { has } from "../__tests__/fixtures.js";

const CLIENT = { mac: "02:00:5e:00:00:01", ip: "192.0.2.1" };
const VIP = "192.0.2.200";
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");
const REQUEST = b64(newArpRequest(CLIENT.mac, CLIENT.ip, VIP));
const REPLY_A = b64(newArpReply("02:00:5e:00:00:0a", VIP, CLIENT.mac, CLIENT.ip));
const REPLY_B = b64(newArpReply("02:00:5e:00:00:0b", VIP, CLIENT.mac, CLIENT.ip));
const T0 = 1_700_000_000_123_456_789n;
const at = (dNs: bigint) => String(T0 + dNs);
const frame = (dNs: bigint, data: string, iface = "eth0", vlan: number | null = null): EvidenceFrame => ({
  tNs: at(dNs),
  iface,
  vlan,
  data,
});

/** Two nodes answer the same request; node-2's frames come first in its answer but later in time. */
const INPUT: EvidenceInput = {
  subject: {
    title: `multi-responder for ${VIP} (incident 7)`,
    lines: ["2 nodes answer: node-1, node-2", "expected owner: node-1"],
    fromMs: 1_700_000_000_000,
    toMs: 1_700_000_060_000,
  },
  nodes: [
    { node: "node-2", frames: [frame(1n, REQUEST), frame(350_000n, REPLY_B)], truncated: false, heldFromMs: 1_699_999_000_000 },
    {
      node: "node-1",
      frames: [
        frame(0n, REQUEST),
        frame(200_000n, REPLY_A),
        frame(400_000n, b64(tagFrame(Buffer.from(REPLY_A, "base64"), 30)), "eth1", 30),
      ],
      truncated: true,
      heldFromMs: 1_700_000_010_000,
    },
  ],
  missing: [{ node: "node-3", why: "agent down since 2023-11-14T22:10:00.000Z" }],
  application: "whohas test",
};

describe("evidenceFile", () => {
  it("merges every node's frames in time order, each on its node's own interface", () => {
    const got: { iface: number; tNs: bigint; data: string }[] = [];
    const reader: CaptureReader = new CaptureReader((b, s, e, _l, _t, iface) =>
      got.push({ iface, tNs: reader.timestampNs(), data: b64(b.subarray(s, e)) }),
    );
    reader.push(evidenceFile(INPUT));
    reader.end();
    // Interfaces are numbered node by node in name order: node-1/eth0, node-1/eth1, node-2/eth0.
    expect(got.map((g) => [g.iface, g.tNs - T0, g.data])).toEqual([
      [0, 0n, REQUEST],
      [2, 1n, REQUEST],
      [0, 200_000n, REPLY_A],
      [2, 350_000n, REPLY_B],
      [1, 400_000n, INPUT.nodes[1]?.frames[2]?.data],
    ]);
  });

  it("says in the section comment what it is about, whose frames it holds, who is missing, and what was cut", () => {
    expect(sectionComment(INPUT).split("\n")).toEqual([
      `whohas evidence: multi-responder for ${VIP} (incident 7)`,
      "2 nodes answer: node-1, node-2",
      "expected owner: node-1",
      "window: 2023-11-14T22:13:20.000Z to 2023-11-14T22:14:20.000Z",
      "frames from: node-2 (2 frames), node-1 (3 frames)",
      "missing: node-3: agent down since 2023-11-14T22:10:00.000Z",
      "cut: node-1 held more frames than the file's bound; it has the earliest",
      "partial: node-1's agent held frames only from 2023-11-14T22:13:30.000Z (older ones had left its ring)",
    ]);
  });
});

describe("evidenceFile with what a broken or hostile agent could send", () => {
  it("names a thousand missing nodes in a comment that still fits, and writes a time no Date holds as such", () => {
    const many: EvidenceInput = {
      ...INPUT,
      nodes: [{ node: "node-1", frames: [frame(0n, REQUEST)], truncated: false, heldFromMs: 9e15 }],
      missing: Array.from({ length: 1200 }, (_, i) => ({
        node: `worker-${String(i).padStart(4, "0")}.example.internal`,
        why: "agent down",
      })),
    };
    const comment = sectionComment(many);
    expect(comment.length).toBeLessThan(65_535);
    expect(comment).toContain("missing: and 1150 more");
    expect(comment).toContain("partial: node-1's agent held frames only from (no valid time: 9000000000000000)");
    expect(evidenceFile(many).length).toBeGreaterThan(0);
  });
});

describe("evidenceFilter", () => {
  const req = Buffer.from(REQUEST, "base64");
  const reply = Buffer.from(REPLY_A, "base64");
  it("takes ARP with the IP as target or sender, untagged, and nothing else", () => {
    expect(evidenceFilter(VIP, null)(req)).toBe(true);
    expect(evidenceFilter(VIP, null)(reply)).toBe(true);
    expect(evidenceFilter(CLIENT.ip, null)(req)).toBe(true); // the asker's own address is its sender
    expect(evidenceFilter("192.0.2.99", null)(req)).toBe(false);
    expect(evidenceFilter(VIP, 30)(req)).toBe(false);
    expect(evidenceFilter(VIP, null)(new Uint8Array(10))).toBe(false);
  });
  it("takes a frame of the VLAN asked for only", () => {
    const tagged = tagFrame(reply, 30);
    expect(evidenceFilter(VIP, 30)(tagged)).toBe(true);
    expect(evidenceFilter(VIP, 40)(tagged)).toBe(false);
    expect(evidenceFilter(VIP, null)(tagged)).toBe(false);
  });
  it("takes NDP with the IP as target or IPv6 source", () => {
    const ns = newNeighborSolicitation("02:00:5e:00:00:01", "2001:db8::1", "2001:db8::c8");
    expect(evidenceFilter("2001:db8::c8", null)(ns)).toBe(true);
    expect(evidenceFilter("2001:db8::1", null)(ns)).toBe(true);
    expect(evidenceFilter("2001:db8::99", null)(ns)).toBe(false);
    expect(evidenceFilter(VIP, null)(ns)).toBe(false);
  });
});

describe("mergeFrames", () => {
  it("keeps each frame once when two answers overlap, in time order", () => {
    const first = [frame(0n, REQUEST), frame(200_000n, REPLY_A)];
    const again = [frame(200_000n, REPLY_A), frame(100_000n, REPLY_B), frame(300_000n, REPLY_A)];
    expect(mergeFrames(first, again).map((f) => [BigInt(f.tNs) - T0, f.data])).toEqual([
      [0n, REQUEST],
      [100_000n, REPLY_B],
      [200_000n, REPLY_A],
      [300_000n, REPLY_A],
    ]);
  });

  it("keeps two frames of the same time when their bytes or interfaces differ", () => {
    expect(mergeFrames([frame(0n, REPLY_A)], [frame(0n, REPLY_B), frame(0n, REPLY_A, "eth1")])).toHaveLength(3);
  });
});

describe("capturedBytes", () => {
  it("sums the frames' decoded lengths", () => {
    expect(capturedBytes([frame(0n, REQUEST), frame(1n, b64(new Uint8Array(43)))])).toBe(60 + 43);
  });
});

describe.skipIf(!has("tshark"))("what tshark reads in an evidence file", () => {
  it("names each frame's node and interface, its VLAN, and the ARP sender", () => {
    const path = join(mkdtempSync(join(tmpdir(), "whohas-evidence-")), "evidence.pcapng");
    writeFileSync(path, evidenceFile(INPUT));
    const fields = ["frame.interface_name", "frame.comment", "vlan.id", "arp.src.hw_mac", "arp.opcode"];
    const out = execFileSync("tshark", ["-r", path, "-T", "fields", "-E", "separator=|", ...fields.flatMap((f) => ["-e", f])], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    expect(out.trim().split("\n")).toEqual([
      "node-1/eth0|node-1||02:00:5e:00:00:01|1",
      "node-2/eth0|node-2||02:00:5e:00:00:01|1",
      "node-1/eth0|node-1||02:00:5e:00:00:0a|2",
      "node-2/eth0|node-2||02:00:5e:00:00:0b|2",
      "node-1/eth1|node-1, VLAN 30|30|02:00:5e:00:00:0a|2",
    ]);
  });
});
