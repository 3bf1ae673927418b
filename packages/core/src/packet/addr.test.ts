import { describe, expect, it } from "vitest";
import { formatIPv6, formatMacNumber, goIPString, isIP, macToNumber, parseIPv6, parseMac } from "./addr.js";

describe("IPv6 text (RFC 5952)", () => {
  it.each([
    { input: "2001:0db8:0000:0000:0000:0000:0000:0001", out: "2001:db8::1" },
    { input: "2001:db8:0:0:1:0:0:1", out: "2001:db8::1:0:0:1" }, // first of two equal runs
    { input: "2001:db8:0:1:1:1:1:1", out: "2001:db8:0:1:1:1:1:1" }, // a single zero group is not compressed
    { input: "2001:DB8::A", out: "2001:db8::a" },
    { input: "::", out: "::" },
    { input: "::1", out: "::1" },
    { input: "fe80::", out: "fe80::" },
    { input: "1:0:0:2:0:0:0:3", out: "1:0:0:2::3" }, // the longest run wins
    { input: "::ffff:192.0.2.1", out: "::ffff:192.0.2.1" },
  ])("$input -> $out", ({ input, out }) => {
    const b = parseIPv6(input);
    expect(b).not.toBeNull();
    if (b) expect(formatIPv6(b, 0)).toBe(out);
  });

  it.each(["", ":", "1::2::3", "12345::", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "g::1", "::1.2.3", "::300.1.1.1"])("refuses %j", (s) => {
    expect(parseIPv6(s)).toBeNull();
  });
});

describe("goIPString (what MetalLB hashes)", () => {
  it.each([
    { input: "10.0.0.1", out: "10.0.0.1" },
    { input: "::ffff:10.0.0.1", out: "10.0.0.1" }, // Go prints IPv4-mapped as IPv4
    { input: "2001:DB8:0:0:0:0:0:1", out: "2001:db8::1" },
    { input: "010.0.0.1", out: null }, // Go 1.17+ refuses leading zeros
    { input: "not-an-ip", out: null },
  ])("$input -> $out", ({ input, out }) => expect(goIPString(input)).toBe(out));
});

describe("MAC numbers", () => {
  it("round-trips through a number, high bytes included", () => {
    for (const m of ["ff:ff:ff:ff:ff:ff", "00:00:00:00:00:00", "02:00:5e:00:00:0a", "80:00:00:00:00:01"]) {
      expect(formatMacNumber(macToNumber(parseMac(m), 0))).toBe(m);
    }
  });
  it("tells IPs apart from other text", () => {
    expect([isIP("192.0.2.1"), isIP("2001:db8::1"), isIP("02:00:5e:00:00:0a")]).toEqual([true, true, false]);
  });
});
