import { describe, expect, it } from "vitest";
import { ARP_OP_REPLY, MIN_FRAME_LEN, decodeArp, encodeArpFrame, newArpRequest } from "./arp.js";
import { classifyFrame } from "./classify.js";
import { CLIENT_IP, CLIENT_MAC, NODE_A_MAC, VIP, hex } from "../__tests__/fixtures.js";

describe("newArpRequest", () => {
  it("builds a broadcast request padded to 60 bytes, byte for byte", () => {
    const f = newArpRequest(CLIENT_MAC, CLIENT_IP, VIP);
    expect(f.length).toBe(MIN_FRAME_LEN);
    expect(Buffer.from(f).toString("hex")).toBe(
      "ffffffffffff02005e0000010806" + "0001080006040001" + "02005e000001c0000201" + "000000000000c00002c8" + "00".repeat(18),
    );
  });

  it("refuses addresses that are not a MAC or an IPv4 address", () => {
    expect(() => newArpRequest("02:00:5e:00:00", CLIENT_IP, VIP)).toThrow(/not a MAC/);
    expect(() => newArpRequest(CLIENT_MAC, "192.0.2.256", VIP)).toThrow(/not an IPv4/);
    expect(() => newArpRequest(CLIENT_MAC, CLIENT_IP, "2001:db8::1")).toThrow(/not an IPv4/);
  });
});

describe("encodeArpFrame / decodeArp", () => {
  it("round-trips a reply through the classifier", () => {
    const frame = encodeArpFrame({
      ethDst: CLIENT_MAC,
      ethSrc: NODE_A_MAC,
      op: ARP_OP_REPLY,
      senderMac: NODE_A_MAC,
      senderIp: VIP,
      targetMac: CLIENT_MAC,
      targetIp: CLIENT_IP,
    });
    expect(classifyFrame(frame)).toMatchObject({ kind: "observed", obs: { kind: "reply", ip: VIP, mac: NODE_A_MAC, peerIp: CLIENT_IP } });
  });

  it("decodes at an offset without copying the frame", () => {
    const arp = hex("0001 0800 06 04 0002 02005e00000a c00002c8 02005e000001 c0000201");
    const padded = new Uint8Array(arp.length + 3);
    padded.set(arp, 3);
    expect(decodeArp(padded, 3)).toEqual({
      ok: true,
      value: { op: 2, senderMac: NODE_A_MAC, senderIp: VIP, targetMac: CLIENT_MAC, targetIp: CLIENT_IP },
    });
  });

  it("reports truncation when the offset is past the end", () => {
    expect(decodeArp(new Uint8Array(4), 10)).toMatchObject({ ok: false, reason: "truncated" });
  });
});
