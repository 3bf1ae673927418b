import { describe, expect, it } from "vitest";
import { newArpReply, newArpRequest, newNeighborSolicitation, newSolicitedAdvertisement, tagFrame } from "@whohas/core";
import { FrameRing } from "./ring.js";

const CLIENT = { mac: "02:00:5e:00:00:01", ip: "192.0.2.1" };
const A = "02:00:5e:00:00:0a";
const VIP = "192.0.2.200";
const OTHER = "192.0.2.201";
const VIP6 = "2001:db8::c8";
const T0 = Date.UTC(2026, 10, 29, 12, 0, 0);
const MINUTE = 60_000;
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

/** ARP requests and replies are 60 bytes: a record of 76 with its header. */
const RECORD = 76;
const request = (target = VIP) => newArpRequest(CLIENT.mac, CLIENT.ip, target);
/** priorityTagged gives `frame` an 802.1Q tag of VLAN 0: a priority, on the native VLAN. */
function priorityTagged(frame: Uint8Array): Uint8Array {
  const out = tagFrame(frame, 1, 5);
  out[14] = 5 << 5;
  out[15] = 0;
  return out;
}

function ring(maxBytes = 1 << 20, maxAgeMs = 10 * MINUTE): FrameRing {
  return new FrameRing({ maxBytes, maxAgeMs });
}

describe("FrameRing bounds", () => {
  it("holds no more than its bound in bytes under 200,000 frames, the oldest going first, each eviction counted", () => {
    const r = ring(64 * 1024);
    const frames = [request(), newArpReply(A, VIP, CLIENT.mac, CLIENT.ip), request(OTHER).subarray(0, 42)];
    let maxHeld = 0;
    let refused = 0;
    for (let i = 0; i < 200_000; i++) {
      if (!r.push(T0 + i / 50, "eth0", -1, frames[i % 3] ?? request())) refused++;
      maxHeld = Math.max(maxHeld, r.bytes);
    }
    expect(refused).toBe(0);
    expect(r.bound).toBe(64 * 1024);
    expect(maxHeld).toBeLessThanOrEqual(r.bound);
    // Records of 76, 76 and 60 bytes: all but the last few hundred are gone, and counted.
    expect(r.frames).toBeGreaterThan(900);
    expect(r.frames).toBeLessThan((64 * 1024) / 60);
    expect(r.evicted).toBe(200_000 - r.frames);
    // What remains is the newest, in order, with nothing lost in between.
    const held = r.select(CLIENT.ip, null, 0, Infinity, Infinity).frames;
    expect(held).toHaveLength(r.frames);
    const first = 200_000 - r.frames;
    expect(held.map((f) => hex(f.data))).toEqual(Array.from({ length: r.frames }, (_, k) => hex(frames[(first + k) % 3] ?? request())));
  });

  it("wraps records of every size around the end of its log without losing one", () => {
    const r = ring(1000);
    // Four rounds of every size the lengths cycle through (42 to 341 bytes): the 1,000-byte log wraps hundreds of times.
    for (let i = 0; i < 1200; i++) {
      const len = 42 + ((i * 7) % 300);
      const frame = new Uint8Array(len);
      frame.set(request().subarray(0, 42));
      frame[len - 1] = i & 0xff;
      expect(r.push(T0 + i, "eth0", -1, frame)).toBe(true);
      // The last byte varies; the sender (the client) stays.
      const held = r.select(CLIENT.ip, null, 0, Infinity, Infinity).frames;
      expect(held.length).toBe(r.frames);
      expect(held.at(-1)?.data).toEqual(frame);
      expect(held.map((f) => Number(f.tNs / 1_000_000n) - T0)).toEqual(
        Array.from({ length: held.length }, (_, k) => i - held.length + 1 + k),
      );
      expect(r.bytes).toBeLessThanOrEqual(r.bound);
    }
    // 1,200 full reads of the ring: under a second alone, over five beside the suite's image build.
  }, 30_000);

  it("drops frames older than its age bound when frames are pushed, and when told the time", () => {
    const r = ring(1 << 20, 10 * MINUTE);
    r.push(T0, "eth0", -1, request());
    r.push(T0 + 5 * MINUTE, "eth0", -1, request());
    r.push(T0 + 10 * MINUTE + 1, "eth0", -1, request());
    expect(r.frames).toBe(2);
    expect(r.evicted).toBe(1);
    expect(r.select(VIP, null, 0, Infinity, Infinity).heldFromMs).toBe(T0 + 5 * MINUTE);
    r.expire(T0 + 30 * MINUTE);
    expect(r).toMatchObject({ frames: 0, bytes: 0, evicted: 3 });
    expect(r.select(VIP, null, 0, Infinity, Infinity)).toEqual({ frames: [], truncated: false, heldFromMs: null });
  });

  it.each([
    { case: "an empty frame", frame: new Uint8Array(0), bound: 1024 },
    { case: "a frame larger than the ring", frame: new Uint8Array(1024), bound: 1024 },
    { case: "anything, in a ring of 0 bytes (evidence turned off)", frame: request(), bound: 0 },
  ])("refuses $case", ({ frame, bound }) => {
    const r = ring(bound);
    expect(r.push(T0, "eth0", -1, frame)).toBe(false);
    expect(r).toMatchObject({ frames: 0, bytes: 0 });
  });

  it("names interfaces by a small id and forgets a name once its last frame is gone", () => {
    const r = ring(RECORD * 4);
    for (let i = 0; i < 1000; i++) r.push(T0 + i, `veth${i}`, -1, request());
    const held = r.select(VIP, null, 0, Infinity, Infinity).frames;
    expect(held.map((f) => f.iface)).toEqual(["veth996", "veth997", "veth998", "veth999"]);
  });
});

describe("FrameRing.select", () => {
  /** A ring with the traffic of one incident on two interfaces, in two VLANs, over IPv4 and IPv6. */
  function incident(): FrameRing {
    const r = ring();
    r.push(T0, "eth0", -1, request());
    r.push(T0 + 1, "eth0", -1, request(OTHER));
    r.push(T0 + 2.5, "eth0", -1, newArpReply(A, VIP, CLIENT.mac, CLIENT.ip));
    // A frame of another interface arriving a little after a later one: selected in time order.
    r.push(T0 + 2.25, "eth1", -1, newArpReply("02:00:5e:00:00:0b", VIP, CLIENT.mac, CLIENT.ip));
    r.push(T0 + 3, "eth0", 42, tagFrame(request(), 42));
    r.push(T0 + 3, "eth0", 0, priorityTagged(request()));
    // The client asks for the VIP6; the node answers from it (source = VIP6), and NDP about another address.
    r.push(T0 + 4, "eth0", -1, newNeighborSolicitation(CLIENT.mac, "2001:db8::1", VIP6));
    r.push(T0 + 5, "eth0", -1, newSolicitedAdvertisement(A, VIP6, VIP6, CLIENT.mac, "2001:db8::1"));
    r.push(T0 + 6, "eth0", -1, newNeighborSolicitation(CLIENT.mac, "2001:db8::1", "2001:db8::99"));
    return r;
  }
  const times = (s: { frames: { tNs: bigint }[] }) => s.frames.map((f) => Number(f.tNs - BigInt(T0) * 1_000_000n) / 1e6);

  it.each<{ case: string; ip: string; vlan: number | null; from?: number; to?: number; want: number[] }>([
    { case: "an IPv4 address as target and sender, untagged and priority-tagged", ip: VIP, vlan: null, want: [0, 2.25, 2.5, 3] },
    { case: "the asker, by sender address", ip: CLIENT.ip, vlan: null, want: [0, 1, 2.25, 2.5, 3] },
    { case: "another address", ip: OTHER, vlan: null, want: [1] },
    { case: "a VLAN", ip: VIP, vlan: 42, want: [3] },
    { case: "an absent VLAN", ip: VIP, vlan: 7, want: [] },
    { case: "an IPv6 target and source", ip: VIP6, vlan: null, want: [4, 5] },
    { case: "an IPv6 address written another way", ip: "2001:0db8:0:0::00c8", vlan: null, want: [4, 5] },
    { case: "an IPv6 source only", ip: "2001:db8::1", vlan: null, want: [4, 6] },
    { case: "a window, both ends included", ip: VIP, vlan: null, from: T0 + 2.25, to: T0 + 3, want: [2.25, 2.5, 3] },
    { case: "a window before anything held", ip: VIP, vlan: null, from: 0, to: T0 - 1, want: [] },
  ])("finds the frames about $case", ({ ip, vlan, from, to, want }) => {
    const s = incident().select(ip, vlan, from ?? 0, to ?? Infinity, Infinity);
    expect(times(s)).toEqual(want);
    expect(s).toMatchObject({ truncated: false, heldFromMs: T0 });
  });

  it("copies each frame out with its interface, VLAN and exact time", () => {
    const s = incident().select(VIP, 42, 0, Infinity, Infinity);
    expect(s.frames).toEqual([{ tNs: BigInt(T0 + 3) * 1_000_000n, iface: "eth0", vlan: 42, data: tagFrame(request(), 42) }]);
    // A fraction of a millisecond is kept as far as a double of milliseconds since the epoch holds it (a quarter of a µs).
    const r = ring();
    r.push(T0 + 0.5, "eth0", -1, request());
    r.push(T0 + 0.123456, "eth0", -1, request());
    const [fine, half] = r.select(VIP, null, 0, Infinity, Infinity).frames.map((f) => f.tNs - BigInt(T0) * 1_000_000n);
    expect(half).toBe(500_000n);
    expect(Math.abs(Number(fine) - 123_456)).toBeLessThan(250);
  });

  it("stops before the frame that would pass maxBytes, and says so", () => {
    const r = incident();
    expect(times(r.select(VIP, null, 0, Infinity, 180))).toEqual([0, 2.25, 2.5]);
    expect(r.select(VIP, null, 0, Infinity, 180).truncated).toBe(true);
    expect(r.select(VIP, null, 0, Infinity, 59)).toMatchObject({ frames: [], truncated: true });
    expect(r.select(VIP, null, 0, Infinity, 4 * 60 + 4).truncated).toBe(false);
  });

  it("gives frames that stay as they were when the ring moves on", () => {
    const r = ring(RECORD * 2);
    r.push(T0, "eth0", -1, request());
    const [held] = r.select(VIP, null, 0, Infinity, Infinity).frames;
    for (let i = 1; i < 10; i++) r.push(T0 + i, "eth0", -1, request(OTHER));
    expect(held?.data).toEqual(request());
  });

  it("finds nothing for text that is not an IP", () => {
    expect(incident().select("vip.example", null, 0, Infinity, Infinity).frames).toEqual([]);
  });
});
