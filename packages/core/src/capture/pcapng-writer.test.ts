import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PcapngError, sortPackets, writePcapng, type PcapngFile, type PcapngPacket } from "./pcapng-writer.js";
import { CaptureReader } from "./pcap.js";
import { LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL2 } from "../packet/link.js";
import { newArpReply, newArpRequest } from "../packet/arp.js";
import { newUnsolicitedAdvertisement } from "../packet/ndp.js";
import { tagFrame } from "../packet/vlan.js";
import { has } from "../__tests__/fixtures.js";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const CLIENT = { mac: "02:00:5e:00:00:01", ip: "192.0.2.1" };
const VIP = "192.0.2.200";
const REQUEST = newArpRequest(CLIENT.mac, CLIENT.ip, VIP);
const REPLY_A = newArpReply("02:00:5e:00:00:0a", VIP, CLIENT.mac, CLIENT.ip);
const REPLY_B = newArpReply("02:00:5e:00:00:0b", VIP, CLIENT.mac, CLIENT.ip);
/** 2023-11-14T22:13:20.123456789Z: nanoseconds a double of milliseconds since the epoch cannot hold. */
const T0 = 1_700_000_000_123_456_789n;

/** An incident as the hub would merge it: one request, both nodes' replies, on two interfaces. */
const INCIDENT: PcapngFile = {
  comment: "whohas evidence: 192.0.2.200 answered by 2 MACs",
  application: "whohas test",
  interfaces: [
    { name: "node-1/eth0", comment: "captured by the agent on node-1" },
    { name: "node-2/eth0", description: "uplink", comment: "captured by the agent on node-2" },
  ],
  packets: [
    { iface: 0, tNs: T0, data: REQUEST, comment: "node-1" },
    { iface: 1, tNs: T0 + 1n, data: REQUEST, comment: "node-2" },
    { iface: 0, tNs: T0 + 200_001n, data: REPLY_A, comment: "node-1: answered" },
    { iface: 1, tNs: T0 + 350_999n, data: REPLY_B.subarray(0, 42), originalLength: 60, comment: "node-2: answered too" },
  ],
};

interface Read {
  data: string;
  link: number;
  iface: number;
  tsMs: number;
  tNs: bigint;
}

function readBack(file: Uint8Array, chunk = file.length): Read[] {
  const got: Read[] = [];
  const reader: CaptureReader = new CaptureReader((b, s, e, link, tsMs, iface) =>
    got.push({ data: hex(b.subarray(s, e)), link, iface, tsMs, tNs: reader.timestampNs() }),
  );
  for (let i = 0; i < file.length; i += chunk) reader.push(file.subarray(i, i + chunk));
  reader.end();
  expect(reader.format).toBe("pcapng");
  return got;
}

/** blocks splits a little-endian pcapng file into [type, total length, trailing length] triples. */
function blocks(file: Uint8Array): [number, number, number][] {
  const v = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const out: [number, number, number][] = [];
  for (let at = 0; at < file.length;) {
    const len = v.getUint32(at + 4, true);
    out.push([v.getUint32(at, true), len, v.getUint32(at + len - 4, true)]);
    at += len;
  }
  return out;
}

describe("writePcapng", () => {
  it("writes the smallest file byte for byte", () => {
    const file = writePcapng({ interfaces: [{ name: "e0" }], packets: [{ iface: 0, tNs: 0x1_0000_0002n, data: Uint8Array.of(1, 2, 3) }] });
    const want = [
      // Section Header Block: type, total length 28, byte-order magic, version 1.0, section length -1, no options.
      "0a0d0d0a 1c000000 4d3c2b1a 0100 0000 ffffffffffffffff 1c000000",
      // Interface Description Block: type 1, length 40, Ethernet, reserved, snaplen 262144,
      "01000000 28000000 0100 0000 00000400",
      // if_name "e0" (padded), if_tsresol 9 (padded), opt_endofopt, total length again.
      "0200 0200 65300000 0900 0100 09000000 0000 0000 28000000",
      // Enhanced Packet Block: type 6, length 36, interface 0, timestamp upper 1 lower 2, captured 3, original 3,
      "06000000 24000000 00000000 01000000 02000000 03000000 03000000",
      // the data padded to 32 bits, no options (and so no opt_endofopt), total length again.
      "01020300 24000000",
    ];
    expect(hex(file)).toBe(want.join("").replaceAll(" ", ""));
  });

  it("pads every block to 32 bits and repeats its length at its end", () => {
    const file = writePcapng(INCIDENT);
    const got = blocks(file);
    expect(got.map(([type]) => type)).toEqual([0x0a0d0d0a, 1, 1, 6, 6, 6, 6]);
    for (const [, len, trailer] of got) {
      expect(len % 4).toBe(0);
      expect(trailer).toBe(len);
    }
  });

  it.each([1, 3, 64, 1 << 20])("reads back through CaptureReader in chunks of %i bytes, nanoseconds and interfaces kept", (chunk) => {
    const got = readBack(writePcapng(INCIDENT), chunk);
    expect(got.map((g) => [g.iface, g.tNs, g.data, g.link])).toEqual(
      INCIDENT.packets.map((p) => [p.iface, p.tNs, hex(p.data), LINKTYPE_ETHERNET]),
    );
    expect(got[0]?.tsMs).toBeCloseTo(Number(T0 / 1_000_000n) + 0.456789, 3);
  });

  it("writes the link type it is given", () => {
    const file = writePcapng({
      interfaces: [{ name: "any", linkType: LINKTYPE_LINUX_SLL2 }],
      packets: [{ iface: 0, tNs: 1n, data: REQUEST }],
    });
    expect(readBack(file)[0]?.link).toBe(LINKTYPE_LINUX_SLL2);
  });

  it("writes a file with no packets, and one with no interfaces at all", () => {
    expect(readBack(writePcapng({ interfaces: [{ name: "node-1/eth0" }], packets: [] }))).toEqual([]);
    expect(blocks(writePcapng({ interfaces: [], packets: [] }))).toEqual([[0x0a0d0d0a, 28, 28]]);
  });

  it("keeps the largest timestamp 64 bits hold", () => {
    const tNs = (1n << 64n) - 1n;
    const got = readBack(writePcapng({ interfaces: [{ name: "e0" }], packets: [{ iface: 0, tNs, data: REQUEST }] }));
    expect(got[0]?.tNs).toBe(tNs);
  });

  it.each<{ case: string; file: PcapngFile; message: RegExp }>([
    {
      case: "a packet naming no interface",
      file: { interfaces: [{ name: "e0" }], packets: [{ iface: 1, tNs: 0n, data: REQUEST }] },
      message: /^pcapng: packet 0 names interface 1, and the file has 1$/,
    },
    {
      case: "a negative timestamp",
      file: { interfaces: [{ name: "e0" }], packets: [{ iface: 0, tNs: -1n, data: REQUEST }] },
      message: /timestamp -1 ns does not fit 64 bits/,
    },
    {
      case: "a timestamp past 64 bits",
      file: { interfaces: [{ name: "e0" }], packets: [{ iface: 0, tNs: 1n << 64n, data: REQUEST }] },
      message: /does not fit 64 bits/,
    },
    {
      case: "an original length below the captured one",
      file: { interfaces: [{ name: "e0" }], packets: [{ iface: 0, tNs: 0n, data: REQUEST, originalLength: 10 }] },
      message: /original length 10 is less than its 60 captured bytes/,
    },
    {
      case: "a comment too long for an option",
      file: { interfaces: [{ name: "e0" }], packets: [{ iface: 0, tNs: 0n, data: REQUEST, comment: "é".repeat(40_000) }] },
      message: /packet 0's comment is 80000 bytes of UTF-8/,
    },
    {
      case: "a link type beyond 16 bits",
      file: { interfaces: [{ name: "e0", linkType: 70_000 }], packets: [] },
      message: /interface 0: link type 70000/,
    },
  ])("refuses $case", ({ file, message }) => {
    expect(() => writePcapng(file)).toThrow(PcapngError);
    expect(() => writePcapng(file)).toThrow(message);
  });
});

describe("sortPackets", () => {
  it("orders by time, keeps the given order for equal times, and leaves its input alone", () => {
    const p = (iface: number, tNs: bigint): PcapngPacket => ({ iface, tNs, data: REQUEST });
    const input = [p(0, 30n), p(1, 10n), p(2, 20n), p(3, 10n)];
    expect(sortPackets(input).map((x) => x.iface)).toEqual([1, 3, 2, 0]);
    expect(input.map((x) => x.iface)).toEqual([0, 1, 2, 3]);
  });
});

const dir = mkdtempSync(join(tmpdir(), "whohas-pcapng-"));
function save(name: string, file: PcapngFile): string {
  const path = join(dir, name);
  writeFileSync(path, writePcapng(file));
  return path;
}

describe.skipIf(!has("tshark"))("what tshark reads in a written file", () => {
  it("shows each frame's time to the nanosecond, its interface name, its comment and its ARP sender", () => {
    const path = save("incident.pcapng", INCIDENT);
    const out = execFileSync(
      "tshark",
      [
        "-r",
        path,
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-e",
        "frame.time_epoch",
        "-e",
        "frame.interface_name",
        "-e",
        "frame.comment",
        "-e",
        "arp.src.proto_ipv4",
      ],
      { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
    );
    expect(out.trim().split("\n")).toEqual([
      "1700000000.123456789|node-1/eth0|node-1|192.0.2.1",
      "1700000000.123456790|node-2/eth0|node-2|192.0.2.1",
      "1700000000.123656790|node-1/eth0|node-1: answered|192.0.2.200",
      "1700000000.123807788|node-2/eth0|node-2: answered too|192.0.2.200",
    ]);
  });

  it("decodes a tagged NDP frame and a comment that is not ASCII", () => {
    const na = newUnsolicitedAdvertisement("02:00:5e:00:00:0a", "fe80::a", "2001:db8::c8");
    const tagged = tagFrame(na, 42);
    const path = save("ndp.pcapng", {
      interfaces: [{ name: "node-1/eth0.42" }],
      packets: [{ iface: 0, tNs: T0, data: tagged, comment: "nœud-1 ✓" }],
    });
    const out = execFileSync(
      "tshark",
      ["-r", path, "-T", "fields", "-E", "separator=|", "-e", "vlan.id", "-e", "icmpv6.nd.na.target_address", "-e", "frame.comment"],
      { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
    );
    expect(out.trim()).toBe("42|2001:db8::c8|nœud-1 ✓");
  });
});

describe.skipIf(!has("capinfos"))("what capinfos reads in a written file", () => {
  it("finds a pcapng file with nanosecond timestamps, the section comment and both interfaces", () => {
    const path = save("capinfos.pcapng", INCIDENT);
    const out = execFileSync("capinfos", [path], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    expect(out).toMatch(/File type:\s+Wireshark\/\.\.\. - pcapng/);
    expect(out).toMatch(/Number of packets:\s+4/);
    expect(out).toMatch(/File timestamp precision:\s+nanoseconds \(9\)/);
    expect(out).toMatch(/Capture comment:\s+whohas evidence: 192\.0\.2\.200 answered by 2 MACs/);
    expect(out).toMatch(/Capture application:\s+whohas test/);
    expect(out).toMatch(/Interface #0 info:\s+Name = node-1\/eth0/);
    expect(out).toMatch(/Interface #1 info:\s+Name = node-2\/eth0\s+Description = uplink/);
    expect(out).toMatch(/Encapsulation = Ethernet \(1 - ether\)/);
  });
});
