import { describe, expect, it } from "vitest";
import { EVIDENCE_MESSAGE_BYTES, MAX_PROBE_REPLIES, MAX_PROBE_TARGETS, PROBE_MANY_WIRE_MAX, WIRE_VERSION } from "./wire.js";
import { parseAgentMessage, parseHubMessage } from "./wire-parse.js";

const probeMany = (over: Record<string, unknown> = {}) => ({
  v: WIRE_VERSION,
  type: "probe-many",
  id: "verify-1",
  targets: [
    { ip: "192.0.2.10", vlan: null },
    { ip: "192.0.2.10", vlan: 30 },
    { ip: "2001:db8::10", vlan: null },
  ],
  rounds: 10,
  intervalMs: 1000,
  ...over,
});

describe("probe-many", () => {
  it("carries IPv4 and IPv6 targets, each untagged or in a VLAN", () => {
    const msg = probeMany();
    expect(parseHubMessage(JSON.stringify(msg))).toEqual({ ok: true, value: msg });
  });

  it.each([
    { case: "an IP asked more than once a second", over: { intervalMs: 500 }, where: /^wire: intervalMs: / },
    { case: "no target", over: { targets: [] }, where: /^wire: targets: / },
    { case: "a target without its VLAN (null: untagged)", over: { targets: [{ ip: "192.0.2.10" }] }, where: /^wire: targets\.0\.vlan: / },
    { case: "more rounds than a minute's", over: { rounds: 61 }, where: /^wire: rounds: / },
    {
      case: "more targets than any agent takes",
      over: { targets: Array.from({ length: PROBE_MANY_WIRE_MAX + 1 }, () => ({ ip: "192.0.2.10", vlan: null })) },
      where: /^wire: targets: /,
    },
  ])("refuses $case", ({ over, where }) => {
    const r = parseHubMessage(JSON.stringify(probeMany(over)));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(where);
  });

  it("lets an agent take more targets than its own limit, so that it can refuse them in words", () => {
    const many = Array.from({ length: MAX_PROBE_TARGETS + 1 }, (_, i) => ({ ip: `198.19.${i >> 8}.${i & 255}`, vlan: null }));
    expect(parseHubMessage(JSON.stringify(probeMany({ targets: many }))).ok).toBe(true);
  });
});

describe("a hello's probeMany", () => {
  const hello = { v: WIRE_VERSION, type: "hello", node: "node-a", agentVersion: "0.2.0", interfaces: [] };
  it("names the agent's limit, and agents before it leave it out", () => {
    const withIt = { ...hello, probeMany: { maxTargets: MAX_PROBE_TARGETS } };
    expect(parseAgentMessage(JSON.stringify(withIt))).toEqual({ ok: true, value: withIt });
    expect(parseAgentMessage(JSON.stringify(hello))).toEqual({ ok: true, value: hello });
    expect(parseAgentMessage(JSON.stringify({ ...hello, probeMany: { maxTargets: 0 } })).ok).toBe(false);
  });
});

describe("probe-many-result", () => {
  it("fits one message under the evidence budget at its worst: every target at its longest, every reply counted", () => {
    // The longest of everything: an IPv6 address of 39 characters, VLAN 4094, a 13-digit time, 16 replies each with a
    // latency printed with every digit a double has.
    const replies = Array.from({ length: MAX_PROBE_REPLIES }, (_, i) => ({
      mac: `02:00:5e:00:00:${i.toString(16).padStart(2, "0")}`,
      latencyMs: 999.0000000000001 + i,
    }));
    const results = Array.from({ length: MAX_PROBE_TARGETS }, (_, i) => ({
      ip: `ffff:ffff:ffff:ffff:ffff:ffff:ffff:${(0xf000 + i).toString(16)}`,
      vlan: 4094,
      sentAt: 9_999_999_999_999,
      replies,
    }));
    const text = JSON.stringify({ v: WIRE_VERSION, type: "probe-many-result", id: "x".repeat(64), seq: 60, results });
    expect(parseAgentMessage(text).ok).toBe(true);
    expect(text.length).toBeLessThan(EVIDENCE_MESSAGE_BYTES);
  });

  it("refuses a request with more replies than reported", () => {
    const replies = Array.from({ length: MAX_PROBE_REPLIES + 1 }, (_, i) => ({
      mac: `02:00:5e:00:00:${i.toString(16).padStart(2, "0")}`,
      latencyMs: 1,
    }));
    const r = parseAgentMessage(
      JSON.stringify({
        v: WIRE_VERSION,
        type: "probe-many-result",
        id: "x",
        seq: 1,
        results: [{ ip: "192.0.2.10", vlan: null, sentAt: 1, replies }],
      }),
    );
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(/^wire: results\.0\.replies: /);
  });

  it("ends with command-done naming the targets not probed, and why", () => {
    const done = {
      v: WIRE_VERSION,
      type: "command-done",
      id: "verify-1",
      ok: true,
      message: "probed 2 IPs from eth0, 10 requests each; 1 not probed",
      unprobed: [{ ip: "192.0.2.10", vlan: 30, message: "this node has no interface on VLAN 30" }],
    };
    expect(parseAgentMessage(JSON.stringify(done))).toEqual({ ok: true, value: done });
  });
});
