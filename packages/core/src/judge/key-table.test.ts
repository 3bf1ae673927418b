import { describe, expect, it } from "vitest";
import { KeyTable, keyHash } from "./key-table.js";

describe("KeyTable", () => {
  it("finds each key it was given, and no other", () => {
    const t = new KeyTable(16);
    const mac = 0x02_00_00_00_00_01;
    const a = t.add(3_323_068_417, mac, 1);
    const b = t.add(3_323_068_417, mac, 2);
    const c = t.add(4_294_967_296 + 7, mac + 1, 1);
    expect(new Set([a, b, c]).size).toBe(3);
    expect(t.find(3_323_068_417, mac, 1)).toBe(a);
    expect(t.find(3_323_068_417, mac, 2)).toBe(b);
    expect(t.find(4_294_967_296 + 7, mac + 1, 1)).toBe(c);
    expect(t.find(3_323_068_417, mac + 1, 1)).toBe(-1);
    expect(t.size).toBe(3);
  });

  it("keeps every key findable through growth and removals in any order", () => {
    const t = new KeyTable(16);
    const ids = new Map<number, number>();
    // One /16 of addresses against four MACs: keys that differ in their low bits only.
    for (let i = 0; i < 5000; i++) ids.set(i, t.add(167_772_160 + (i >> 2), 0x0a_00_00_00_00_00 + (i & 3), 5));
    let seed = 7;
    const order = [...ids.keys()].sort(() => ((seed = (seed * 48_271) % 2_147_483_647) % 3) - 1);
    const removed = new Set<number>();
    for (const i of order.slice(0, 2500)) {
      t.remove(ids.get(i) ?? -1);
      removed.add(i);
      // Every key left is still found after each removal's backward shift: check a spread of them.
      for (let k = i % 97; k < 5000; k += 97)
        expect(t.find(167_772_160 + (k >> 2), 0x0a_00_00_00_00_00 + (k & 3), 5)).toBe(removed.has(k) ? -1 : ids.get(k));
    }
    expect(t.size).toBe(2500);
    // Ids come back for new keys, and nothing old is found under them.
    const fresh = t.add(1, 2, 3);
    expect([...removed].map((i) => ids.get(i))).toContain(fresh);
    expect(t.find(1, 2, 3)).toBe(fresh);
  });

  it("agrees with a Map through thousands of adds and removes on a small table (probes wrap around its end)", () => {
    // At most 14 keys held: the table keeps its first 32 buckets, and clusters often run past the last one.
    const t = new KeyTable(16);
    const model = new Map<number, number>();
    let seed = 12_345;
    const next = () => (seed = (seed * 48_271) % 2_147_483_647);
    const key = (k: number): [number, number, number] => [k * 1_000_003, 0x0a_00_00_00_00_00 + k, k & 7];
    for (let op = 0; op < 20_000; op++) {
      const live = [...model.keys()];
      if (live.length < 14 && next() % 3 !== 0) {
        const k = next() % 100_000;
        if (model.has(k)) continue;
        expect(t.find(...key(k))).toBe(-1);
        model.set(k, t.add(...key(k)));
      } else if (live.length > 0) {
        const k = live[next() % live.length] ?? 0;
        t.remove(model.get(k) ?? -1);
        model.delete(k);
      }
      for (const [k, id] of model) expect(t.find(...key(k))).toBe(id);
    }
    expect(t.size).toBe(model.size);
  });

  it("refuses to remove an id it does not hold, and loses no key for trying", () => {
    const t = new KeyTable(16, 1);
    const a = t.add(1, 2, 3);
    const b = t.add(4, 5, 6);
    for (const bad of [-1, 2, 1.5, 99]) expect(() => t.remove(bad)).toThrow(RangeError);
    t.remove(a);
    expect(() => t.remove(a)).toThrow(/not held/);
    expect(t.find(4, 5, 6)).toBe(b);
    expect(t.size).toBe(1);
  });

  it("hashes with a seed of its own: keys made to collide under one seed spread under another", () => {
    // A host on the link chooses its MACs: 300 of them for one IP, all starting their probe in one bucket of a table
    // seeded 1 (2,048 buckets: the top 11 bits of the hash).
    const ip = 3_323_068_417;
    const home = (mac: number, seed: number) => keyHash(ip, mac, 1, seed) >>> 21;
    const target = home(0x02_00_00_00_00_00, 1);
    const flood: number[] = [];
    for (let mac = 0x02_00_00_00_00_00; flood.length < 300; mac++) if (home(mac, 1) === target) flood.push(mac);
    // Seeded 1, they queue up behind each other; seeded otherwise, they land all over the table.
    expect(new Set(flood.map((m) => home(m, 1))).size).toBe(1);
    expect(new Set(flood.map((m) => home(m, 0x5eed))).size).toBeGreaterThan(200);
    // Tables draw their seeds at random.
    expect(new KeyTable().seed).not.toBe(new KeyTable().seed);
  });
});
