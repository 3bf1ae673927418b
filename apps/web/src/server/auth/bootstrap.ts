import { randomBytes } from "node:crypto";
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { SettingsRepo } from "../store/settings.js";
import type { LocalUser } from "./auth.js";
import { hashPassword } from "./passwords.js";

/** BOOTSTRAP_FILE is where the first admin's password is written, next to the database. */
export const BOOTSTRAP_FILE = "initial-admin-password";

/**
 * bootstrapAdmin gives a hub with no users and no proxy configured one way in, as Argo CD does: an `admin` user
 * whose random password is written once, readable by root only, next to the database. Its hash is kept in the
 * database so the password survives restarts; listing users in the config replaces it.
 */
export async function bootstrapAdmin(
  settings: SettingsRepo,
  dbPath: string,
  now: number,
): Promise<{ user: LocalUser; file: string; created: boolean }> {
  const file = join(dbPath === ":memory:" ? "." : dirname(dbPath), BOOTSTRAP_FILE);
  const saved = await settings.get<string>("auth.bootstrapAdminHash");
  if (saved !== null) return { user: { name: "admin", passwordHash: saved, role: "admin" }, file, created: false };
  const password = randomBytes(18).toString("base64url");
  const passwordHash = await hashPassword(password);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  // Written aside first, and in place only once this hub's hash is the one kept: another hub of the same database
  // may have made one meanwhile (the first kept holds, and the file is the winner's), and a crash between the two
  // leaves the password in the file aside, not lost.
  const aside = `${file}.${process.pid}`;
  writeFileSync(aside, `${password}\n`, { mode: 0o600 });
  const kept = await settings.keep("auth.bootstrapAdminHash", passwordHash, now);
  if (kept === passwordHash) renameSync(aside, file);
  else rmSync(aside, { force: true });
  return { user: { name: "admin", passwordHash: kept, role: "admin" }, file, created: kept === passwordHash };
}
