import { describe, expect, it } from "vitest";
import { FINDING_ORDER, worstFinding, type FindingType } from "./findings.js";

/** Every finding type, checked by the compiler: a new type must be added here and ranked. */
const ALL: Record<FindingType, true> = {
  "multi-responder": true,
  "address-conflict": true,
  "no-responder": true,
  changed: true,
  "flip-flop": true,
  "split-brain": true,
  "stale-announcer": true,
  "ethernet-mismatch": true,
  "wrong-owner": true,
  "wrong-interface": true,
  "silent-drop": true,
  "capture-lost": true,
  "agent-down": true,
  "strictarp-drift": true,
  "strictarp-reverted": true,
};

describe("FINDING_ORDER", () => {
  it("ranks every finding type exactly once", () => {
    expect([...FINDING_ORDER].sort()).toEqual(Object.keys(ALL).sort());
  });

  it("names an incident after its worst finding, whatever the order they came in", () => {
    expect(worstFinding(["changed", "wrong-owner", "multi-responder"])).toBe("multi-responder");
    expect(worstFinding(["wrong-owner", "split-brain"])).toBe("split-brain");
    expect(worstFinding(["capture-lost"])).toBe("capture-lost");
    expect(worstFinding([])).toBeUndefined();
  });
});
