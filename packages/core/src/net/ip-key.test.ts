import { describe, expect, it } from "vitest";
import { compareIP, ipOrderKey } from "../packet/addr.js";
import { ipKey, isIpKey, keyBatch, normalizeIpKey, splitIpKey } from "./ip-key.js";

describe("IP keys", () => {
  it("name an address alone when untagged and ADDRESS@VLAN when tagged, and come apart again", () => {
    expect(ipKey("192.0.2.10", null)).toBe("192.0.2.10");
    expect(ipKey("192.0.2.10", 30)).toBe("192.0.2.10@30");
    expect(splitIpKey("192.0.2.10@30")).toEqual({ ip: "192.0.2.10", vlan: 30, family: 4 });
    expect(splitIpKey("2001:db8::a@4094")).toEqual({ ip: "2001:db8::a", vlan: 4094, family: 6 });
    expect(splitIpKey("2001:db8::a")).toEqual({ ip: "2001:db8::a", vlan: null, family: 6 });
  });

  it("accept VLANs 1 to 4094 only, and write IPv6 as RFC 5952 does", () => {
    expect(["192.0.2.10", "192.0.2.10@1", "2001:db8::a@4094"].every(isIpKey)).toBe(true);
    expect(["192.0.2.10@0", "192.0.2.10@4095", "192.0.2.10@030", "192.0.2.10@", "x@30", "192.0.2.300"].some(isIpKey)).toBe(false);
    expect(normalizeIpKey("2001:0DB8:0000:0000:0000:0000:0000:000A@030")).toBe("2001:db8::a@30");
    expect(normalizeIpKey("::ffff:192.0.2.10")).toBe("192.0.2.10");
    expect(normalizeIpKey("192.0.2.10@4095")).toBeNull();
  });

  it("sort by address, untagged first, then by VLAN; IPv4 before IPv6", () => {
    const keys = ["2001:db8::a", "192.0.2.10@40", "192.0.2.9", "192.0.2.10", "192.0.2.10@5"];
    const want = ["192.0.2.9", "192.0.2.10", "192.0.2.10@5", "192.0.2.10@40", "2001:db8::a"];
    expect([...keys].sort(compareIP)).toEqual(want);
    expect([...keys].sort((a, b) => (ipOrderKey(a) < ipOrderKey(b) ? -1 : 1))).toEqual(want);
  });

  it("keyBatch folds each VLAN into the address once, so keying twice changes nothing", () => {
    const batch = {
      entries: [
        { ip: "192.0.2.10", vlan: 30 },
        { ip: "192.0.2.10", vlan: null },
      ],
      requests: [{ ip: "2001:db8::a", vlan: 40 }],
    };
    keyBatch(batch);
    keyBatch(batch);
    expect(batch.entries.map((e) => e.ip)).toEqual(["192.0.2.10@30", "192.0.2.10"]);
    expect(batch.requests.map((r) => r.ip)).toEqual(["2001:db8::a@40"]);
  });
});
