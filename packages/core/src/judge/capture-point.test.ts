import { describe, expect, it } from "vitest";
import { CapturePoint } from "./capture-point.js";
import { newArpReply, newArpRequest } from "../packet/arp.js";
import type { FrameFields } from "../packet/frame.js";
import { newNeighborSolicitation, newSolicitedAdvertisement, newUnsolicitedAdvertisement } from "../packet/ndp.js";
import {
  CLIENT6,
  CLIENT_IP,
  CLIENT_MAC,
  NODE_A_MAC,
  NODE_B_MAC,
  VIP,
  VIP6,
  dadProbe,
  frameFields as fields,
} from "../__tests__/fixtures.js";
import { REPLY_WINDOW_MS } from "./findings.js";

const OTHER_IP = "192.0.2.2";
const OTHER_MAC = "02:00:5e:00:00:02";

const request = (asker = CLIENT_IP, askerMac = CLIENT_MAC, ip = VIP) => fields(newArpRequest(askerMac, asker, ip));
const reply = (mac: string, to = CLIENT_IP, toMac = CLIENT_MAC, ip = VIP) => fields(newArpReply(mac, ip, toMac, to));

const NODE_A_LL = "fe80::a";
const NODE_B_LL = "fe80::b";
const ns = () => fields(newNeighborSolicitation(CLIENT_MAC, CLIENT6, VIP6));
const solicitedNa = (mac: string, linkLocal: string) => fields(newSolicitedAdvertisement(mac, linkLocal, VIP6, CLIENT_MAC, CLIENT6));
const unsolicitedNa = (mac: string, linkLocal: string) => fields(newUnsolicitedAdvertisement(mac, linkLocal, VIP6));

/** inVlan is a decoded frame as if it had come inside an 802.1Q tag with `vlan`. */
const inVlan = (f: FrameFields, vlan: number): FrameFields => Object.assign(f, { vlan });

describe("CapturePoint aggregates", () => {
  it("keeps the same address on two VLANs and untagged apart, and takes a priority tag (VLAN 0) as untagged", () => {
    const p = new CapturePoint(100);
    p.addFrame(inVlan(reply(NODE_A_MAC), 30), "eth0", 1000);
    p.addFrame(inVlan(reply(NODE_B_MAC), 40), "eth0", 1001);
    p.addFrame(inVlan(reply(NODE_A_MAC), 40), "eth0", 1002);
    p.addFrame(reply(NODE_A_MAC), "eth0", 1003);
    p.addFrame(inVlan(reply(NODE_A_MAC), 0), "eth0", 1004);
    // VID 4095 is reserved: such a frame is not folded at all.
    p.addFrame(inVlan(reply(NODE_B_MAC), 4095), "eth0", 1005);
    const seen = p
      .drain(100, 2000)
      .entries.map((e) => `${e.iface} ${String(e.vlan)} ${e.ip} ${e.mac} ${e.count}`)
      .sort();
    expect(seen).toEqual([
      `eth0 30 ${VIP} ${NODE_A_MAC} 1`,
      `eth0 40 ${VIP} ${NODE_A_MAC} 1`,
      `eth0 40 ${VIP} ${NODE_B_MAC} 1`,
      `eth0 null ${VIP} ${NODE_A_MAC} 2`,
    ]);
    // A request and its reply pair up inside one VLAN only.
    p.addFrame(inVlan(request(), 30), "eth0", 3000);
    p.addFrame(inVlan(reply(NODE_B_MAC), 40), "eth0", 3000.5);
    p.addFrame(inVlan(reply(NODE_A_MAC), 30), "eth0", 3001);
    const r = p.drain(100, 3000 + REPLY_WINDOW_MS + 1).requests;
    expect(r).toEqual([
      { ip: VIP, asker: CLIENT_IP, askerMac: CLIENT_MAC, iface: "eth0", vlan: 30, times: [3000], replies: [[0, NODE_A_MAC, 1]] },
    ]);
    // Put back, a batch keeps its VLANs.
    p.addFrame(inVlan(reply(NODE_B_MAC), 40), "eth0", 4000);
    const batch = p.drain(100, 4000);
    p.putBack(batch);
    expect(p.drain(100, 4000).entries.map((e) => [e.vlan, e.mac])).toEqual([[40, NODE_B_MAC]]);
  });

  it("folds repeats of one key into one entry with count and time span, per interface", () => {
    const p = new CapturePoint(10);
    p.addFrame(request(), "eth0", 1000);
    p.addFrame(request(), "eth0", 1500);
    p.addFrame(request(), "eth1", 1200);
    const { entries, dropped } = p.drain(100, 1500);
    expect(dropped).toBe(0);
    expect(entries).toHaveLength(2);
    expect(entries.find((e) => e.iface === "eth0")).toMatchObject({
      ip: VIP,
      mac: CLIENT_MAC,
      count: 2,
      firstSeen: 1000,
      lastSeen: 1500,
      kind: "request",
      ethSrc: null,
    });
    expect(p.size).toBe(0);
  });

  it("drains at most `max` entries and keeps the rest", () => {
    const p = new CapturePoint(10);
    for (let i = 1; i <= 5; i++) p.addFrame(reply(NODE_A_MAC, CLIENT_IP, CLIENT_MAC, `192.0.2.${100 + i}`), "eth0", i);
    expect(p.drain(3, 10).entries).toHaveLength(3);
    expect(p.drain(3, 10).entries).toHaveLength(2);
  });

  it("counts what it cannot hold instead of growing, and still merges known keys", () => {
    const p = new CapturePoint(2);
    for (const [ip, t] of [
      ["192.0.2.101", 1],
      ["192.0.2.102", 2],
      ["192.0.2.103", 3],
      ["192.0.2.101", 4],
    ] as const)
      p.addFrame(reply(NODE_A_MAC, CLIENT_IP, CLIENT_MAC, ip), "eth0", t);
    const { entries, dropped } = p.drain(10, 10);
    expect(dropped).toBe(1);
    expect(entries.find((e) => e.ip === "192.0.2.101")?.count).toBe(2);
  });

  it("keeps the Ethernet source of frames that lie about their sender", () => {
    const frame = newArpReply(NODE_A_MAC, VIP, CLIENT_MAC, CLIENT_IP);
    frame.set([0x02, 0x00, 0x5e, 0x00, 0x00, 0x99], 6);
    const p = new CapturePoint(10);
    p.addFrame(fields(frame), "eth0", 1000);
    expect(p.drain(10, 1000).entries[0]).toMatchObject({ mac: NODE_A_MAC, ethernetMismatch: 1, ethSrc: "02:00:5e:00:00:99" });
  });
});

describe("CapturePoint requests", () => {
  it("reports a request with its reply at the first drain after the reply, before the window closes", () => {
    const p = new CapturePoint(10);
    p.addFrame(request(), "eth0", 1000);
    expect(p.drain(10, 1000).requests).toEqual([]);
    p.addFrame(reply(NODE_A_MAC), "eth0", 1000.25);
    expect(p.drain(10, 1100).requests).toEqual([
      { ip: VIP, asker: CLIENT_IP, askerMac: CLIENT_MAC, iface: "eth0", vlan: null, times: [1000], replies: [[0, NODE_A_MAC, 0.25]] },
    ]);
    // A reply seen later for the same request comes in a later report, with the request's time again.
    p.addFrame(reply(NODE_B_MAC), "eth0", 1000.5);
    expect(p.drain(10, 1200).requests).toEqual([
      { ip: VIP, asker: CLIENT_IP, askerMac: CLIENT_MAC, iface: "eth0", vlan: null, times: [1000], replies: [[0, NODE_B_MAC, 0.5]] },
    ]);
    // Nothing more once its window is over; it is forgotten within a second after.
    expect(p.drain(10, 1000 + REPLY_WINDOW_MS + 1).requests).toEqual([]);
    expect(p.drain(10, 1000 + REPLY_WINDOW_MS + 1001).requests).toEqual([]);
    expect(p.pending).toBe(0);
  });

  it("reports a request nobody answered once its window is over, so the hub can count it", () => {
    const p = new CapturePoint(10);
    p.addFrame(request(), "eth0", 1000);
    expect(p.drain(10, 1000 + REPLY_WINDOW_MS).requests).toEqual([]);
    expect(p.drain(10, 1000 + REPLY_WINDOW_MS + 1).requests).toEqual([
      { ip: VIP, asker: CLIENT_IP, askerMac: CLIENT_MAC, iface: "eth0", vlan: null, times: [1000], replies: [] },
    ]);
  });

  it("attaches a reply to its asker's latest request within the window, and never to another asker's", () => {
    const p = new CapturePoint(10);
    p.addFrame(request(), "eth0", 1000);
    p.addFrame(request(OTHER_IP, OTHER_MAC), "eth0", 1050);
    p.addFrame(request(), "eth0", 1100);
    p.addFrame(reply(NODE_A_MAC), "eth0", 1101);
    // A reply long after any request answers nothing.
    p.addFrame(reply(NODE_A_MAC, OTHER_IP, OTHER_MAC), "eth0", 1050 + REPLY_WINDOW_MS + 5);
    const r = p.drain(10, 5000, false).requests;
    expect(r).toContainEqual({
      ip: VIP,
      asker: CLIENT_IP,
      askerMac: CLIENT_MAC,
      iface: "eth0",
      vlan: null,
      times: [1000, 1100],
      replies: [[1, NODE_A_MAC, 1]],
    });
    expect(r).toContainEqual({ ip: VIP, asker: OTHER_IP, askerMac: OTHER_MAC, iface: "eth0", vlan: null, times: [1050], replies: [] });
  });

  it("counts each MAC once per request, and reports everything when the input ends", () => {
    const p = new CapturePoint(10);
    p.addFrame(request(), "eth0", 1000);
    p.addFrame(reply(NODE_A_MAC), "eth0", 1001);
    p.addFrame(reply(NODE_A_MAC), "eth0", 1002);
    expect(p.drain(10, 1003, true).requests).toEqual([
      { ip: VIP, asker: CLIENT_IP, askerMac: CLIENT_MAC, iface: "eth0", vlan: null, times: [1000], replies: [[0, NODE_A_MAC, 1]] },
    ]);
  });

  it("takes back a batch that could not be sent, requests included, losing nothing", () => {
    const p = new CapturePoint(10);
    p.addFrame(request(), "eth0", 10);
    p.addFrame(reply(NODE_A_MAC), "eth0", 11);
    const batch = p.drain(10, 20);
    p.addFrame(request(), "eth0", 30);
    p.putBack(batch);
    const again = p.drain(10, 5000, true);
    expect(again.entries.find((e) => e.kind === "request")).toMatchObject({ count: 2, firstSeen: 10, lastSeen: 30 });
    expect(again.requests).toEqual([
      { ip: VIP, asker: CLIENT_IP, askerMac: CLIENT_MAC, iface: "eth0", vlan: null, times: [10, 30], replies: [[0, NODE_A_MAC, 1]] },
    ]);
  });

  it("bounds the requests it holds, counting the rest as dropped", () => {
    const p = new CapturePoint(2);
    for (let i = 0; i < 5; i++) p.addFrame(request(CLIENT_IP, CLIENT_MAC, `192.0.2.${10 + i}`), "eth0", 1000 + i);
    expect(p.pending).toBe(2);
    expect(p.drain(10, 1005).dropped).toBeGreaterThanOrEqual(3);
  });
});

describe("CapturePoint on NDP", () => {
  it("holds no request for a DAD probe (NS from ::): none pending, none reported answered or unanswered", () => {
    const p = new CapturePoint(10);
    const dad = fields(dadProbe(NODE_B_MAC));
    expect(dad.kind).toBe("ns-dad");
    p.addFrame(dad, "eth0", 1000);
    p.addFrame(inVlan(fields(dadProbe(NODE_B_MAC)), 30), "eth0", 1001);
    expect(p.pending).toBe(0);
    // Even an NA right after it answers nothing: there is no request to pair it with.
    p.addFrame(solicitedNa(NODE_A_MAC, NODE_A_LL), "eth0", 1001);
    const { entries, requests } = p.drain(10, 1000 + REPLY_WINDOW_MS + 1, true);
    expect(requests).toEqual([]);
    expect(entries.filter((e) => e.kind === "ns-dad").map((e) => [e.ip, e.vlan, e.mac, e.count])).toEqual([
      [VIP6, null, NODE_B_MAC, 1],
      [VIP6, 30, NODE_B_MAC, 1],
    ]);
    // A client's NS for the same address is a request: held, and reported unanswered once its window is over.
    p.addFrame(ns(), "eth0", 5000);
    expect(p.pending).toBe(1);
    expect(p.drain(10, 5000 + REPLY_WINDOW_MS + 1).requests).toEqual([
      { ip: VIP6, asker: CLIENT6, askerMac: CLIENT_MAC, iface: "eth0", vlan: null, times: [5000], replies: [] },
    ]);
  });

  it("pairs a solicited NA with its NS, and folds an unsolicited NA as an announcement that answers nothing", () => {
    const p = new CapturePoint(10);
    p.addFrame(ns(), "eth0", 1000);
    p.addFrame(solicitedNa(NODE_A_MAC, NODE_A_LL), "eth0", 1000.5);
    p.addFrame(unsolicitedNa(NODE_B_MAC, NODE_B_LL), "eth0", 1001);
    p.addFrame(unsolicitedNa(NODE_B_MAC, NODE_B_LL), "eth0", 1200);
    const { entries, requests } = p.drain(10, 1000 + REPLY_WINDOW_MS + 1, true);
    expect(requests).toEqual([
      { ip: VIP6, asker: CLIENT6, askerMac: CLIENT_MAC, iface: "eth0", vlan: null, times: [1000], replies: [[0, NODE_A_MAC, 0.5]] },
    ]);
    expect(entries.find((e) => e.kind === "na-unsolicited")).toMatchObject({
      ip: VIP6,
      mac: NODE_B_MAC,
      count: 2,
      firstSeen: 1001,
      lastSeen: 1200,
    });
  });
});
