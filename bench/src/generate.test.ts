import { describe, expect, it } from "vitest";
import { CaptureAnalysis } from "@whohas/core";
import { generateCapture } from "./generate.js";

describe("generateCapture", () => {
  it("writes the requested frames: every client asks every VIP and every responder answers", () => {
    const shape = { frames: 4000, vips: 10, clients: 5, responders: 3 };
    const an = new CaptureAnalysis();
    an.startFile("generated");
    let bytes = 0;
    for (const chunk of generateCapture(shape, Date.UTC(2026, 0, 1), 256)) {
      bytes += chunk.length;
      expect(an.push(chunk)).toBe(true);
    }
    expect(an.endFile()).toBe(true);
    const s = an.summary();
    expect(bytes).toBe(24 + shape.frames * 76);
    expect(s.counts).toMatchObject({ frames: 4000, arpFrames: 4000 });
    expect(s.ips).toHaveLength(10);
    for (const ip of s.ips) {
      expect(ip.requests).toBe(100);
      expect(ip.responders.map((r) => r.replies)).toEqual([100, 100, 100]);
      expect(ip.findings.map((f) => f.type)).toContain("multi-responder");
    }
  });
});
