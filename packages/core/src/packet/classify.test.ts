import { describe, expect, it } from "vitest";
import { classifyFrame } from "./classify.js";
import { hex } from "../__tests__/fixtures.js";

// Each fixture is a whole Ethernet frame, one field per line.
const REQUEST = hex(`
  ffffffffffff 02005e000001 0806   # broadcast, from the client, ARP
  0001 0800 06 04 0001             # Ethernet/IPv4, request
  02005e000001 c0000201            # SHA client, SPA 192.0.2.1
  000000000000 c00002c8            # THA zero, TPA 192.0.2.200
`);

const REPLY = hex(`
  02005e000001 02005e00000a 0806
  0001 0800 06 04 0002
  02005e00000a c00002c8            # SHA node A, SPA the VIP
  02005e000001 c0000201            # back to the client
`);

const GRATUITOUS_REQUEST = hex(`
  ffffffffffff 02005e00000a 0806
  0001 0800 06 04 0001
  02005e00000a c00002c8
  ffffffffffff c00002c8            # MetalLB's THA is broadcast, SPA = TPA
`);

const GRATUITOUS_REPLY = hex(`
  ffffffffffff 02005e00000a 0806
  0001 0800 06 04 0002
  02005e00000a c00002c8
  ffffffffffff c00002c8
`);

const PROBE = hex(`
  ffffffffffff 02005e000001 0806
  0001 0800 06 04 0001
  02005e000001 00000000            # RFC 5227 probe: SPA 0.0.0.0
  000000000000 c00002c8
`);

const VLAN_REPLY = hex(`
  02005e000001 02005e00000a 8100 0064 0806   # 802.1Q VLAN 100
  0001 0800 06 04 0002
  02005e00000a c00002c8
  02005e000001 c0000201
`);

const QINQ_REQUEST = hex(`
  ffffffffffff 02005e000001 88a8 00c8 8100 0064 0806   # 802.1ad S-tag 200, C-tag 100
  0001 0800 06 04 0001
  02005e000001 c0000201
  000000000000 c00002c8
`);

const MISMATCH_REPLY = hex(`
  02005e000001 02005e0000ff 0806   # Ethernet source is not the ARP sender (Microsoft NLB style)
  0001 0800 06 04 0002
  02005e00000a c00002c8
  02005e000001 c0000201
`);

describe("classifyFrame", () => {
  it.each([
    { case: "request", frame: REQUEST, kind: "request", ip: "192.0.2.200", mac: "02:00:5e:00:00:01", peerIp: "192.0.2.1" },
    { case: "reply", frame: REPLY, kind: "reply", ip: "192.0.2.200", mac: "02:00:5e:00:00:0a", peerIp: "192.0.2.1" },
    {
      case: "gratuitous request",
      frame: GRATUITOUS_REQUEST,
      kind: "gratuitous-request",
      ip: "192.0.2.200",
      mac: "02:00:5e:00:00:0a",
      peerIp: "192.0.2.200",
    },
    {
      case: "gratuitous reply",
      frame: GRATUITOUS_REPLY,
      kind: "gratuitous-reply",
      ip: "192.0.2.200",
      mac: "02:00:5e:00:00:0a",
      peerIp: "192.0.2.200",
    },
    { case: "probe", frame: PROBE, kind: "probe", ip: "192.0.2.200", mac: "02:00:5e:00:00:01", peerIp: "0.0.0.0" },
  ])("classifies a $case", ({ frame, kind, ip, mac, peerIp }) => {
    const out = classifyFrame(frame);
    expect(out.kind).toBe("observed");
    if (out.kind !== "observed") return;
    expect(out.obs).toMatchObject({ kind, ip, mac, peerIp, vlan: null, ethernetMismatch: false });
  });

  it("records THA of a gratuitous reply (Linux accepts it only when THA = SHA)", () => {
    const out = classifyFrame(GRATUITOUS_REPLY);
    expect(out.kind === "observed" && out.obs.targetMac).toBe("ff:ff:ff:ff:ff:ff");
  });

  it("reads through an 802.1Q tag and reports the VLAN", () => {
    const out = classifyFrame(VLAN_REPLY);
    expect(out).toMatchObject({ kind: "observed", obs: { kind: "reply", vlan: 100, ip: "192.0.2.200" } });
  });

  it("reads through 802.1ad Q-in-Q and reports the outer VLAN", () => {
    const out = classifyFrame(QINQ_REQUEST);
    expect(out).toMatchObject({ kind: "observed", obs: { kind: "request", vlan: 200 } });
  });

  it("flags an ethernet mismatch and keeps the frame", () => {
    const out = classifyFrame(MISMATCH_REPLY);
    expect(out).toMatchObject({
      kind: "observed",
      obs: { kind: "reply", ethernetMismatch: true, mac: "02:00:5e:00:00:0a", ethSrc: "02:00:5e:00:00:ff" },
    });
  });
});

describe("classifyFrame on bad input", () => {
  const ipv4Frame = hex("ffffffffffff 02005e000001 0800 4500 0014");
  const ipxArp = hex("ffffffffffff 02005e000001 0806 0006 0800 06 04 0001" + "00".repeat(20));
  const arpOverIpv6 = hex("ffffffffffff 02005e000001 0806 0001 86dd 06 10 0001" + "00".repeat(44));
  const badLengths = hex("ffffffffffff 02005e000001 0806 0001 0800 08 04 0001" + "00".repeat(24));
  const rarp = hex("ffffffffffff 02005e000001 0806 0001 0800 06 04 0003" + "00".repeat(20));
  const tooManyTags = hex("ffffffffffff 02005e000001" + "8100 0001".repeat(5) + "0806" + "00".repeat(28));

  it.each([
    { case: "empty", frame: new Uint8Array(0), reason: "truncated", msg: /^ethernet: header needs 14 bytes, only 0/ },
    { case: "13 bytes", frame: REQUEST.subarray(0, 13), reason: "truncated", msg: /^ethernet:/ },
    { case: "cut inside a VLAN tag", frame: VLAN_REPLY.subarray(0, 16), reason: "truncated", msg: /^ethernet: VLAN tag/ },
    { case: "not ARP", frame: ipv4Frame, reason: "ignored", msg: /neither ARP nor an NDP/ },
    { case: "ARP header cut", frame: REQUEST.subarray(0, 20), reason: "truncated", msg: /^arp: header needs 8 bytes, only 6/ },
    {
      case: "ARP addresses cut",
      frame: REQUEST.subarray(0, 41),
      reason: "truncated",
      msg: /^arp: Ethernet\/IPv4 packet needs 28 bytes, only 27/,
    },
    { case: "hardware type 6", frame: ipxArp, reason: "unsupported", msg: /hardware type 6 is not Ethernet/ },
    { case: "protocol IPv6", frame: arpOverIpv6, reason: "unsupported", msg: /protocol type 0x86dd is not IPv4/ },
    { case: "lengths disagree", frame: badLengths, reason: "malformed", msg: /hardware length 8/ },
    { case: "RARP operation", frame: rarp, reason: "unsupported", msg: /operation 3/ },
    { case: "five VLAN tags", frame: tooManyTags, reason: "malformed", msg: /more than 4 VLAN tags/ },
  ])("drops $case with a typed reason", ({ frame, reason, msg }) => {
    const out = classifyFrame(frame);
    expect(out.kind).toBe("dropped");
    if (out.kind !== "dropped") return;
    expect(out.reason).toBe(reason);
    expect(out.message).toMatch(msg);
  });

  it("never throws on any prefix of a valid frame", () => {
    for (const f of [REQUEST, VLAN_REPLY, QINQ_REQUEST]) {
      for (let n = 0; n <= f.length; n++) expect(() => classifyFrame(f.subarray(0, n))).not.toThrow();
    }
  });
});
