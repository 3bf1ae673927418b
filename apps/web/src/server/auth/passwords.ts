import { hash, verify } from "@node-rs/argon2";

/** A password hash this hub accepts: argon2id in PHC form, as `whohas-hub hash-password` prints it. */
export const HASH_PREFIX = "$argon2id$";

/**
 * hashPassword makes an argon2id hash with the library's defaults (19 MiB, 2 passes, 1 lane: OWASP's minimum for
 * argon2id).
 */
export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

/**
 * A hash of a password no one knows: a sign-in for an unknown user is checked against it, so that the answer takes
 * as long as for a known one and does not tell which names exist.
 */
let decoy: Promise<string> | null = null;

/** verifyPassword checks `password` against `stored` (null: unknown user, checked against the decoy, always false). */
export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  if (stored === null) {
    decoy ??= hash(`decoy-${Math.random()}`);
    await verify(await decoy, password).catch(() => false);
    return false;
  }
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}
