import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { LocalUser } from "../auth/auth.js";
import { MIN_TOKEN_LEN, UsersSchema } from "./schema.js";

/** A ConfigError names the key at fault and why, so start-up can fail with one line a person can act on. */
export class ConfigError extends Error {
  constructor(
    readonly key: string,
    reason: string,
  ) {
    super(`${key}: ${reason}`);
  }
}

const why = (e: unknown) => (e as NodeJS.ErrnoException).code ?? (e as Error).message.split("\n")[0] ?? "";

function read(key: string, path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(key, `cannot read ${path} (${why(e)})`);
  }
}

/** readYaml reads the config file as a YAML document (an empty file is an empty document). */
export function readYaml(path: string): unknown {
  const text = read("--config", path);
  try {
    return parseYaml(text) ?? {};
  } catch (e) {
    throw new ConfigError(path, `not valid YAML: ${why(e)}`);
  }
}

/** checkToken refuses a token shorter than MIN_TOKEN_LEN. */
export function checkToken(key: string, token: string): string {
  if (token.length < MIN_TOKEN_LEN) throw new ConfigError(key, `must be at least ${MIN_TOKEN_LEN} characters (try: openssl rand -hex 32)`);
  return token;
}

/** readToken reads a token (or a secret) from a file, such as a mounted Secret's key. */
export function readToken(key: string, path: string): string {
  const text = read(key, path).trim();
  if (text.length < MIN_TOKEN_LEN)
    throw new ConfigError(key, `the token in ${path} must be at least ${MIN_TOKEN_LEN} characters (try: openssl rand -hex 32 > ${path})`);
  return text;
}

/** readUsers reads a users file: a YAML list of { name, passwordHash, role } (such as a mounted Secret's key). */
export function readUsers(key: string, path: string): LocalUser[] {
  let doc: unknown;
  try {
    doc = parseYaml(read(key, path)) ?? [];
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(key, `${path} is not valid YAML (${why(e)})`);
  }
  const r = UsersSchema.safeParse(doc);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new ConfigError(`${path}: ${(i?.path ?? []).map(String).join(".")}`, i?.message ?? "invalid");
  }
  return r.data;
}

/** readPem reads a PEM file and checks it holds what it should (a certificate, a private key). */
export function readPem(key: string, path: string, what: string): string {
  const text = read(key, path);
  if (!new RegExp(`-----BEGIN [A-Z ]*${what}-----`).test(text)) throw new ConfigError(key, `${path} holds no PEM ${what.toLowerCase()}`);
  return text;
}
