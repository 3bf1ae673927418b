import { describe, expect, it } from "vitest";
import { inRange, poolOf } from "./pools.js";

describe("MetalLB address pools", () => {
  it("matches CIDRs and ranges, IPv4 and IPv6, and nothing across families", () => {
    expect(inRange("192.0.2.200", "192.0.2.192/26")).toBe(true);
    expect(inRange("192.0.2.100", "192.0.2.192/26")).toBe(false);
    expect(inRange("192.0.2.7", "192.0.2.5-192.0.2.9")).toBe(true);
    expect(inRange("192.0.2.10", "192.0.2.5 - 192.0.2.9")).toBe(false);
    expect(inRange("2001:db8::10", "2001:db8::/64")).toBe(true);
    expect(inRange("2001:db8:1::10", "2001:db8::/64")).toBe(false);
    expect(inRange("2001:db8::10", "192.0.2.0/24")).toBe(false);
    expect(inRange("192.0.2.1", "192.0.2.1/32")).toBe(true);
    expect(inRange("192.0.2.1", "nonsense")).toBe(false);
  });

  it("names the pool an IP belongs to", () => {
    const pools = [
      { name: "a", addresses: ["10.0.0.0/24"] },
      { name: "b", addresses: ["192.0.2.200-192.0.2.210"] },
    ];
    expect(poolOf("192.0.2.201", pools)).toBe("b");
    expect(poolOf("198.51.100.1", pools)).toBeNull();
  });
});
