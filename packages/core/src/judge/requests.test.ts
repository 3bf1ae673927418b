import { describe, expect, it } from "vitest";
import { FINAL_MS, JOIN_MS } from "./findings.js";
import { RequestJoin, ReplyList, type Replies } from "./requests.js";

const A = "02:00:5e:00:00:0a";
const B = "02:00:5e:00:00:0b";

/** replies lists (MAC, delay) pairs as a sighting's Replies. */
const replies = (...pairs: [string, number][]): Replies => pairs.reduce((l, [mac, delay]) => l.add(mac, delay), new ReplyList());

describe("RequestJoin", () => {
  it("joins one request seen by several capture points within JOIN_MS, and unions their replies", () => {
    const j = new RequestJoin();
    const t = 10_000;
    j.add("node-a/eth0", "192.0.2.1", t, replies([A, 1]), t);
    const r = j.add("node-b/eth0", "192.0.2.1", t + JOIN_MS, replies([B, 1]), t);
    expect(j.added).toBe(1);
    expect(r?.answerers()).toEqual([A, B]);
    expect(r?.ambiguous).toBe(false);
  });

  it("keeps requests apart beyond JOIN_MS, one sighting per capture point, and a resend merges", () => {
    const j = new RequestJoin();
    const one = j.add("node-a/eth0", "192.0.2.1", 10_000, replies(), 10_000);
    const two = j.add("node-b/eth0", "192.0.2.1", 10_000 + JOIN_MS + 1, replies(), 10_000);
    expect(two).not.toBe(one);
    const resend = j.add("node-a/eth0", "192.0.2.1", 10_000, replies([A, 1]), 10_100);
    expect(resend).toBe(one);
    expect(j.added).toBe(1);
  });

  it("marks requests of one asker within JOIN_MS of each other ambiguous instead of guessing", () => {
    const j = new RequestJoin();
    const first = j.add("node-a/eth0", "192.0.2.1", 10_000, replies([A, 1]), 10_000);
    const second = j.add("node-a/eth0", "192.0.2.1", 10_020, replies(), 10_000);
    expect(first?.ambiguous).toBe(true);
    expect(second?.ambiguous).toBe(true);
  });

  it("hands out requests once final, in time order, and joins a late sighting to a final request", () => {
    const j = new RequestJoin();
    j.add("node-a/eth0", "192.0.2.2", 10_100, replies(), 10_100);
    j.add("node-a/eth0", "192.0.2.1", 10_000, replies(), 10_100);
    expect(j.finalize(10_000 + FINAL_MS - 1)).toEqual([]);
    expect(j.finalize(10_100 + FINAL_MS).map((r) => r.asker)).toEqual(["192.0.2.1", "192.0.2.2"]);
    const late = j.add("node-b/eth0", "192.0.2.1", 10_001, replies([B, 1]), 10_000 + FINAL_MS + 500);
    expect(late?.points()).toHaveLength(2);
    const lost = j.add("node-b/eth0", "192.0.2.9", 10_001, replies(), 10_000 + FINAL_MS + 500);
    expect(lost?.late).toBe(true);
    expect(j.pending).toBe(false);
  });

  it("joins one request from a segment of 60 nodes: every node's sighting once, its replies kept apart", () => {
    const j = new RequestJoin();
    const t = 10_000;
    const points = Array.from({ length: 60 }, (_, k) => `node-${k}/eth0`);
    // Node 7 answers; every other node saw the broadcast request at about the same time, and says so once or twice.
    for (const [k, p] of points.entries()) j.add(p, "192.0.2.1", t + (k % 5), k === 7 ? replies([A, 0.3]) : replies(), t);
    for (const [k, p] of points.entries()) j.add(p, "192.0.2.1", t + (k % 5), replies(), t + 100);
    const r = j.add(points[59] ?? "", "192.0.2.1", t + 4, replies([B, 0.5]), t + 200);
    expect(r?.points()).toEqual(points);
    expect(points.map((p) => r?.seenAt(p))).toEqual(points.map((_, k) => t + (k % 5)));
    expect(r?.seenAt("node-60/eth0")).toBeUndefined();
    expect(r?.answerers()).toEqual([A, B]);
    expect(r?.ambiguous).toBe(false);
  });
});
