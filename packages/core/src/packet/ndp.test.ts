import { describe, expect, it } from "vitest";
import {
  decodeNdp,
  encodeNdpFrame,
  newNeighborSolicitation,
  newSolicitedAdvertisement,
  newUnsolicitedAdvertisement,
  solicitedNodeMulticast,
} from "./ndp.js";
import { classifyFrame } from "./classify.js";
import { icmpv6Checksum } from "./ipv6.js";
import { hex } from "../__tests__/fixtures.js";

// Reference frames built by scapy 2.5 (Debian python3-scapy), an implementation independent of ours.
const SCAPY_NS = hex(
  "3333ff0000c802005e00000186dd6000000000203aff20010db8000000000000000000000001ff0200000000000000000001ff0000c88700bc9a0000000020010db80000000000000000000000c8010102005e000001",
);
const SCAPY_UNSOLICITED_NA = hex(
  "33330000000102005e00000a86dd6000000000203afffe80000000000000000000000000000aff0200000000000000000000000000018800c9892000000020010db80000000000000000000000c8020102005e00000a",
);
const SCAPY_SOLICITED_NA = hex(
  "02005e00000102005e00000a86dd6000000000203afffe80000000000000000000000000000a20010db800000000000000000000000188007ad34000000020010db80000000000000000000000c8020102005e00000a",
);

const CLIENT_MAC = "02:00:5e:00:00:01";
const NODE_MAC = "02:00:5e:00:00:0a";
const VIP6 = "2001:db8::c8";

describe("NDP encoders are byte-identical to scapy's frames", () => {
  it.each([
    { case: "neighbor solicitation", ours: () => newNeighborSolicitation(CLIENT_MAC, "2001:db8::1", VIP6), ref: SCAPY_NS },
    {
      case: "unsolicited NA (MetalLB's gratuitous, O=1)",
      ours: () => newUnsolicitedAdvertisement(NODE_MAC, "fe80::a", VIP6),
      ref: SCAPY_UNSOLICITED_NA,
    },
    {
      case: "solicited NA (MetalLB's answer, S=1 O=0)",
      ours: () => newSolicitedAdvertisement(NODE_MAC, "fe80::a", VIP6, CLIENT_MAC, "2001:db8::1"),
      ref: SCAPY_SOLICITED_NA,
    },
  ])("$case", ({ ours, ref }) => {
    expect(Buffer.from(ours()).toString("hex")).toBe(Buffer.from(ref).toString("hex"));
  });
});

describe("decodeNdp", () => {
  it("decodes scapy's solicited NA with its flags and option", () => {
    expect(decodeNdp(SCAPY_SOLICITED_NA, 14)).toEqual({
      ok: true,
      value: {
        type: "na",
        src: "fe80::a",
        dst: "2001:db8::1",
        hopLimit: 255,
        target: VIP6,
        router: false,
        solicited: true,
        override: false,
        options: [{ kind: "target-lla", mac: NODE_MAC }],
      },
    });
  });

  it("keeps unknown options raw", () => {
    const f = encodeNdpFrame({
      ethDst: "33:33:00:00:00:01",
      ethSrc: NODE_MAC,
      type: "na",
      src: "fe80::a",
      dst: "ff02::1",
      target: VIP6,
      router: false,
      solicited: false,
      override: true,
      options: [
        { kind: "raw", type: 14, value: new Uint8Array([1, 2, 3, 4, 5, 6]) },
        { kind: "target-lla", mac: NODE_MAC },
      ],
    });
    const r = decodeNdp(f, 14);
    expect(r.ok && r.value.options).toEqual([
      { kind: "raw", type: 14, value: new Uint8Array([1, 2, 3, 4, 5, 6]) },
      { kind: "target-lla", mac: NODE_MAC },
    ]);
  });

  const mutate = (f: Uint8Array, at: number, v: number) => {
    const c = f.slice();
    c[at] = v;
    return c;
  };
  // reseal fixes the checksum after a mutation, so that the check under test is the one that fires.
  const reseal = (f: Uint8Array) => {
    const len = (f[18] ?? 0) * 256 + (f[19] ?? 0);
    const c = icmpv6Checksum(f, 22, 38, 54, len);
    f[56] = c >> 8;
    f[57] = c & 0xff;
    return f;
  };
  it.each([
    {
      case: "a flipped target byte (checksum)",
      frame: mutate(SCAPY_NS, 14 + 40 + 20, 0xff),
      reason: "malformed",
      msg: /^icmpv6: checksum 0xbc9a, computed/,
    },
    { case: "hop limit 64", frame: mutate(SCAPY_NS, 14 + 7, 64), reason: "malformed", msg: /hop limit 64, NDP requires 255/ },
    { case: "code 1", frame: mutate(SCAPY_NS, 14 + 41, 1), reason: "malformed", msg: /code 1/ },
    {
      case: "a zero-length option",
      frame: reseal(mutate(SCAPY_NS, 14 + 40 + 25, 0)),
      reason: "malformed",
      msg: /option type 1 has length zero/,
    },
    {
      case: "an option longer than the packet",
      frame: reseal(mutate(SCAPY_NS, 14 + 40 + 25, 2)),
      reason: "truncated",
      msg: /option type 1 needs 16 bytes, only 8/,
    },
    { case: "payload cut", frame: SCAPY_NS.subarray(0, 70), reason: "truncated", msg: /^ipv6: payload/ },
    { case: "an echo request", frame: mutate(SCAPY_NS, 14 + 40, 128), reason: "unsupported", msg: /type 128/ },
    { case: "UDP", frame: mutate(SCAPY_NS, 14 + 6, 17), reason: "unsupported", msg: /next header 17/ },
    { case: "IP version 4 in an IPv6 frame", frame: mutate(SCAPY_NS, 14, 0x45), reason: "malformed", msg: /version 4/ },
  ])("refuses $case", ({ frame, reason, msg }) => {
    const r = decodeNdp(frame, 14);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toBe(reason);
      expect(r.message).toMatch(msg);
    }
  });

  it("computes the solicited-node group (RFC 4291 2.7.1)", () => {
    expect(solicitedNodeMulticast("2001:db8::12:3456")).toEqual({ ip: "ff02::1:ff12:3456", mac: "33:33:ff:12:34:56" });
  });
});

describe("classifyFrame on NDP", () => {
  it.each([
    { case: "NS", frame: SCAPY_NS, kind: "ns", mac: CLIENT_MAC, peerIp: "2001:db8::1" },
    { case: "DAD NS", frame: newNeighborSolicitation(CLIENT_MAC, "::", VIP6), kind: "ns-dad", mac: CLIENT_MAC, peerIp: "::" },
    { case: "solicited NA", frame: SCAPY_SOLICITED_NA, kind: "na-solicited", mac: NODE_MAC, peerIp: "2001:db8::1" },
    { case: "unsolicited NA", frame: SCAPY_UNSOLICITED_NA, kind: "na-unsolicited", mac: NODE_MAC, peerIp: "ff02::1" },
  ])("$case", ({ frame, kind, mac, peerIp }) => {
    expect(classifyFrame(frame)).toMatchObject({
      kind: "observed",
      obs: { kind, ip: VIP6, mac, peerIp, targetMac: null, ethernetMismatch: false },
    });
  });

  it("ignores other ICMPv6", () => {
    const echo = SCAPY_NS.slice();
    echo[54] = 128;
    expect(classifyFrame(echo)).toMatchObject({ kind: "dropped", reason: "ignored" });
  });
});
