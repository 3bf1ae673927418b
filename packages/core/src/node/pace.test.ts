import { describe, expect, it } from "vitest";
import { FLUSH_MS, MAX_FLUSH_MS } from "../wire.js";
import { flushPace } from "./pace.js";

describe("flushPace", () => {
  it("keeps FLUSH_MS up to 1,000 agents, then slows in steps of 50 ms so that they send about 10,000 messages a second", () => {
    expect([0, 1, 1000].map((n) => flushPace(n))).toEqual([FLUSH_MS, FLUSH_MS, FLUSH_MS]);
    expect([1001, 1500, 1501, 2000, 3000, 4999, 5000].map((n) => flushPace(n))).toEqual([150, 150, 200, 200, 300, 500, 500]);
  });

  it("never goes past MAX_FLUSH_MS, however many agents", () => {
    expect(flushPace(100_000)).toBe(MAX_FLUSH_MS);
  });

  it("takes a slower pace at once and a faster one only once the agents are 10 % fewer than its step needs", () => {
    expect(flushPace(2100, 200)).toBe(250);
    // 1,950 agents need 200 ms; at 250 ms in force, 1,950 x 1.1 = 2,145 still needs 250: it stays.
    expect(flushPace(1950, 250)).toBe(250);
    expect(flushPace(1800, 250)).toBe(200);
    expect(flushPace(10, 500)).toBe(FLUSH_MS);
  });

  it("aims at the messages a second it is given", () => {
    expect(flushPace(2, FLUSH_MS, 10)).toBe(200);
    expect(flushPace(1, FLUSH_MS, 10)).toBe(100);
  });
});
