import { describe, expect, it } from "vitest";
import { Analyzer, raceWinner, type Change } from "./analyzer.js";
import { CLEAR_AFTER_MS, FLIP_FLOP_MS, NO_RESPONDER_MS, SPLIT_BRAIN_MS } from "./findings.js";
import { ARP_OP_REPLY, ARP_OP_REQUEST, encodeArpFrame, newArpReply, newArpRequest, newGratuitousArp } from "../packet/arp.js";
import { decodeFrame, newFrameFields } from "../packet/frame.js";
import { LINKTYPE_ETHERNET } from "../packet/link.js";
import { newNeighborSolicitation, newSolicitedAdvertisement } from "../packet/ndp.js";

const CLIENT = { mac: "02:00:5e:00:00:01", ip: "192.0.2.1" };
const CLIENT2 = { mac: "02:00:5e:00:00:02", ip: "192.0.2.2" };
const A = "02:00:5e:00:00:0a";
const B = "02:00:5e:00:00:0b";
const C = "02:00:5e:00:00:0c";
const VIP = "192.0.2.200";

function feed(an: Analyzer, frame: Uint8Array, t: number): readonly Change[] {
  const f = newFrameFields();
  const err = decodeFrame(frame, LINKTYPE_ETHERNET, f);
  if (err !== null) throw new Error(err.message);
  return an.observe(f, t);
}
const ask = (t: number, c = CLIENT) => newArpRequest(c.mac, c.ip, VIP);
const reply = (mac: string, c = CLIENT) => newArpReply(mac, VIP, c.mac, c.ip);
const findings = (an: Analyzer) => an.report()[0]?.findings.map((f) => [f.type, f.active]) ?? [];

describe("Analyzer", () => {
  it("counts responders and requests per IP", () => {
    const an = new Analyzer();
    feed(an, ask(0), 0);
    feed(an, reply(A), 1);
    feed(an, ask(0), 1000);
    feed(an, reply(A), 1001);
    expect(an.report()).toEqual([
      { ip: VIP, requests: 2, responders: [{ mac: A, replies: 2, gratuitous: 0, firstSeen: 1, lastSeen: 1001 }], findings: [] },
    ]);
  });

  it("raises multi-responder when two MACs answer one request, with both MACs as evidence", () => {
    const an = new Analyzer();
    feed(an, ask(0), 0);
    feed(an, reply(A), 1);
    const changes = feed(an, reply(B), 2);
    expect(changes).toContainEqual({ kind: "finding-raised", ip: VIP, finding: "multi-responder" });
    const f = an.report()[0]?.findings.find((x) => x.type === "multi-responder");
    expect(f).toMatchObject({ macs: [A, B], firstSeen: 2, count: 1, active: true, detail: `one request from 192.0.2.1 answered by ${A} and ${B}` });
  });

  it("does not call two answers to two different requests multi-responder", () => {
    const an = new Analyzer();
    feed(an, ask(0), 0);
    feed(an, reply(A), 1);
    feed(an, ask(0, CLIENT2), 10);
    feed(an, reply(A, CLIENT2), 11);
    feed(an, ask(0), 2000);
    feed(an, reply(A), 2001);
    expect(findings(an)).toEqual([]);
  });

  it("ignores a reply that comes more than a second after the request", () => {
    const an = new Analyzer();
    feed(an, ask(0), 0);
    feed(an, reply(A), 1);
    feed(an, reply(B), 1500);
    expect(findings(an).map(([t]) => t)).not.toContain("multi-responder");
  });

  it("raises no-responder 3 s after an unanswered request, not before", () => {
    const an = new Analyzer();
    feed(an, ask(0), 0);
    expect(an.tick(NO_RESPONDER_MS - 1)).toEqual([]);
    expect(an.tick(NO_RESPONDER_MS)).toContainEqual({ kind: "finding-raised", ip: VIP, finding: "no-responder" });
  });

  it("keeps no-responder raised while requests go unanswered, and raises it again after an answer and a new streak", () => {
    const an = new Analyzer();
    for (let t = 0; t <= CLEAR_AFTER_MS * 2; t += 1000) feed(an, ask(0), t);
    expect(findings(an)).toEqual([["no-responder", true]]);
    feed(an, reply(A), CLEAR_AFTER_MS * 2 + 1);
    expect(an.tick(CLEAR_AFTER_MS * 3 + 2)).toContainEqual({ kind: "finding-cleared", ip: VIP, finding: "no-responder" });
    const t = CLEAR_AFTER_MS * 4;
    feed(an, ask(0), t);
    expect(feed(an, ask(0), t + NO_RESPONDER_MS)).toContainEqual({ kind: "finding-raised", ip: VIP, finding: "no-responder" });
  });

  it("raises changed for a new MAC and flip-flop when the previous one comes back", () => {
    const an = new Analyzer();
    feed(an, ask(0), 0);
    feed(an, reply(A), 1);
    feed(an, ask(0), 5000);
    expect(feed(an, reply(B), 5001)).toContainEqual({ kind: "finding-raised", ip: VIP, finding: "changed" });
    feed(an, ask(0), 10_000);
    expect(feed(an, reply(A), 10_001)).toContainEqual({ kind: "finding-raised", ip: VIP, finding: "flip-flop" });
  });

  it("calls a return after the flip-flop window a change, not a flip-flop", () => {
    const an = new Analyzer();
    feed(an, reply(A), 0);
    feed(an, reply(B), 1);
    feed(an, reply(A), 2 + FLIP_FLOP_MS);
    expect(findings(an).map(([t]) => t)).toEqual(["changed"]);
  });

  it("raises split-brain when two MACs announce within 10 s, not when 11 s apart", () => {
    const near = new Analyzer();
    feed(near, newGratuitousArp(ARP_OP_REQUEST, A, VIP), 0);
    feed(near, newGratuitousArp(ARP_OP_REPLY, B, VIP), SPLIT_BRAIN_MS);
    expect(findings(near).map(([t]) => t)).toContain("split-brain");
    const far = new Analyzer();
    feed(far, newGratuitousArp(ARP_OP_REQUEST, A, VIP), 0);
    feed(far, newGratuitousArp(ARP_OP_REQUEST, B, VIP), SPLIT_BRAIN_MS + 1000);
    expect(findings(far).map(([t]) => t)).not.toContain("split-brain");
    expect(far.report()[0]?.responders.map((r) => r.gratuitous)).toEqual([1, 1]);
  });

  it("flags an ethernet mismatch and keeps the frame's answer", () => {
    const an = new Analyzer();
    const nlb = encodeArpFrame({ ethDst: CLIENT.mac, ethSrc: C, op: ARP_OP_REPLY, senderMac: A, senderIp: VIP, targetMac: CLIENT.mac, targetIp: CLIENT.ip });
    feed(an, nlb, 5);
    expect(an.report()[0]).toMatchObject({ responders: [{ mac: A, replies: 1 }], findings: [{ type: "ethernet-mismatch", macs: [A, C] }] });
  });

  it("raises wrong-owner for a MAC that is not the expected owner's", () => {
    const an = new Analyzer({ expectedOwners: new Map([[VIP, [A]]]) });
    feed(an, ask(0), 0);
    feed(an, reply(A), 1);
    expect(findings(an)).toEqual([]);
    feed(an, ask(0), 2000);
    feed(an, reply(B), 2001);
    expect(an.report()[0]?.findings.find((f) => f.type === "wrong-owner")).toMatchObject({ macs: [B], detail: `${B} answered, the expected owner is ${A}` });
  });

  it("clears a finding after a quiet period and raises it again on new evidence (hysteresis)", () => {
    const an = new Analyzer();
    feed(an, ask(0), 0);
    feed(an, reply(A), 1);
    feed(an, reply(B), 2);
    expect(an.tick(CLEAR_AFTER_MS - 100)).not.toContainEqual(expect.objectContaining({ kind: "finding-cleared" }));
    expect(an.tick(CLEAR_AFTER_MS + 2)).toContainEqual({ kind: "finding-cleared", ip: VIP, finding: "multi-responder" });
    const t = CLEAR_AFTER_MS + 10_000;
    feed(an, ask(0), t);
    feed(an, reply(A), t + 1);
    expect(feed(an, reply(B), t + 2)).toContainEqual({ kind: "finding-raised", ip: VIP, finding: "multi-responder" });
  });

  it("treats an identical repeat of the last frame as a no-op", () => {
    const an = new Analyzer();
    feed(an, ask(0), 0);
    feed(an, reply(A), 1);
    const before = JSON.stringify(an.report());
    expect(feed(an, reply(A), 1)).toEqual([]);
    expect(JSON.stringify(an.report())).toBe(before);
  });

  it("analyses NDP the same way", () => {
    const an = new Analyzer();
    const vip6 = "2001:db8::c8";
    feed(an, newNeighborSolicitation(CLIENT.mac, "2001:db8::1", vip6), 0);
    feed(an, newSolicitedAdvertisement(A, "fe80::a", vip6, CLIENT.mac, "2001:db8::1"), 1);
    feed(an, newSolicitedAdvertisement(B, "fe80::b", vip6, CLIENT.mac, "2001:db8::1"), 2);
    expect(an.report()[0]).toMatchObject({ ip: vip6, requests: 1, findings: [expect.objectContaining({ type: "multi-responder" }), expect.objectContaining({ type: "changed" })] });
  });

  it("does not count probes as requests", () => {
    const an = new Analyzer();
    feed(an, newArpRequest(CLIENT.mac, "0.0.0.0", VIP), 0);
    expect(an.report()[0]?.requests).toBe(0);
    expect(an.tick(10_000)).toEqual([]);
  });
});

describe("raceWinner", () => {
  it("picks the smallest latency, whatever the capture points' clocks say", () => {
    expect(raceWinner([{ capturePoint: "node-1", mac: A, latencyMs: 0.21 }, { capturePoint: "node-2", mac: B, latencyMs: 0.08 }])).toBe(B);
    expect(raceWinner([{ capturePoint: "x", mac: B, latencyMs: 1 }, { capturePoint: "y", mac: A, latencyMs: 1 }])).toBe(A);
    expect(raceWinner([])).toBeNull();
  });
});
