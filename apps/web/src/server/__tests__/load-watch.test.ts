import { describe, expect, it } from "vitest";
import { LoadWatch, SATURATED } from "../hub/load-watch.js";

describe("LoadWatch", () => {
  it("averages the seconds inside a window, knows nothing outside its samples, and forgets after two minutes", () => {
    const w = new LoadWatch();
    expect(w.busy(0, 10_000)).toBeNull();
    expect(w.saturated(0, 10_000)).toBe(false);
    for (let t = 1000; t <= 10_000; t += 1000) w.record(t, t <= 5000 ? 1 : 0.5);
    expect(w.busy(0, 5000)).toBe(1);
    expect(w.busy(5000, 10_000)).toBe(0.5);
    expect(w.busy(0, 10_000)).toBe(0.75);
    expect(w.saturated(0, 5000)).toBe(true);
    expect(w.saturated(0, 10_000)).toBe(false);
    expect(w.now).toBe(0.5);
    // A busy second among quiet ones is not saturation.
    w.record(11_000, SATURATED);
    expect(w.saturated(10_000, 11_000)).toBe(true);
    expect(w.saturated(5000, 11_000)).toBe(false);
    w.record(200_000, 0.1);
    expect(w.busy(0, 11_000)).toBeNull();
  });
});
