import type { Db } from "./db.js";

/** A StoredSession is one dashboard sign-in; the cookie's id is kept only as its SHA-256. */
export interface StoredSession {
  readonly idHash: string;
  readonly user: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly peer: string;
}

/** An ApiToken is a read-API Bearer token made in Settings (the token itself is shown once, never stored). */
export interface ApiToken {
  readonly id: number;
  readonly name: string;
  /** The first characters, so a person can tell tokens apart. */
  readonly prefix: string;
  readonly createdBy: string;
  readonly createdAt: number;
  readonly lastUsed: number | null;
}

/** The AccessRepo keeps dashboard sign-ins (as hashes) and read-API tokens (as hashes). */
export class AccessRepo {
  constructor(readonly db: Db) {}

  async createSession(s: StoredSession): Promise<void> {
    await this.db.run('INSERT INTO sessions (id_hash, "user", created_at, expires_at, peer) VALUES (?, ?, ?, ?, ?)', [
      s.idHash,
      s.user,
      s.createdAt,
      s.expiresAt,
      s.peer,
    ]);
  }

  /** session returns the unexpired session with this id hash, or null. */
  async session(idHash: string, now: number): Promise<StoredSession | null> {
    const r = await this.db.get<{ id_hash: string; user: string; created_at: number; expires_at: number; peer: string }>(
      "SELECT * FROM sessions WHERE id_hash = ? AND expires_at > ?",
      [idHash, now],
    );
    return r === undefined ? null : { idHash: r.id_hash, user: r.user, createdAt: r.created_at, expiresAt: r.expires_at, peer: r.peer };
  }

  async deleteSession(idHash: string): Promise<void> {
    await this.db.run("DELETE FROM sessions WHERE id_hash = ?", [idHash]);
  }

  async createApiToken(t: { name: string; hash: string; prefix: string; createdBy: string; createdAt: number }): Promise<ApiToken> {
    const row = await this.db.get<{ id: number }>(
      "INSERT INTO api_tokens (name, hash, prefix, created_by, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
      [t.name, t.hash, t.prefix, t.createdBy, t.createdAt],
    );
    return { id: Number(row?.id), name: t.name, prefix: t.prefix, createdBy: t.createdBy, createdAt: t.createdAt, lastUsed: null };
  }

  apiTokens(): Promise<ApiToken[]> {
    return this.db.all<ApiToken>(
      `SELECT id, name, prefix, created_by AS "createdBy", created_at AS "createdAt", last_used AS "lastUsed" FROM api_tokens ORDER BY created_at, id`,
    );
  }

  /** apiTokenByHash finds a token by its hash and marks it used; null when unknown (or revoked). */
  async apiTokenByHash(hash: string, now: number): Promise<ApiToken | null> {
    const r = await this.db.get<ApiToken>(
      `SELECT id, name, prefix, created_by AS "createdBy", created_at AS "createdAt", last_used AS "lastUsed" FROM api_tokens WHERE hash = ?`,
      [hash],
    );
    if (r === undefined) return null;
    if (r.lastUsed === null || now - r.lastUsed > 60_000)
      await this.db.run("UPDATE api_tokens SET last_used = ? WHERE id = ?", [now, r.id]);
    return r;
  }

  async deleteApiToken(id: number): Promise<boolean> {
    return (await this.db.run("DELETE FROM api_tokens WHERE id = ?", [id])).changes > 0;
  }

  /** prune deletes at most `limit` sessions expired before `now`; returns how many. */
  async prune(now: number, limit: number): Promise<number> {
    return (
      await this.db.run("DELETE FROM sessions WHERE id_hash IN (SELECT id_hash FROM sessions WHERE expires_at < ? LIMIT ?)", [now, limit])
    ).changes;
  }
}
