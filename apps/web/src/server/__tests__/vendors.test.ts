import { describe, expect, it } from "vitest";
import { vendorOf } from "../vendors.js";

describe("vendorOf", () => {
  it("names the organisation a MAC's prefix is registered to, in any spelling", () => {
    expect(vendorOf("00:1b:21:12:34:56")).toBe("Intel Corporate");
    expect(vendorOf("00:1B:21:AB:CD:EF")).toBe("Intel Corporate");
    // VRRP's virtual router MACs (keepalived) are IANA's.
    expect(vendorOf("00:00:5e:00:01:0a")).toMatch(/ICANN|IANA/);
  });

  it("takes the longest assignment: a 36-bit block inside the registry's own 24-bit one", () => {
    // 70:B3:D5 is the IEEE Registration Authority's MA-L, split into MA-S blocks of 4,096 addresses each.
    const parent = vendorOf("70:b3:d5:00:00:00");
    const block = vendorOf("70:b3:d5:f2:f0:01");
    expect(block).not.toBeNull();
    expect(block).not.toBe(parent);
  });

  it("names no vendor for a locally administered MAC, an unregistered prefix or something that is not a MAC", () => {
    expect(vendorOf("02:00:5e:00:00:0a")).toBeNull();
    expect(vendorOf("52:54:00:12:34:56")).toBeNull();
    expect(vendorOf("not a mac")).toBeNull();
  });
});
