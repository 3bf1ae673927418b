import { describe, expect, it } from "vitest";
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { GUARD, nextIpLimit, oldGenerationBound, watchHeap, type HeapSample } from "../hub/heap-guard.js";
import { Hub } from "../hub/hub.js";
import { ASKER, aggregate, cluster, hello, observations } from "./helpers.js";

const MB = 1_048_576;
const heap = (usedMb: number, limitMb = 384) => ({ usedBytes: usedMb * MB, limitBytes: limitMb * MB });

describe("nextIpLimit", () => {
  const state = { configured: 100_000, current: 100_000, held: 80_000, changedAt: -Infinity, shareAtShrink: null };

  it("keeps the limit while the heap has room", () => {
    expect(nextIpLimit(state, heap(200), 0)).toBe(100_000);
  });

  it("near the heap's bound keeps a share of the IPs held, never fewer than GUARD.minIps", () => {
    expect(nextIpLimit(state, heap(384 * GUARD.high + 1), 0)).toBe(Math.floor(80_000 * GUARD.keep));
    expect(nextIpLimit(state, heap(384 * GUARD.critical + 1), 0)).toBe(Math.floor(80_000 * GUARD.keepHard));
    expect(nextIpLimit({ ...state, current: 1_200, held: 1_200 }, heap(380), 0)).toBe(GUARD.minIps);
    // A limit configured below that floor is never raised by it.
    expect(nextIpLimit({ ...state, configured: 500, current: 500, held: 500 }, heap(380), 0)).toBe(500);
  });

  it("waits between shrinks: what was let go is freed only as V8 collects it", () => {
    const lowered = { ...state, current: 60_000, held: 60_000, changedAt: 1_000, shareAtShrink: 0.9 };
    expect(nextIpLimit(lowered, heap(320), 1_000 + GUARD.shrinkEveryMs - 1)).toBe(60_000);
    expect(nextIpLimit(lowered, heap(320), 1_000 + GUARD.shrinkEveryMs)).toBe(45_000);
  });

  it("shrinks again below the critical mark only if the last shrink lowered the heap: else the pressure is elsewhere", () => {
    const lowered = { ...state, current: 60_000, held: 57_000, changedAt: 0, shareAtShrink: 0.88 };
    // A leak, a cache or a big request holds the heap up: letting more IPs go would empty the view for nothing.
    expect(nextIpLimit(lowered, heap(384 * 0.88), GUARD.shrinkEveryMs)).toBe(60_000);
    expect(nextIpLimit(lowered, heap(384 * 0.86), GUARD.shrinkEveryMs)).toBe(60_000);
    // It helped: the heap's share came down by GUARD.progress, and is still high.
    expect(nextIpLimit(lowered, heap(384 * 0.84), GUARD.shrinkEveryMs)).toBe(Math.floor(57_000 * GUARD.keep));
    // Near the end it shrinks whatever the last one did.
    expect(nextIpLimit(lowered, heap(384 * 0.91), GUARD.shrinkEveryMs)).toBe(Math.floor(57_000 * GUARD.keepHard));
  });

  it("grows back by a tenth a minute once the heap is below its low mark, up to the configured limit", () => {
    const lowered = { ...state, current: 60_000, held: 60_000, changedAt: 0, shareAtShrink: 0.85 };
    expect(nextIpLimit(lowered, heap(100), GUARD.growEveryMs - 1)).toBe(60_000);
    expect(nextIpLimit(lowered, heap(100), GUARD.growEveryMs)).toBe(66_000);
    expect(nextIpLimit({ ...lowered, current: 95_000 }, heap(100), GUARD.growEveryMs)).toBe(100_000);
    // Between the two marks it stays where it is.
    expect(nextIpLimit(lowered, heap(384 * 0.75), GUARD.growEveryMs)).toBe(60_000);
  });
});

describe("oldGenerationBound", () => {
  it("is --max-old-space-size, the command line's over NODE_OPTIONS' (as Node reads them), else V8's whole limit", () => {
    expect(oldGenerationBound(["--max-old-space-size=384"], "", 432 * MB)).toBe(384 * MB);
    expect(oldGenerationBound([], "--enable-source-maps --max-old-space-size=256", 304 * MB)).toBe(256 * MB);
    expect(oldGenerationBound(["--max-old-space-size=128"], "--max-old-space-size=256", 176 * MB)).toBe(128 * MB);
    expect(oldGenerationBound(["--enable-source-maps"], "", 2_096 * MB)).toBe(2_096 * MB);
  });
});

describe("watchHeap", () => {
  it("reports the old generation against this process's bound after a full collection", async () => {
    const got: HeapSample[] = [];
    const stop = watchHeap((sample) => got.push(sample));
    try {
      // A full collection, as V8 runs one when the heap fills: gc() needs --expose-gc, which a fresh context grants.
      setFlagsFromString("--expose-gc");
      (runInNewContext("gc") as () => void)();
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      stop();
    }
    expect(got.length).toBeGreaterThan(0);
    const [first] = got;
    expect(first?.limitBytes).toBe(
      oldGenerationBound(process.execArgv, process.env.NODE_OPTIONS ?? "", getHeapStatistics().heap_size_limit),
    );
    expect(first?.usedBytes).toBeGreaterThan(1 * MB);
    expect(first?.usedBytes).toBeLessThan(first?.limitBytes ?? 0);
  });
});

describe("the hub near its heap's bound", () => {
  it("lets the least recently active IPs go at once, keeps the IPs that must stay, and tells it", async () => {
    let now = 10_000;
    const told: { ipLimit: number; evictedIps: number }[] = [];
    const hub = await Hub.open({ clock: () => now, onLimit: (s) => told.push(s) });
    const lb = ["198.51.100.1", "198.51.100.2"];
    hub.setCluster(cluster(["node-a"], lb));
    hub.connect(hello("node-a", "02:00:5e:00:00:0a"));
    const plain = Array.from({ length: 2_000 }, (_, i) => `10.1.${i >> 8}.${i & 255}`);
    // The LoadBalancer IPs are the oldest traffic: the first to go, were they not kept.
    hub.observe("node-a", observations(lb.map((ip) => aggregate(ip, "request", ASKER.mac, now))));
    now += 1_000;
    hub.observe("node-a", observations(plain.map((ip) => aggregate(ip, "request", ASKER.mac, now))));
    expect(hub.traffic.limitStatus()).toMatchObject({ ips: 2_002, ipLimit: 100_000, heap: null });

    now += 1_000;
    hub.traffic.heap(heap(320), now);
    const s = hub.traffic.limitStatus();
    expect(s.ipLimit).toBe(Math.floor(2_002 * GUARD.keep));
    expect(s.ips).toBeLessThanOrEqual(s.ipLimit);
    expect(s.heap).toEqual({ usedMb: 320, limitMb: 384 });
    expect(lb.every((ip) => hub.traffic.tracks(ip))).toBe(true);
    expect(told.at(-1)).toMatchObject({ ipLimit: s.ipLimit, evictedIps: 2_002 - s.ips });
    expect(hub.summary().limits.ipLimit).toBe(s.ipLimit);

    // New IPs keep coming: the lowered limit holds.
    now += 1_000;
    hub.observe("node-a", observations(plain.map((ip) => aggregate(ip.replace("10.1.", "10.2."), "request", ASKER.mac, now))));
    expect(hub.traffic.limitStatus().ips).toBeLessThanOrEqual(s.ipLimit);

    // Room again, a minute later: the limit grows back.
    now += GUARD.growEveryMs;
    hub.traffic.heap(heap(100), now);
    expect(hub.traffic.limitStatus().ipLimit).toBe(Math.ceil(s.ipLimit * 1.1));
  });
  it("does not empty the view when letting IPs go frees nothing, and grows back after a passing spike", async () => {
    let now = 10_000;
    const hub = await Hub.open({ clock: () => now });
    hub.connect(hello("node-a", "02:00:5e:00:00:0a"));
    hub.observe(
      "node-a",
      observations(Array.from({ length: 20_000 }, (_, i) => aggregate(`10.4.${i >> 8}.${i & 255}`, "request", ASKER.mac, now))),
    );
    // Something else holds the heap at 83 %: one shrink, then no more, however long it lasts.
    const limits: number[] = [];
    for (let k = 0; k < 12; k++) {
      now += GUARD.shrinkEveryMs;
      hub.traffic.heap(heap(384 * 0.83), now);
      limits.push(hub.traffic.limitStatus().ipLimit);
    }
    expect(new Set(limits)).toEqual(new Set([Math.floor(20_000 * GUARD.keep)]));
    // It passes; the heap settles at 57 %: the limit grows back, a tenth a minute, to limits.maxIps.
    for (let m = 0; m < 40; m++) {
      now += GUARD.growEveryMs;
      hub.traffic.heap(heap(384 * 0.57), now);
    }
    expect(hub.traffic.limitStatus().ipLimit).toBe(100_000);
  });
});
