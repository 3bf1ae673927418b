import { describe, expect, it } from "vitest";
import { LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, decodeEthernet } from "./link.js";
import { classifyFrame } from "./classify.js";
import { hex } from "../__tests__/fixtures.js";

const ARP_REPLY = "0001 0800 06 04 0002 02005e00000a c00002c8 02005e000001 c0000201";

// tcpdump -i any: Linux cooked headers carry the sender's address, no destination.
const SLL = hex(`
  0004 0001 0006 02005e00000a 0000 0806   # outgoing, ARPHRD_ETHER, 6-byte address, pad, ARP
  ${ARP_REPLY}`);
const SLL2 = hex(`
  0806 0000 00000002 0001 04 06 02005e00000a 0000   # ARP, ifindex 2, ARPHRD_ETHER, outgoing, 6-byte address
  ${ARP_REPLY}`);
const SLL2_VLAN = hex(`
  8100 0000 00000002 0001 04 06 02005e00000a 0000
  0064 0806                                          # TCI VLAN 100, then ARP
  ${ARP_REPLY}`);
const SLL_NOT_ETHER = hex(`0004 0306 0006 02005e00000a 0000 0806 ${ARP_REPLY}`);

describe("cooked captures", () => {
  it.each([
    { case: "SLL", frame: SLL, link: LINKTYPE_LINUX_SLL, vlan: null },
    { case: "SLL2", frame: SLL2, link: LINKTYPE_LINUX_SLL2, vlan: null },
    { case: "SLL2 with a VLAN tag", frame: SLL2_VLAN, link: LINKTYPE_LINUX_SLL2, vlan: 100 },
  ])("classifies ARP in $case", ({ frame, link, vlan }) => {
    expect(classifyFrame(frame, link)).toMatchObject({
      kind: "observed",
      obs: {
        kind: "reply",
        ip: "192.0.2.200",
        mac: "02:00:5e:00:00:0a",
        ethSrc: "02:00:5e:00:00:0a",
        ethDst: null,
        vlan,
        ethernetMismatch: false,
      },
    });
  });

  it("refuses a cooked header of a non-Ethernet device and unknown link types", () => {
    expect(classifyFrame(SLL_NOT_ETHER, LINKTYPE_LINUX_SLL)).toMatchObject({
      kind: "dropped",
      reason: "unsupported",
      message: "sll: hardware type 774 is not Ethernet",
    });
    expect(classifyFrame(SLL, 105)).toMatchObject({
      kind: "dropped",
      reason: "unsupported",
      message: "link: link type 105 is not Ethernet, SLL or SLL2",
    });
  });

  it("reports a truncated cooked header", () => {
    expect(classifyFrame(SLL2.subarray(0, 19), LINKTYPE_LINUX_SLL2)).toMatchObject({
      kind: "dropped",
      reason: "truncated",
      message: "sll2: header needs 20 bytes, only 19 present",
    });
  });
});

describe("decodeEthernet", () => {
  it("returns the header with textual addresses", () => {
    expect(decodeEthernet(hex(`ffffffffffff 02005e000001 8100 0064 0806 ${ARP_REPLY}`))).toEqual({
      ok: true,
      value: { dst: "ff:ff:ff:ff:ff:ff", src: "02:00:5e:00:00:01", vlan: 100, etherType: 0x0806, payloadOffset: 18 },
    });
  });
});
