import { afterEach, describe, expect, it } from "vitest";
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bootstrapAdmin } from "../../auth/bootstrap.js";
import { openSqlite } from "../../store/sqlite.js";
import { Store } from "../../store/store.js";
import { Hub } from "../../hub/hub.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "whohas-files-"));
  dirs.push(d);
  return d;
};
const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);

describe("secrets at rest", () => {
  it("creates the database's directory 0700 and the database, its WAL and shared memory 0600", async () => {
    const path = join(tmp(), "var", "whohas", "whohas.db");
    const db = openSqlite(path);
    const store = await Store.open(db, Date.now());
    await store.settings.set("probe", "written", Date.now());
    expect(mode(join(path, ".."))).toBe("700");
    expect([mode(path), mode(`${path}-wal`), mode(`${path}-shm`)]).toEqual(["600", "600", "600"]);
    await db.close();
  });

  it("takes back a database file left readable by others", async () => {
    const path = join(tmp(), "whohas.db");
    writeFileSync(path, "");
    chmodSync(path, 0o644);
    await openSqlite(path).close();
    expect(mode(path)).toBe("600");
  });

  it("writes the first admin's password 0600", async () => {
    const path = join(tmp(), "state", "whohas.db");
    const store = await Store.open(openSqlite(path), Date.now());
    const b = await bootstrapAdmin(store.settings, path, Date.now());
    expect(mode(b.file)).toBe("600");
  });
});

describe("a database an older hub (or an attacker's agents) filled", () => {
  it("starts on it: agents past the wire's bounds come back without what broke them, junk names not at all", async () => {
    const path = join(tmp(), "whohas.db");
    const db = openSqlite(path);
    await Store.open(db, Date.now()); // the schema
    const iface = (i: number) => ({
      name: `e${i}`,
      mac: `02:00:5e:00:${(i >> 8).toString(16).padStart(2, "0")}:${(i & 255).toString(16).padStart(2, "0")}`,
      up: true,
    });
    const huge = {
      node: "node-a",
      agentVersion: "t",
      interfaces: Array.from({ length: 4096 }, (_, i) => ({
        ...iface(i),
        master: null,
        addresses: [],
        own: { arpIgnore: 0, arpAnnounce: 0 },
        effective: { arpIgnore: 0, arpAnnounce: 0 },
        captured: false,
      })),
      sysctl: { all: { arpIgnore: 0, arpAnnounce: 0 }, default: { arpIgnore: 0, arpAnnounce: 0 } },
      kubeIpvs0: { present: false, addresses: 0 },
      kubeProxyMode: "not-ipvs",
      capture: { frames: 0, dropped: {}, kernelReceived: 0, kernelDropped: 0 },
    };
    const row = (node: string, interfaces: unknown, facts: unknown) =>
      db.run("INSERT INTO agents (node, version, first_seen, last_seen, interfaces, facts, dropped) VALUES (?, 't', 1, 1, ?, ?, 0)", [
        node,
        JSON.stringify(interfaces),
        facts === null ? null : JSON.stringify(facts),
      ]);
    await row("node-a", [iface(1)], huge);
    await row(
      "node-b",
      Array.from({ length: 4096 }, (_, i) => iface(i)),
      null,
    );
    await row("!0-rogue", [iface(2)], null);
    await db.run("UPDATE agents SET facts = '{not json' WHERE node = 'node-b'");
    await db.close();
    const again = await Hub.open({ store: await Store.open(openSqlite(path), Date.now()) });
    expect(again.agents.list().map((a) => [a.node, a.interfaces.length, a.facts])).toEqual([
      ["node-a", 1, null],
      ["node-b", 0, null],
    ]);
    expect(again.nodeOfMac(iface(1).mac)).toBe("node-a");
  });
});
