import { describe, expect, it } from "vitest";
import type { WebSocket } from "ws";
import { AgentPace } from "../gateway/pacing.js";

/** An agent's socket as AgentPace uses it: open, and what it was sent. */
function socket(): { ws: WebSocket; paces: number[] } {
  const paces: number[] = [];
  const ws = { OPEN: 1, readyState: 1, send: (d: string) => paces.push((JSON.parse(d) as { flushMs: number }).flushMs) };
  return { ws: ws as unknown as WebSocket, paces };
}

describe("AgentPace", () => {
  it("slows at once, and gets faster only once the pace has held for its hold time", () => {
    let now = 0;
    // 10 messages a second: 1 agent every 100 ms, 2 every 200, 3 every 300.
    const pace = new AgentPace(10, undefined, 30_000, () => now);
    const a = socket();
    const b = socket();
    const c = socket();
    pace.joined(a.ws, true, 1);
    pace.joined(b.ws, true, 2);
    pace.joined(c.ws, true, 3);
    expect(a.paces).toEqual([100, 200, 300]);
    // Agents leave and come back every second: the pace stays until it has held 30 s, and slower changes still pass.
    for (let k = 0; k < 20; k++) {
      now += 1000;
      pace.left(c.ws, 2);
      pace.left(b.ws, 1);
      pace.joined(b.ws, true, 2);
      pace.joined(c.ws, true, 3);
    }
    expect(a.paces).toEqual([100, 200, 300]);
    // Past the hold one change goes (to what two agents need, with the slack); the next waits for its own hold.
    now = 40_000;
    pace.left(c.ws, 2);
    pace.left(b.ws, 1);
    expect(a.paces).toEqual([100, 200, 300, 250]);
    now = 70_000;
    pace.joined(b.ws, true, 1);
    // 1 agent needs 100 ms; with the slack (1.1 agents) that is 150.
    expect(a.paces).toEqual([100, 200, 300, 250, 150]);
    // The agent that just joined is told the pace once.
    expect(b.paces.at(-1)).toBe(150);
  });
});
