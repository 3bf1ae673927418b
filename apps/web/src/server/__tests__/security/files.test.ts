import { afterEach, describe, expect, it } from "vitest";
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bootstrapAdmin } from "../../auth/bootstrap.js";
import { openSqlite } from "../../store/db.js";
import { Store } from "../../store/store.js";

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
  it("creates the database's directory 0700 and the database, its WAL and shared memory 0600", () => {
    const path = join(tmp(), "var", "whohas", "whohas.db");
    const db = openSqlite(path);
    const store = new Store(db, Date.now());
    store.setSetting("probe", "written", Date.now());
    expect(mode(join(path, ".."))).toBe("700");
    expect([mode(path), mode(`${path}-wal`), mode(`${path}-shm`)]).toEqual(["600", "600", "600"]);
    db.close();
  });

  it("takes back a database file left readable by others", () => {
    const path = join(tmp(), "whohas.db");
    writeFileSync(path, "");
    chmodSync(path, 0o644);
    openSqlite(path).close();
    expect(mode(path)).toBe("600");
  });

  it("writes the first admin's password 0600", async () => {
    const path = join(tmp(), "state", "whohas.db");
    const store = new Store(openSqlite(path), Date.now());
    const b = await bootstrapAdmin(store, path, Date.now());
    expect(mode(b.file)).toBe("600");
  });
});
