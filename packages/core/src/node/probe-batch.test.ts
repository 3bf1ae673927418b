import { describe, expect, it } from "vitest";
import { ProbeBatch } from "./probe-batch.js";

const A = "02:00:5e:00:00:0a";
const B = "02:00:5e:00:00:0b";
const C = "02:00:5e:00:00:0c";

/** mulberry32: a small seeded PRNG, so that a "random" schedule is the same on every run. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * drive runs a batch as the agent does: wake (`late` ms after it was due), send every request that is due, each read
 * back `sendMs` after the check, collect closed rounds, sleep until the next wake. Returns each target's send times.
 */
function drive(batch: ProbeBatch, late: () => number, sendMs: () => number = () => 0) {
  const sentAt = Array.from({ length: batch.size }, (): number[] => []);
  const closed: number[] = [];
  let now = batch.start;
  for (let wake = batch.wake(); wake !== null; wake = batch.wake()) {
    now = Math.max(now, wake + late());
    for (let due = batch.next(); due !== null && now >= due.at; due = batch.next()) {
      now += sendMs();
      sentAt[batch.sent(now)]?.push(now);
    }
    closed.push(...batch.closed(now).map((r) => r.seq));
  }
  return { sentAt, closed, end: now };
}

describe("ProbeBatch", () => {
  it("spreads each round's requests evenly over the interval, target after target", () => {
    const batch = new ProbeBatch(["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"], 3, 1000, 10_000);
    const { sentAt, closed, end } = drive(batch, () => 0);
    // An exact caller: the plan, each round one millisecond later than the last (the clock's step on top of the gap).
    expect(sentAt).toEqual([
      [10_000, 11_001, 12_002],
      [10_250, 11_251, 12_252],
      [10_500, 11_501, 12_502],
      [10_750, 11_751, 12_752],
    ]);
    expect(closed).toEqual([1, 2, 3]);
    // The last round closes when its last request's reply window has passed.
    expect(end).toBe(12_752 + 1000 + 1);
    expect(batch.done).toBe(true);
    expect(batch.next()).toBeNull();
    expect(batch.wake()).toBeNull();
  });

  it.each([
    { case: "an exact caller", late: 0, sendMs: 0 },
    { case: "a caller late by up to 0.7 s", late: 700, sendMs: 0 },
    { case: "a caller late by up to 3 s, sends taking up to 5 ms", late: 3000, sendMs: 5 },
  ])("asks each target once per round, never twice within the interval: $case", ({ late, sendMs }) => {
    const rand = mulberry32(7);
    const targets = Array.from({ length: 300 }, (_, i) => `198.19.${Math.floor(i / 250)}.${(i % 250) + 1}`);
    const batch = new ProbeBatch(targets, 10, 1000, 0);
    const { sentAt, closed } = drive(
      batch,
      () => Math.floor(rand() * late),
      () => Math.floor(rand() * sendMs),
    );
    expect(closed).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for (const times of sentAt) {
      expect(times).toHaveLength(10);
      const gaps = times.slice(1).map((t, i) => t - (times[i] ?? 0));
      expect(Math.min(...gaps)).toBeGreaterThan(1000);
    }
    // Round after round: no target's request k + 1 goes before every target's request k.
    for (let k = 1; k < 10; k++) {
      const lastOfRound = Math.max(...sentAt.map((t) => t[k - 1] ?? 0));
      const firstOfNext = Math.min(...sentAt.map((t) => t[k] ?? 0));
      expect(firstOfNext).toBeGreaterThanOrEqual(lastOfRound);
    }
  });

  it("sends at once only what fell due in the last 10 ms when the caller wakes late, and moves the rest of the plan later", () => {
    const targets = Array.from({ length: 300 }, (_, i) => `198.19.${Math.floor(i / 250)}.${(i % 250) + 1}`);
    const batch = new ProbeBatch(targets, 3, 1000, 0);
    // The first wake 600 ms late (a capture slow to open), another 300 ms late in the second round; on time otherwise.
    let wakes = 0;
    const { sentAt, closed } = drive(batch, () => (++wakes === 1 ? 600 : wakes === 250 ? 300 : 0));
    expect(closed).toEqual([1, 2, 3]);
    const all = sentAt.flat().sort((a, b) => a - b);
    let most = 0;
    for (let i = 0, j = 0; i < all.length; i++) {
      while ((all[j] ?? 0) <= (all[i] ?? 0) - 10) j++;
      most = Math.max(most, i - j + 1);
    }
    // Three requests are planned per 10 ms: a late wake sends those of its last 10 ms (not the 180 it missed), and the
    // plan goes on from there; so any 10 ms holds at most twice the plan's three, and one on the edge.
    expect(most).toBeLessThanOrEqual(2 * 3 + 1);
    expect(sentAt[0]?.[0]).toBe(600);
    expect(batch.start).toBe(590 + 300 - 10);
  });

  it("matches a reply to its target's latest request within the interval, and closes a round once its windows passed", () => {
    const batch = new ProbeBatch(["192.0.2.1", "192.0.2.2"], 2, 1000, 0);
    expect(batch.next()).toEqual({ target: 0, seq: 1, at: 0 });
    expect(batch.sent(0)).toBe(0);
    expect(batch.next()).toEqual({ target: 1, seq: 1, at: 500 });
    expect(batch.wake()).toBe(500);
    batch.sent(500);
    batch.reply(0, A, 10);
    batch.reply(1, B, 520);
    batch.reply(1, C, 530);
    batch.reply(1, B, 540);
    // Round 1 closes at 500 + 1000 + 1; the next request is due sooner.
    expect(batch.wake()).toBe(1001);
    expect(batch.closed(1500)).toEqual([]);
    batch.sent(1001);
    // After target 0's second request, its late reply answers that one.
    batch.reply(0, A, 1005);
    const [one] = batch.closed(1501);
    expect(one).toEqual({
      seq: 1,
      results: [
        { seq: 1, sentAt: 0, replies: [{ mac: A, latencyMs: 10 }] },
        {
          seq: 1,
          sentAt: 500,
          replies: [
            { mac: B, latencyMs: 20 },
            { mac: C, latencyMs: 30 },
          ],
        },
      ],
    });
    batch.sent(1501);
    // A reply past its request's window answers nothing.
    batch.reply(1, B, 2502);
    expect(batch.closed(2502)).toEqual([
      {
        seq: 2,
        results: [
          { seq: 2, sentAt: 1001, replies: [{ mac: A, latencyMs: 4 }] },
          { seq: 2, sentAt: 1501, replies: [] },
        ],
      },
    ]);
    expect(batch.done).toBe(true);
    expect(batch.closed(10_000)).toEqual([]);
  });

  it("refuses one request too many and a batch of nothing", () => {
    const batch = new ProbeBatch(["192.0.2.1"], 1, 1000, 100);
    batch.sent(100);
    expect(() => batch.sent(5000)).toThrow("every request was sent already");
    expect(() => new ProbeBatch([], 1, 1000, 0)).toThrow("no target");
    expect(() => new ProbeBatch(["192.0.2.1"], 0, 1000, 0)).toThrow("0 rounds");
  });

  it("takes a clock that steps back, between check and send or during a sleep: no throw, no burst, no wait as long as the step", () => {
    const n = 5;
    const batch = new ProbeBatch(["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5"], 6, 1000, 0);
    // real: time as it passes; the batch reads real + offset, a wall clock stepped back an hour twice.
    let real = 0;
    let offset = 0;
    const now = () => real + offset;
    const sends: { target: number; real: number }[] = [];
    const closed: number[] = [];
    let steps = 0;
    for (let wake = batch.wake(); wake !== null; wake = batch.wake()) {
      real += Math.max(0, wake - now());
      // The second step comes during a sleep: the clock read on waking is an hour before the one read going to sleep.
      if (sends.length === 18 && steps === 1) {
        offset -= 3_600_000;
        steps++;
      }
      for (let due = batch.next(); due !== null && now() >= due.at; due = batch.next()) {
        // The first step comes between the check that a request is due and the read after sending it.
        if (sends.length === 7 && steps === 0) {
          offset -= 3_600_000;
          steps++;
        }
        sends.push({ target: batch.sent(now()), real });
        real += 1;
      }
      closed.push(...batch.closed(now()).map((r) => r.seq));
    }
    expect(steps).toBe(2);
    expect(closed).toEqual([1, 2, 3, 4, 5, 6]);
    expect(sends).toHaveLength(6 * n);
    for (let t = 0; t < n; t++) {
      const times = sends.filter((s) => s.target === t).map((s) => s.real);
      for (let i = 1; i < times.length; i++) expect((times[i] ?? 0) - (times[i - 1] ?? 0)).toBeGreaterThan(1000);
    }
    // No more than one request per 1000 / n ms on the whole, and no hour-long wait: about six seconds in truth.
    const gaps = sends.slice(1).map((s, i) => s.real - (sends[i]?.real ?? 0));
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1000 / n - 1);
    expect(real).toBeLessThan(8_000);
  });
});
