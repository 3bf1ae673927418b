import { describe, expect, it } from "vitest";
import { Aggregator } from "./aggregate.js";
import { classifyFrame, type Observation } from "./packet/classify.js";
import { newArpReply, newArpRequest } from "./packet/arp.js";
import { decodeFrame, newFrameFields } from "./packet/frame.js";
import { LINKTYPE_ETHERNET } from "./packet/link.js";
import { CLIENT_IP, CLIENT_MAC, NODE_A_MAC, VIP } from "./__tests__/fixtures.js";

function requestFor(ip: string): Observation {
  const out = classifyFrame(newArpRequest(CLIENT_MAC, CLIENT_IP, ip));
  if (out.kind !== "observed") throw new Error(out.message);
  return out.obs;
}

describe("Aggregator", () => {
  it("folds decoded frames (the capture path) into the same entries as observations", () => {
    const frame = newArpRequest(CLIENT_MAC, CLIENT_IP, VIP);
    const f = newFrameFields();
    expect(decodeFrame(frame, LINKTYPE_ETHERNET, f)).toBeNull();
    const a = new Aggregator(10);
    a.addFrame(f, "eth0", 1000);
    a.addFrame(f, "eth0", 1500);
    const b = new Aggregator(10);
    b.add(requestFor(VIP), "eth0", 1000);
    b.add(requestFor(VIP), "eth0", 1500);
    expect(a.drain(10)).toEqual(b.drain(10));
  });

  it("folds repeats of one key into one entry with count and time span", () => {
    const a = new Aggregator(10);
    a.add(requestFor(VIP), "eth0", 1000);
    a.add(requestFor(VIP), "eth0", 1500);
    a.add(requestFor(VIP), "eth1", 1200);
    const { entries, dropped } = a.drain(100);
    expect(dropped).toBe(0);
    expect(entries).toHaveLength(2);
    expect(entries.find((e) => e.iface === "eth0")).toMatchObject({ count: 2, firstSeen: 1000, lastSeen: 1500, kind: "request" });
    expect(a.size).toBe(0);
  });

  it("drains at most `max` entries and keeps the rest", () => {
    const a = new Aggregator(10);
    for (let i = 1; i <= 5; i++) a.add(requestFor(`192.0.2.${i}`), "eth0", i);
    expect(a.drain(3).entries).toHaveLength(3);
    expect(a.drain(3).entries).toHaveLength(2);
  });

  it("counts what it cannot hold instead of growing, and still merges known keys", () => {
    const a = new Aggregator(2);
    a.add(requestFor("192.0.2.1"), "eth0", 1);
    a.add(requestFor("192.0.2.2"), "eth0", 2);
    a.add(requestFor("192.0.2.3"), "eth0", 3);
    a.add(requestFor("192.0.2.1"), "eth0", 4);
    const { entries, dropped } = a.drain(10);
    expect(dropped).toBe(1);
    expect(entries.find((e) => e.ip === "192.0.2.1")?.count).toBe(2);
  });

  it("merges a batch put back after a failed send without losing counts", () => {
    const a = new Aggregator(10);
    a.add(requestFor(VIP), "eth0", 10);
    const batch = a.drain(10).entries;
    a.add(requestFor(VIP), "eth0", 20);
    for (const e of batch) a.merge(e);
    expect(a.drain(10).entries).toEqual([expect.objectContaining({ count: 2, firstSeen: 10, lastSeen: 20 })]);
  });

  it("times each reply from the request seen before it, and carries the timings through putBack", () => {
    const f = newFrameFields();
    const a = new Aggregator(10);
    const frame = (b: Uint8Array) => {
      expect(decodeFrame(b, LINKTYPE_ETHERNET, f)).toBeNull();
      return f;
    };
    a.addFrame(frame(newArpRequest(CLIENT_MAC, CLIENT_IP, VIP)), "eth0", 1000);
    a.addFrame(frame(newArpReply(NODE_A_MAC, VIP, CLIENT_MAC, CLIENT_IP)), "eth0", 1000.4);
    a.addFrame(frame(newArpRequest(CLIENT_MAC, CLIENT_IP, VIP)), "eth0", 2000);
    a.addFrame(frame(newArpReply(NODE_A_MAC, VIP, CLIENT_MAC, CLIENT_IP)), "eth0", 2000.6);
    // A reply long after any request is not timed.
    a.addFrame(frame(newArpReply(NODE_A_MAC, VIP, CLIENT_MAC, CLIENT_IP)), "eth0", 9000);
    const { entries } = a.drain(10);
    const reply = entries.find((e) => e.kind === "reply");
    expect(reply).toMatchObject({ count: 3, latencyCount: 2, latencySumMs: 1 });
    expect(entries.find((e) => e.kind === "request")?.latencyCount).toBeUndefined();
    a.putBack(entries, 0);
    expect(a.drain(10).entries.find((e) => e.kind === "reply")).toMatchObject({ latencyCount: 2, latencySumMs: 1 });
  });
});
