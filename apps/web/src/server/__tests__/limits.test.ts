import { describe, expect, it } from "vitest";
import { AttemptLimiter, WorkGate } from "../limits.js";

describe("AttemptLimiter", () => {
  it("forgets the oldest key once its table is full, and never when it is unbounded", () => {
    const bounded = new AttemptLimiter(0, 1, 3);
    const unbounded = new AttemptLimiter(0, 1, Infinity);
    for (const l of [bounded, unbounded]) {
      expect(l.take("locked", 0)).toBe(true);
      expect(l.take("locked", 0)).toBe(false);
      // Made-up names fill the table.
      for (let i = 0; i < 5; i++) l.take(`junk-${i}`, 0);
    }
    // The bounded table let the locked key go: a fresh allowance. The unbounded one still holds it.
    expect(bounded.take("locked", 0)).toBe(true);
    expect(unbounded.take("locked", 0)).toBe(false);
  });
});

describe("WorkGate", () => {
  it("runs at most `running` at once, queues `waiting`, and refuses the rest without running them", async () => {
    const gate = new WorkGate(2, 1);
    let now = 0;
    let most = 0;
    const releases: (() => void)[] = [];
    const work = () =>
      new Promise<string>((resolve) => {
        most = Math.max(most, ++now);
        releases.push(() => {
          now--;
          resolve("done");
        });
      });
    const runs = Array.from({ length: 4 }, () => gate.run(work));
    expect(await runs[3]).toBeNull();
    await new Promise((r) => setImmediate(r));
    expect(releases).toHaveLength(2);
    releases.shift()?.();
    await new Promise((r) => setImmediate(r));
    // The queued one started when a slot freed.
    expect(releases).toHaveLength(2);
    for (const r of releases.splice(0)) r();
    expect(await Promise.all(runs.slice(0, 3))).toEqual(["done", "done", "done"]);
    expect(most).toBe(2);
  });
});
