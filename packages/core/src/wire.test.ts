import { describe, expect, it } from "vitest";
import { WIRE_VERSION, parseAgentMessage, parseHubMessage } from "./wire.js";

describe("parseAgentMessage", () => {
  it("accepts a hello", () => {
    const msg = {
      v: WIRE_VERSION,
      type: "hello",
      node: "node-a",
      agentVersion: "0.1.0",
      interfaces: [{ name: "eth0", mac: "02:00:5e:00:00:0a", up: true }],
    };
    expect(parseAgentMessage(JSON.stringify(msg))).toEqual({ ok: true, value: msg });
  });

  it.each([
    { case: "not JSON", text: "{nope", msg: /^wire: not JSON/, reason: "not-json" },
    { case: "unknown type", text: JSON.stringify({ v: WIRE_VERSION, type: "shout" }), msg: /^wire: type:/, reason: "invalid" },
    {
      case: "another version",
      text: JSON.stringify({ v: 1, type: "heartbeat", t: 1 }),
      msg: /^wire: version 1, this end speaks 2: run the agent and the hub of the same release$/,
      reason: "version",
    },
    {
      case: "bad IP in an entry",
      text: JSON.stringify({
        v: WIRE_VERSION,
        type: "observations",
        dropped: 0,
        requests: [],
        entries: [
          {
            ip: "300.1.1.1",
            mac: "02:00:5e:00:00:0a",
            kind: "reply",
            iface: "eth0",
            count: 1,
            firstSeen: 1,
            lastSeen: 1,
            targetMac: "02:00:5e:00:00:0a",
            ethernetMismatch: 0,
            ethSrc: null,
          },
        ],
      }),
      msg: /^wire: entries\.0\.ip: not an IP address/,
      reason: "invalid",
    },
    {
      case: "a reply past the reply window",
      text: JSON.stringify({
        v: WIRE_VERSION,
        type: "observations",
        dropped: 0,
        entries: [],
        requests: [{ ip: "192.0.2.7", asker: "192.0.2.1", iface: "eth0", times: [1], replies: [[0, "02:00:5e:00:00:0a", 5000]] }],
      }),
      msg: /^wire: requests\.0\.replies\.0\.2: /,
      reason: "invalid",
    },
  ])("refuses $case with a reason", ({ text, msg, reason }) => {
    const r = parseAgentMessage(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect([r.reason, r.message]).toEqual([reason, expect.stringMatching(msg)]);
  });

  it("accepts observations with request reports", () => {
    const msg = {
      v: WIRE_VERSION,
      type: "observations",
      dropped: 0,
      entries: [],
      requests: [{ ip: "192.0.2.7", asker: "192.0.2.1", iface: "eth0", times: [1000, 2000], replies: [[1, "02:00:5e:00:00:0a", 0.4]] }],
    };
    expect(parseAgentMessage(JSON.stringify(msg))).toEqual({ ok: true, value: msg });
  });

  it("parses hub messages", () => {
    expect(parseHubMessage(JSON.stringify({ v: WIRE_VERSION, type: "welcome", hubVersion: "x" })).ok).toBe(true);
    expect(parseHubMessage("[]").ok).toBe(false);
  });
});
