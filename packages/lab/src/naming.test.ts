import { describe, expect, it } from "vitest";
import { labIdOfNs, labNames, newLabId, unixWsUrl } from "./naming.js";

describe("lab naming", () => {
  it("derives every name from one id", () => {
    const n = labNames("a1b2c3");
    expect([n.switchNs, n.clientNs, n.nodeNs(2), n.hubSocket]).toEqual([
      "wh-a1b2c3-sw",
      "wh-a1b2c3-client",
      "wh-a1b2c3-n2",
      "/run/whohas-lab/a1b2c3/hub.sock",
    ]);
  });
  it("finds the lab of a namespace and ignores namespaces that are not ours", () => {
    expect(labIdOfNs("wh-a1b2c3-n1")).toBe("a1b2c3");
    expect(labIdOfNs("cni-1234")).toBeNull();
    expect(labIdOfNs("wh-zzzzzz-n1")).toBeNull();
  });
  it("makes a fresh id per run", () => {
    expect(newLabId()).toMatch(/^[0-9a-f]{6}$/);
    expect(newLabId()).not.toBe(newLabId());
  });
  it("refuses ids that could escape the prefix", () => {
    expect(() => labNames("../etc")).toThrow(/6 hex digits/);
  });
  it("builds ws+unix URLs in the ws package's form", () => {
    expect(unixWsUrl("/run/x/hub.sock", "/agent")).toBe("ws+unix:///run/x/hub.sock:/agent");
  });
});
