import { describe, expect, it } from "vitest";
import { classifyFrame, decodeEthernet, decodeNdp, newArpRequest, tagFrame, type SpeakerInterface } from "@whohas/core";
import { parseVlanIp, requestFor, trunkDecision, trunkGratuitous, vlanIpText } from "./trunk.js";

// Addresses from the lab's benchmarking ranges (RFC 2544, RFC 5180) and locally administered MACs.
const CLIENT = { mac: "02:00:00:00:00:02", ip: "198.18.0.2", ip6: "2001:2::2" };
const NODE: SpeakerInterface = { name: "eth0", mac: "02:00:00:00:00:11", linkLocal: "fe80::11" };
const V4 = "198.18.0.230";
const V6 = "2001:2::230";

describe("parseVlanIp", () => {
  it.each([
    { case: "an untagged IPv4 address", text: V4, want: { ip: V4, vlan: null } },
    { case: "IPv4 on VLAN 30", text: `${V4}@30`, want: { ip: V4, vlan: 30 } },
    { case: "IPv6 on VLAN 40", text: `${V6}@40`, want: { ip: V6, vlan: 40 } },
    { case: "IPv6 in a long form, made canonical", text: "2001:0002:0:0::0230@4094", want: { ip: V6, vlan: 4094 } },
    { case: "IPv4-mapped IPv6, as Go prints it", text: "::ffff:198.18.0.230@1", want: { ip: V4, vlan: 1 } },
  ])("reads $case", ({ text, want }) => {
    expect(parseVlanIp(text)).toEqual(want);
  });

  it.each([
    { case: "VLAN 0", text: `${V4}@0`, error: RangeError },
    { case: "VLAN 4095", text: `${V4}@4095`, error: RangeError },
    { case: "an empty VLAN", text: `${V4}@`, error: RangeError },
    { case: "a VLAN that is not a number", text: `${V4}@thirty`, error: RangeError },
    { case: "a signed VLAN", text: `${V4}@+30`, error: RangeError },
    { case: "a host name", text: "vip.example@30", error: TypeError },
    { case: "two VLANs", text: `${V4}@30@40`, error: TypeError },
    { case: "nothing", text: "", error: TypeError },
  ])("refuses $case", ({ text, error }) => {
    expect(() => parseVlanIp(text)).toThrow(error);
  });

  it("writes back what it reads", () => {
    for (const text of [V4, `${V4}@30`, `${V6}@40`]) expect(vlanIpText(parseVlanIp(text))).toBe(text);
  });
});

describe("requestFor", () => {
  it.each([
    { case: "IPv4, untagged", target: V4, vlan: null, kind: "request" },
    { case: "IPv4 on VLAN 30", target: `${V4}@30`, vlan: 30, kind: "request" },
    { case: "IPv6, untagged", target: V6, vlan: null, kind: "ns" },
    { case: "IPv6 on VLAN 40", target: `${V6}@40`, vlan: 40, kind: "ns" },
  ])("asks for $case", ({ target, vlan, kind }) => {
    const frame = requestFor(CLIENT, parseVlanIp(target));
    const out = classifyFrame(frame);
    expect(out).toMatchObject({ kind: "observed", obs: { kind, ip: parseVlanIp(target).ip, mac: CLIENT.mac, vlan } });
  });

  it("sends an NS from the client's IPv6 address to the target's solicited-node group", () => {
    const frame = requestFor(CLIENT, parseVlanIp(`${V6}@40`));
    const eth = decodeEthernet(frame);
    expect(eth).toMatchObject({ ok: true, value: { dst: "33:33:ff:00:02:30", src: CLIENT.mac, vlan: 40 } });
    const ns = eth.ok ? decodeNdp(frame, eth.value.payloadOffset) : null;
    expect(ns).toMatchObject({ ok: true, value: { type: "ns", src: CLIENT.ip6, dst: "ff02::1:ff00:230", target: V6 } });
  });

  it("refuses an IPv6 target when the client has no IPv6 address", () => {
    expect(() => requestFor({ ...CLIENT, ip6: null }, parseVlanIp(V6))).toThrow(/needs an IPv6 address/);
  });
});

describe("trunkDecision", () => {
  const owning =
    (...entries: string[]) =>
    (key: string) =>
      entries.map((e) => vlanIpText(parseVlanIp(e))).includes(key);
  const ask = (target: string) => requestFor(CLIENT, parseVlanIp(target));

  it.each([
    { case: "an untagged entry answers an untagged request", owned: [V4], asked: V4, vlan: null },
    { case: "an entry on VLAN 30 answers a request tagged 30, tagged 30", owned: [`${V4}@30`], asked: `${V4}@30`, vlan: 30 },
    { case: "one address on two VLANs: each answers its own", owned: [`${V4}@30`, `${V4}@40`], asked: `${V4}@40`, vlan: 40 },
    { case: "an IPv6 entry on VLAN 40 answers an NS tagged 40", owned: [`${V6}@40`], asked: `${V6}@40`, vlan: 40 },
    { case: "an untagged IPv6 entry answers an untagged NS", owned: [V6], asked: V6, vlan: null },
  ])("$case", ({ owned, asked, vlan }) => {
    const d = trunkDecision(NODE, owning(...owned), ask(asked));
    expect(d).toMatchObject({ kind: "reply", ip: parseVlanIp(asked).ip });
    const reply = d.kind === "reply" ? classifyFrame(d.frame) : null;
    expect(reply).toMatchObject({ kind: "observed", obs: { ip: parseVlanIp(asked).ip, mac: NODE.mac, ethDst: CLIENT.mac, vlan } });
  });

  it.each([
    { case: "an untagged entry ignores a tagged request", owned: [V4], asked: `${V4}@30` },
    { case: "an entry on VLAN 30 ignores an untagged request", owned: [`${V4}@30`], asked: V4 },
    { case: "an entry on VLAN 30 ignores a request tagged 40", owned: [`${V4}@30`], asked: `${V4}@40` },
    { case: "an untagged IPv6 entry ignores a tagged NS", owned: [V6], asked: `${V6}@40` },
    { case: "nothing owned", owned: [], asked: `${V4}@30` },
  ])("$case", ({ owned, asked }) => {
    expect(trunkDecision(NODE, owning(...owned), ask(asked))).toEqual({ kind: "drop", reason: "announceIP" });
  });

  it("keeps core's other drop reasons behind the tag", () => {
    const reply = trunkDecision(NODE, owning(`${V4}@30`), ask(`${V4}@30`));
    const echoed = reply.kind === "reply" ? reply.frame : new Uint8Array();
    expect(trunkDecision(NODE, owning(`${V4}@30`), echoed)).toEqual({ kind: "drop", reason: "arpReply" });
    const toOther = tagFrame(
      newArpRequest(CLIENT.mac, CLIENT.ip, V4).map((b, i) => (i < 6 ? 0x02 : b)),
      30,
    );
    expect(trunkDecision(NODE, owning(`${V4}@30`), toOther)).toEqual({ kind: "drop", reason: "ethernetDestination" });
  });
});

describe("trunkGratuitous", () => {
  it.each([
    { case: "IPv4 untagged: request and reply", owned: V4, vlan: null, kinds: ["gratuitous-request", "gratuitous-reply"] },
    { case: "IPv4 on VLAN 30: both tagged", owned: `${V4}@30`, vlan: 30, kinds: ["gratuitous-request", "gratuitous-reply"] },
    { case: "IPv6 on VLAN 40: one unsolicited NA, tagged", owned: `${V6}@40`, vlan: 40, kinds: ["na-unsolicited"] },
  ])("$case", ({ owned, vlan, kinds }) => {
    const frames = trunkGratuitous(NODE, parseVlanIp(owned));
    const seen = frames.map((f) => {
      const out = classifyFrame(f);
      return out.kind === "observed" ? { kind: out.obs.kind, ip: out.obs.ip, mac: out.obs.mac, vlan: out.obs.vlan } : out;
    });
    expect(seen).toEqual(kinds.map((kind) => ({ kind, ip: parseVlanIp(owned).ip, mac: NODE.mac, vlan })));
  });
});
