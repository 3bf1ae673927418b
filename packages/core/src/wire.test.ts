import { describe, expect, it } from "vitest";
import { WIRE_VERSION, parseAgentMessage, parseHubMessage } from "./wire.js";

describe("parseAgentMessage", () => {
  it("accepts a hello", () => {
    const msg = { v: WIRE_VERSION, type: "hello", node: "node-a", agentVersion: "0.1.0", interfaces: [{ name: "eth0", mac: "02:00:5e:00:00:0a", up: true }] };
    expect(parseAgentMessage(JSON.stringify(msg))).toEqual({ ok: true, value: msg });
  });

  it.each([
    { case: "not JSON", text: "{nope", msg: /^wire: not JSON/ },
    { case: "unknown type", text: JSON.stringify({ v: 1, type: "shout" }), msg: /^wire: type:/ },
    { case: "wrong version", text: JSON.stringify({ v: 2, type: "heartbeat", t: 1 }), msg: /^wire: v:/ },
    { case: "bad IP in an entry", text: JSON.stringify({ v: 1, type: "observations", dropped: 0, entries: [{ ip: "300.1.1.1", mac: "02:00:5e:00:00:0a", kind: "reply", iface: "eth0", count: 1, firstSeen: 1, lastSeen: 1, peerIp: "192.0.2.1", targetMac: "02:00:5e:00:00:0a", ethernetMismatch: 0 }] }), msg: /^wire: entries\.0\.ip: not an IP address/ },
  ])("refuses $case with a reason", ({ text, msg }) => {
    const r = parseAgentMessage(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(msg);
  });

  it("parses hub messages", () => {
    expect(parseHubMessage(JSON.stringify({ v: 1, type: "welcome", hubVersion: "x" })).ok).toBe(true);
    expect(parseHubMessage("[]").ok).toBe(false);
  });
});
