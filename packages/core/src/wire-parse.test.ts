import { describe, expect, it } from "vitest";
import { FLUSH_MS, MAX_FLUSH_MS, WIRE_VERSION } from "./wire.js";
import { fastObservations, parseAgentMessage, parseHubMessage } from "./wire-parse.js";

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

  it("takes a pace within FLUSH_MS and MAX_FLUSH_MS, and a hello that says it takes one", () => {
    const pace = (flushMs: number) => parseHubMessage(JSON.stringify({ v: WIRE_VERSION, type: "pace", flushMs }));
    expect(pace(FLUSH_MS)).toEqual({ ok: true, value: { v: WIRE_VERSION, type: "pace", flushMs: FLUSH_MS } });
    expect(pace(MAX_FLUSH_MS).ok).toBe(true);
    for (const bad of [FLUSH_MS - 1, MAX_FLUSH_MS + 1, 250.5]) expect(pace(bad).ok).toBe(false);
    const hello = { v: WIRE_VERSION, type: "hello", node: "node-a", agentVersion: "0.1.0", interfaces: [], flush: true, pace: true };
    expect(parseAgentMessage(JSON.stringify(hello))).toEqual({ ok: true, value: hello });
    expect(parseAgentMessage(JSON.stringify({ ...hello, pace: false })).ok).toBe(false);
  });
});

describe("the observations fast path", () => {
  const good = {
    v: WIRE_VERSION,
    type: "observations",
    dropped: 0,
    entries: [
      {
        ip: "192.0.2.10",
        mac: "02:00:5e:00:00:0a",
        kind: "reply",
        iface: "eth0",
        count: 2,
        firstSeen: 1,
        lastSeen: 2,
        targetMac: null,
        ethernetMismatch: 0,
        ethSrc: null,
      },
    ],
    requests: [{ ip: "192.0.2.10", asker: "192.0.2.1", iface: "eth0", times: [1, 2], replies: [[0, "02:00:5e:00:00:0a", 0.3]] }],
  };
  /** Each way to spoil the message, with what the schema says of it. */
  const spoiled: [string, (m: typeof good) => unknown][] = [
    ["a bad MAC", (m) => ({ ...m, entries: [{ ...m.entries[0], mac: "zz" }] })],
    ["an unknown kind", (m) => ({ ...m, entries: [{ ...m.entries[0], kind: "shout" }] })],
    ["a zero count", (m) => ({ ...m, entries: [{ ...m.entries[0], count: 0 }] })],
    ["an unsafe time", (m) => ({ ...m, entries: [{ ...m.entries[0], lastSeen: 2 ** 60 }] })],
    ["a long interface", (m) => ({ ...m, entries: [{ ...m.entries[0], iface: "x".repeat(16) }] })],
    ["a reply past the window", (m) => ({ ...m, requests: [{ ...m.requests[0], replies: [[0, "02:00:5e:00:00:0a", 5000]] }] })],
    ["no times", (m) => ({ ...m, requests: [{ ...m.requests[0], times: [] }] })],
    ["a bad asker", (m) => ({ ...m, requests: [{ ...m.requests[0], asker: "nope" }] })],
    ["no requests", (m) => ({ ...m, requests: undefined })],
    ["a negative drop count", (m) => ({ ...m, dropped: -1 })],
  ];

  it("takes a well-formed message as it is, and what it does not take goes to the schema, which says why", () => {
    expect(parseAgentMessage(JSON.stringify(good))).toEqual({ ok: true, value: good });
    for (const [what, spoil] of spoiled) {
      const r = parseAgentMessage(JSON.stringify(spoil(good)));
      expect([what, r.ok]).toEqual([what, false]);
      if (!r.ok) expect(r.message).toMatch(/^wire: (entries|requests|dropped)/);
    }
    // What agents send, with VLANs: taken by the fast path, the VLAN kept; a VLAN out of range goes to the schema,
    // which refuses it.
    const tagged = {
      ...good,
      entries: [{ ...good.entries[0], vlan: 30 }],
      requests: [{ ...good.requests[0], vlan: null }],
    };
    expect(fastObservations(JSON.parse(JSON.stringify(tagged)))).toEqual(tagged);
    expect(fastObservations(JSON.parse(JSON.stringify(good)))).toEqual(good);
    expect(fastObservations({ ...tagged, entries: [{ ...good.entries[0], vlan: 4095 }] })).toBeNull();
    expect(parseAgentMessage(JSON.stringify({ ...tagged, entries: [{ ...good.entries[0], vlan: 4095 }] })).ok).toBe(false);
    // A field it does not know: the schema takes the message and leaves the field out.
    const extra = parseAgentMessage(JSON.stringify({ ...good, entries: [{ ...good.entries[0], peerIp: "192.0.2.1" }] }));
    expect(extra).toEqual({ ok: true, value: good });
  });

  it("takes a report's asker MAC, optional for agents before it, and only on a report", () => {
    const withMac = { ...good, requests: [{ ...good.requests[0], askerMac: "02:00:5e:00:00:01", vlan: null }] };
    expect(fastObservations(JSON.parse(JSON.stringify(withMac)))).toEqual(withMac);
    expect(parseAgentMessage(JSON.stringify(withMac))).toEqual({ ok: true, value: withMac });
    // A bad MAC goes to the schema, which refuses it; on an aggregate the field is unknown: left out by the schema.
    const bad = { ...good, requests: [{ ...good.requests[0], askerMac: "zz" }] };
    expect(fastObservations(bad)).toBeNull();
    expect(parseAgentMessage(JSON.stringify(bad))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^wire: requests\.0\.askerMac/) as string,
    });
    const onAggregate = { ...good, entries: [{ ...good.entries[0], askerMac: "02:00:5e:00:00:01" }] };
    expect(fastObservations(onAggregate)).toBeNull();
    expect(parseAgentMessage(JSON.stringify(onAggregate))).toEqual({ ok: true, value: good });
  });
});
