import { describe, expect, it } from "vitest";
import type { Logger } from "@whohas/core";
import { DueQueue } from "../evidence/queue.js";
import { LOG_EVERY_MS } from "../log-throttle.js";

describe("DueQueue", () => {
  it("says once, then with a count, that a burst of incidents past its bound lost their snapshots", () => {
    let now = 1_000_000;
    const warned: [string, Record<string, unknown> | undefined][] = [];
    const logger: Logger = { info: () => undefined, warn: (e, f) => warned.push([e, f]), error: () => undefined };
    const q = new DueQueue({ clock: () => now, run: () => Promise.resolve(), parallel: 1, logger });
    // Due in an hour: nothing runs while the test adds them.
    for (let id = 1; id <= 2_000 + 500; id++) q.add(id, now + 3_600_000);
    expect(q.waiting).toBe(2_000);
    expect(warned).toEqual([["evidence.queue_full", expect.objectContaining({ incident: 1 })]]);
    now += LOG_EVERY_MS;
    q.add(9_999, now + 3_600_000);
    expect(warned.length).toBe(2);
    expect(warned[1]?.[1]).toEqual(expect.objectContaining({ incident: 501, repeated: 499 }));
    q.stop();
  });
});
