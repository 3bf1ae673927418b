import { describe, expect, it } from "vitest";
import { FLIP_FLOP_MS } from "./findings.js";
import { FlipFlopWatch } from "./flip-flop.js";

const A = { mac: "02:00:00:00:00:0a", node: "node-a" };
const B = { mac: "02:00:00:00:00:0b", node: "node-b" };

describe("FlipFlopWatch", () => {
  it("finds an IP that goes back to its previous MAC within the window, and lets it expire", () => {
    const w = new FlipFlopWatch();
    expect(w.see("192.0.2.1", [A], 0)).toBeNull();
    expect(w.see("192.0.2.1", [B], 60_000)).toBeNull(); // a failover is not a flip-flop
    expect(w.see("192.0.2.1", [A, B], 90_000)).toBeNull(); // both answering says nothing of the owner
    const f = w.see("192.0.2.1", [A], 120_000);
    expect(f).toMatchObject({ type: "flip-flop", macs: [A.mac, B.mac], detail: expect.stringContaining("went back from node-b to node-a") });
    expect(w.active("192.0.2.1", 120_000 + FLIP_FLOP_MS)).not.toBeNull();
    expect(w.active("192.0.2.1", 120_001 + FLIP_FLOP_MS)).toBeNull();
  });

  it("does not count a move back after the window", () => {
    const w = new FlipFlopWatch();
    w.see("192.0.2.1", [A], 0);
    w.see("192.0.2.1", [B], 1000);
    expect(w.see("192.0.2.1", [A], 1001 + FLIP_FLOP_MS)).toBeNull();
  });
});
