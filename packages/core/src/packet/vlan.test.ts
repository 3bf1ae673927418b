import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { VLAN_ID_MAX, VLAN_ID_MIN, VLAN_PRIORITY_MAX, tagFrame, untagFrame } from "./vlan.js";
import { decodeEthernet } from "./link.js";
import { TPID_8021AD, TPID_8021Q, TPID_QINQ_LEGACY } from "./ethernet.js";
import { classifyFrame } from "./classify.js";
import { newArpRequest } from "./arp.js";
import { newNeighborSolicitation } from "./ndp.js";
import { CLIENT_IP, CLIENT_MAC, VIP, hex } from "../__tests__/fixtures.js";

const MACS = "ffffffffffff 02005e000001";
const ARP_REQUEST = "0001 0800 06 04 0001 02005e000001 c0000201 000000000000 c00002c8";

describe("tagFrame", () => {
  it.each([
    {
      case: "VLAN 30, priority 0",
      vlan: 30,
      priority: 0,
      tagged: `${MACS} 8100 001e 0806 ${ARP_REQUEST}`, // TCI 0x001e: PCP 0, DEI 0, VID 30
    },
    {
      case: "the highest VLAN, priority 7",
      vlan: 4094,
      priority: 7,
      tagged: `${MACS} 8100 effe 0806 ${ARP_REQUEST}`, // TCI 0xeffe: PCP 7 (111), DEI 0, VID 0xffe
    },
    {
      case: "VLAN 1, priority 5",
      vlan: 1,
      priority: 5,
      tagged: `${MACS} 8100 a001 0806 ${ARP_REQUEST}`, // TCI 0xa001: PCP 5 (101), DEI 0, VID 1
    },
  ])("inserts the tag after the MACs: $case", ({ vlan, priority, tagged }) => {
    const frame = hex(`${MACS} 0806 ${ARP_REQUEST}`);
    const before = Uint8Array.from(frame);
    expect(tagFrame(frame, vlan, priority)).toEqual(hex(tagged));
    expect(frame).toEqual(before);
  });

  it("puts a second tag outside the first (the outer one is what decoders report)", () => {
    const inner = tagFrame(hex(`${MACS} 0806 ${ARP_REQUEST}`), 40);
    const outer = tagFrame(inner, 30);
    expect(outer).toEqual(hex(`${MACS} 8100 001e 8100 0028 0806 ${ARP_REQUEST}`));
    expect(decodeEthernet(outer)).toMatchObject({ ok: true, value: { vlan: 30, etherType: 0x0806, payloadOffset: 22 } });
  });

  it("tags a header-only frame", () => {
    expect(tagFrame(hex(`${MACS} 0806`), 2)).toEqual(hex(`${MACS} 8100 0002 0806`));
  });

  it.each([
    { case: "VID 0 (a priority tag, no VLAN)", vlan: 0 },
    { case: "VID 4095 (reserved)", vlan: 4095 },
    { case: "a negative VID", vlan: -1 },
    { case: "a VID past 12 bits", vlan: 5000 },
    { case: "a fraction", vlan: 30.5 },
    { case: "NaN", vlan: Number.NaN },
  ])("refuses $case", ({ vlan }) => {
    expect(() => tagFrame(hex(`${MACS} 0806 ${ARP_REQUEST}`), vlan)).toThrow(RangeError);
    expect(() => tagFrame(hex(`${MACS} 0806 ${ARP_REQUEST}`), vlan)).toThrow(/^vlan: VLAN ID .* is outside 1\.\.4094$/);
  });

  it.each([
    { case: "8", priority: 8 },
    { case: "-1", priority: -1 },
    { case: "a fraction", priority: 1.5 },
  ])("refuses priority $case", ({ priority }) => {
    expect(() => tagFrame(hex(`${MACS} 0806 ${ARP_REQUEST}`), 30, priority)).toThrow(/^vlan: priority .* is outside 0\.\.7$/);
  });

  it("refuses a frame too short to hold an Ethernet header", () => {
    expect(() => tagFrame(hex(MACS), 30)).toThrow(RangeError);
    expect(() => tagFrame(new Uint8Array(13), 30)).toThrow("vlan: a frame of 13 bytes has no Ethernet header (14) to tag");
  });
});

describe("untagFrame", () => {
  it.each([
    { case: "an 802.1Q tag", tagged: `${MACS} 8100 001e 0806 ${ARP_REQUEST}`, vlan: 30 },
    { case: "a tag with priority and DEI set", tagged: `${MACS} 8100 f064 0806 ${ARP_REQUEST}`, vlan: 100 }, // PCP 7, DEI 1, VID 100
    { case: "a priority tag (VID 0: no VLAN)", tagged: `${MACS} 8100 a000 0806 ${ARP_REQUEST}`, vlan: null },
    { case: "the outer of two tags", tagged: `${MACS} 8100 001e 8100 0028 0806`, vlan: 30, rest: `${MACS} 8100 0028 0806` },
    { case: "a tag right before the end", tagged: `${MACS} 8100 0fa0 0806`, vlan: 4000, rest: `${MACS} 0806` },
  ])("removes $case", ({ tagged, vlan, rest }) => {
    const frame = hex(tagged);
    const before = Uint8Array.from(frame);
    expect(untagFrame(frame)).toEqual({ vlan, frame: hex(rest ?? `${MACS} 0806 ${ARP_REQUEST}`) });
    expect(frame).toEqual(before);
  });

  it("returns a copy, never a view into the buffer it was given", () => {
    const frame = hex(`${MACS} 8100 001e 0806 ${ARP_REQUEST}`);
    const out = untagFrame(frame).frame;
    frame.fill(0);
    expect(out).toEqual(hex(`${MACS} 0806 ${ARP_REQUEST}`));
  });

  it.each([
    { case: "an untagged frame", bytes: `${MACS} 0806 ${ARP_REQUEST}` },
    { case: "an 802.1ad service tag (not 802.1Q)", bytes: `${MACS} 88a8 001e 0806 ${ARP_REQUEST}` },
    { case: "a legacy Q-in-Q tag (0x9100)", bytes: `${MACS} 9100 001e 0806 ${ARP_REQUEST}` },
    { case: "a frame that ends inside its tag", bytes: `${MACS} 8100 001e` },
    { case: "a frame that ends before its EtherType", bytes: `${MACS} 8100 001e 08` },
    { case: "a frame shorter than two MACs", bytes: "ffffffff" },
    { case: "no bytes", bytes: "" },
  ])("gives back $case as it is, with no VLAN", ({ bytes }) => {
    const frame = hex(bytes);
    const out = untagFrame(frame);
    expect(out.vlan).toBeNull();
    expect(out.frame).toBe(frame);
  });
});

describe("tagged frames through the decoders", () => {
  it("a tagged ARP request classifies with its VLAN; untagged again, without", () => {
    const tagged = tagFrame(newArpRequest(CLIENT_MAC, CLIENT_IP, VIP), 30);
    expect(classifyFrame(tagged)).toMatchObject({ kind: "observed", obs: { kind: "request", ip: VIP, vlan: 30 } });
    expect(classifyFrame(untagFrame(tagged).frame)).toMatchObject({ kind: "observed", obs: { kind: "request", ip: VIP, vlan: null } });
  });

  it("a tagged Neighbor Solicitation classifies with its VLAN", () => {
    const tagged = tagFrame(newNeighborSolicitation(CLIENT_MAC, "2001:db8::1", "2001:db8::c8"), 4094, 3);
    expect(classifyFrame(tagged)).toMatchObject({ kind: "observed", obs: { ip: "2001:db8::c8", vlan: 4094 } });
  });
});

describe("properties", () => {
  const frames = fc.uint8Array({ minLength: 14, maxLength: 128 });
  const vlans = fc.integer({ min: VLAN_ID_MIN, max: VLAN_ID_MAX });
  const priorities = fc.integer({ min: 0, max: VLAN_PRIORITY_MAX });

  it("untagFrame undoes tagFrame", () => {
    fc.assert(
      fc.property(frames, vlans, priorities, (frame, vlan, priority) => {
        expect(untagFrame(tagFrame(frame, vlan, priority))).toEqual({ vlan, frame });
      }),
    );
  });

  it("decodeEthernet reads the VLAN tagFrame wrote", () => {
    // A frame that already starts a tag becomes Q-in-Q once tagged, and one cut short inside its own tag is then
    // rightly refused as truncated: the property is about frames with an EtherType of their own.
    const untagged = frames.filter((f) => ![TPID_8021Q, TPID_8021AD, TPID_QINQ_LEGACY].includes(((f[12] ?? 0) << 8) | (f[13] ?? 0)));
    fc.assert(
      fc.property(untagged, vlans, (frame, vlan) => {
        const d = decodeEthernet(tagFrame(frame, vlan));
        expect(d.ok && d.value.vlan).toBe(vlan);
      }),
    );
  });

  it("decodeEthernet refuses a tagged frame whose inner tag is cut short", () => {
    const d = decodeEthernet(tagFrame(hex(`${MACS} 8100`), 1));
    expect(d.ok).toBe(false);
  });

  it("untagFrame never throws and never grows a frame", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const out = untagFrame(bytes);
        expect(out.frame.length === bytes.length || out.frame.length === bytes.length - 4).toBe(true);
      }),
      // Seeded with the edge cases: exactly the tag with no EtherType, and the shortest frame with one.
      { examples: [[hex(`${MACS} 8100 001e`)], [hex(`${MACS} 8100 001e 0806`)]] },
    );
  });
});
