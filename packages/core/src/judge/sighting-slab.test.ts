import { describe, expect, it } from "vitest";
import { SightingSlab } from "./sighting-slab.js";

const repliesOf = (slab: SightingSlab, s: number): number[] => {
  const { list, base } = slab.replies(s);
  return Array.from({ length: slab.n(s) }, (_, k) => list[base + k] ?? NaN);
};

describe("SightingSlab", () => {
  it("keeps each request's time and replies apart, past the replies it holds in place", () => {
    const slab = new SightingSlab();
    const a = slab.add(1000.5);
    const b = slab.add(1001);
    for (let m = 1; m <= 6; m++) slab.reply(a, 0xa0 + m, m / 10);
    slab.reply(b, 0xb1, 2);
    expect(slab.t(a)).toBe(1000.5);
    expect(repliesOf(slab, a)).toEqual([0xa1, 0.1, 0xa2, 0.2, 0xa3, 0.3, 0xa4, 0.4, 0xa5, 0.5, 0xa6, 0.6]);
    expect(repliesOf(slab, b)).toEqual([0xb1, 2]);
    expect(slab.replied(a, 0xa6)).toBe(true);
    expect(slab.replied(b, 0xa1)).toBe(false);
  });

  it("drains what it holds, and a slot given back starts empty", () => {
    const slab = new SightingSlab();
    const a = slab.add(5);
    for (let m = 1; m <= 5; m++) slab.reply(a, m, 1);
    expect([slab.drained(a), slab.sent(a)]).toEqual([false, 0]);
    slab.markDrained(a);
    expect([slab.drained(a), slab.sent(a)]).toEqual([true, 10]);
    slab.free(a);
    const again = slab.add(7);
    expect(again).toBe(a);
    expect([slab.t(again), slab.n(again), slab.sent(again), slab.drained(again)]).toEqual([7, 0, 0, false]);
    slab.reply(again, 9, 3);
    expect(repliesOf(slab, again)).toEqual([9, 3]);
  });

  it("grows past its first size without losing a request", () => {
    const slab = new SightingSlab();
    const slots = Array.from({ length: 5000 }, (_, i) => slab.add(i));
    for (const s of slots) slab.reply(s, s + 1, 0.5);
    expect(slots.every((s, i) => slab.t(s) === i && repliesOf(slab, s).join() === `${s + 1},0.5`)).toBe(true);
  });
});
