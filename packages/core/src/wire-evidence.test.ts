import { describe, expect, it } from "vitest";
import { EVIDENCE_MESSAGE_BYTES, MAX_EVIDENCE_FRAMES, WIRE_VERSION, evidenceFrameBytes, type EvidenceFrame } from "./wire.js";
import { parseAgentMessage, parseHubMessage } from "./wire-parse.js";
import { newArpRequest } from "./packet/arp.js";

const REQUEST = {
  v: WIRE_VERSION,
  type: "evidence-request",
  id: "ev-1",
  ip: "192.0.2.200",
  vlan: null,
  fromMs: 1000,
  toMs: 2000,
  maxBytes: 65536,
};
const ARP = Buffer.from(newArpRequest("02:00:5e:00:00:01", "192.0.2.1", "192.0.2.200")).toString("base64");
const FRAME: EvidenceFrame = { tNs: "1700000000123456789", iface: "eth0", vlan: 42, data: ARP };
const EVIDENCE = { v: WIRE_VERSION, type: "evidence", id: "ev-1", frames: [FRAME], truncated: false, heldFromMs: 1_699_999_999_000 };

describe("evidence-request", () => {
  it.each([
    { case: "untagged", msg: REQUEST },
    { case: "in a VLAN, an IPv6 address, a window of one millisecond", msg: { ...REQUEST, ip: "2001:db8::c8", vlan: 42, toMs: 1000 } },
  ])("accepts one $case", ({ msg }) => {
    expect(parseHubMessage(JSON.stringify(msg))).toEqual({ ok: true, value: msg });
  });

  it.each([
    { case: "a window that ends before it starts", msg: { ...REQUEST, fromMs: 3000 }, where: /^wire: toMs: fromMs is after toMs$/ },
    { case: "no vlan field (null says untagged)", msg: { ...REQUEST, vlan: undefined }, where: /^wire: vlan: / },
    { case: "VLAN 4095", msg: { ...REQUEST, vlan: 4095 }, where: /^wire: vlan: / },
    { case: "more bytes than one message carries", msg: { ...REQUEST, maxBytes: EVIDENCE_MESSAGE_BYTES + 1 }, where: /^wire: maxBytes: / },
    { case: "no bytes at all", msg: { ...REQUEST, maxBytes: 0 }, where: /^wire: maxBytes: / },
    { case: "a host name for an IP", msg: { ...REQUEST, ip: "vip.example" }, where: /^wire: ip: not an IP address$/ },
  ])("refuses $case", ({ msg, where }) => {
    expect(parseHubMessage(JSON.stringify(msg))).toMatchObject({ ok: false, reason: "invalid", message: expect.stringMatching(where) });
  });
});

describe("evidence", () => {
  it.each([
    { case: "with a frame", msg: EVIDENCE },
    { case: "with nothing held", msg: { ...EVIDENCE, frames: [], heldFromMs: null } },
    { case: "cut short, an untagged frame at time 0", msg: { ...EVIDENCE, frames: [{ ...FRAME, tNs: "0", vlan: null }], truncated: true } },
    { case: "with the last time 64 bits hold", msg: { ...EVIDENCE, frames: [{ ...FRAME, tNs: "18446744073709551615" }] } },
  ])("accepts one $case", ({ msg }) => {
    expect(parseAgentMessage(JSON.stringify(msg))).toEqual({ ok: true, value: msg });
  });

  it.each([
    { case: "a time as a number", frame: { ...FRAME, tNs: 1.7e18 }, where: /^wire: frames\.0\.tNs: / },
    { case: "a time with a leading zero", frame: { ...FRAME, tNs: "0123" }, where: /frames\.0\.tNs: not a time in nanoseconds/ },
    { case: "a time past 64 bits", frame: { ...FRAME, tNs: "18446744073709551616" }, where: /frames\.0\.tNs: not a time .*past 64 bits/ },
    { case: "data that is not base64", frame: { ...FRAME, data: `${ARP.slice(0, -4)}!!!!` }, where: /frames\.0\.data: not base64/ },
    { case: "data shorter than an Ethernet header", frame: { ...FRAME, data: "AAAA" }, where: /frames\.0\.data: / },
    { case: "an interface name longer than Linux allows", frame: { ...FRAME, iface: "a".repeat(16) }, where: /frames\.0\.iface: / },
  ])("refuses $case", ({ frame, where }) => {
    const text = JSON.stringify({ ...EVIDENCE, frames: [frame] });
    expect(parseAgentMessage(text)).toMatchObject({ ok: false, reason: "invalid", message: expect.stringMatching(where) });
  });

  it("bounds a frame's JSON from above, so that frames summed to EVIDENCE_MESSAGE_BYTES make a message the hub takes", () => {
    for (const [len, iface, tNs, vlan] of [
      [42, "eth0", "1", null],
      [60, 'we"ird\\', "18446744073709551615", 4094],
      [1514, "enp0s31f6", "1700000000123456789", 1],
    ] as const) {
      const data = Buffer.alloc(len, 0xa5).toString("base64");
      const json = JSON.stringify({ tNs, iface, vlan, data });
      expect(evidenceFrameBytes(len, iface)).toBeGreaterThanOrEqual(json.length + 1);
      expect(evidenceFrameBytes(len, iface) - (json.length + 1)).toBeLessThanOrEqual(24);
    }
    // Realistic frames summed up to the budget make a message under the hub's 1 MiB, envelope included.
    const frames: EvidenceFrame[] = [];
    for (let used = 0; used + evidenceFrameBytes(60, FRAME.iface) <= EVIDENCE_MESSAGE_BYTES; used += evidenceFrameBytes(60, FRAME.iface))
      frames.push(FRAME);
    const text = JSON.stringify({ ...EVIDENCE, id: "x".repeat(64), frames });
    expect(text.length).toBeLessThan(EVIDENCE_MESSAGE_BYTES);
    expect(parseAgentMessage(text).ok).toBe(true);
  });

  it("refuses more frames than the smallest ones could fill a message with", () => {
    const small = { tNs: "1", iface: "e", vlan: null, data: Buffer.alloc(14).toString("base64") };
    const full = Array.from({ length: MAX_EVIDENCE_FRAMES }, () => small);
    expect(JSON.stringify(full).length).toBeLessThan(1024 * 1024);
    expect(parseAgentMessage(JSON.stringify({ ...EVIDENCE, frames: full })).ok).toBe(true);
    expect(parseAgentMessage(JSON.stringify({ ...EVIDENCE, frames: [...full, small] }))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^wire: frames: /),
    });
  });
});
