import { describe, expect, it } from "vitest";
import { ANALYZE_HELP } from "../analyze.js";
import { ANNOUNCE_HELP, PROBE_HELP } from "../run-probe.js";
import { USAGE } from "../usage.js";

describe("help texts", () => {
  it.each([
    { case: "whohas --help", text: USAGE },
    { case: "whohas probe --help", text: PROBE_HELP },
    { case: "whohas announce --help", text: ANNOUNCE_HELP },
  ])("$case: probe and announce take IP[@VLAN], IPv4 or IPv6", ({ text }) => {
    expect(text).toContain("IP[@VLAN]");
    expect(text).toMatch(/IPv4 or IPv6/);
  });

  it("says how probe and announce speak IPv6: NS to the solicited-node group, MetalLB's NA burst from the link-local", () => {
    for (const text of [USAGE, PROBE_HELP])
      expect(text.replace(/\s+/g, " ")).toMatch(
        /NS to its solicited-node multicast|Neighbor Solicitation to the address's solicited-node multicast group/,
      );
    expect(PROBE_HELP).toContain("ff02::1:ffXX:XXXX");
    for (const text of [USAGE, ANNOUNCE_HELP])
      expect(text.replace(/\s+/g, " ")).toMatch(/unsolicited (NA|Neighbor Advertisement) burst .*from the interface's link-local address/);
  });

  it("analyze: a tcpdump filter that keeps tagged frames, and reports per address and VLAN", () => {
    // What the lab measured (vlan-capture.test.ts): without a vlan clause the frames the host sends tagged are lost.
    expect(ANALYZE_HELP).toContain("tcpdump -i eth0 -w cap.pcap 'arp or icmp6 or (vlan and (arp or icmp6))'");
    expect(ANALYZE_HELP.replace(/\s+/g, " ")).toContain("per address and VLAN");
    expect(USAGE).toContain("per address and VLAN");
  });
});
