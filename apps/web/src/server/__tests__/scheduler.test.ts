import { describe, expect, it } from "vitest";
import { jsonLogger } from "@whohas/core";
import { Hub } from "../hub/hub.js";
import { Scheduler } from "../hub/scheduler.js";
import type { Db } from "../store/db.js";
import { openSqlite } from "../store/sqlite.js";
import { Store } from "../store/store.js";
import { aggregate, until } from "./helpers.js";

/** outage wraps a database whose transactions fail while `down` holds, as a PostgreSQL out of reach does. */
function outage(db: Db): { db: Db; down: boolean } {
  const o = {
    down: false,
    db: {
      ...db,
      tx: <T>(fn: (t: Db) => Promise<T>): Promise<T> =>
        o.down ? Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:5432")) : db.tx(fn),
    },
  };
  return o;
}

describe("Scheduler", () => {
  it("goes on while the database is out of reach, says so once a minute, writes what waited when it is back", async () => {
    const o = outage(openSqlite(":memory:"));
    const store = await Store.open(o.db, Date.now());
    const hub = await Hub.open({ store });
    const lines: string[] = [];
    const logged = (event: string) => lines.filter((l) => l.includes(`"event":"${event}"`));
    const scheduler = new Scheduler({
      hub,
      logger: jsonLogger("hub", (l) => lines.push(l)),
      retentionMs: () => Promise.resolve(86_400_000),
      storageHint: "check that PostgreSQL at postgres://db:5432/whohas is up and reachable",
    });
    o.down = true;
    store.traffic.record("node-a", [aggregate("192.0.2.7", "reply", "02:00:5e:00:00:0a", Date.now())]);
    scheduler.start();
    try {
      await until(() => logged("store.write_failed").length > 0, 5000);
      // A second failed pass a second later is counted, not written again.
      await new Promise((r) => setTimeout(r, 1500));
      expect(logged("store.write_failed")).toHaveLength(1);
      expect(logged("store.write_failed")[0]).toContain("ECONNREFUSED");
      expect(logged("store.write_failed")[0]).toContain("is up and reachable");
      expect(store.traffic.pendingRows).toBe(1);
      o.down = false;
      await until(() => logged("store.write_recovered").length > 0, 5000);
      expect(store.traffic.pendingRows).toBe(0);
      expect((await store.db.get<{ n: number }>("SELECT SUM(count) AS n FROM minute_stats"))?.n).toBe(1);
    } finally {
      await scheduler.stop();
    }
  }, 20_000);
});
