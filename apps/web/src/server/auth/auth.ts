import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { isIPv6, type BlockList } from "node:net";
import type { TLSSocket } from "node:tls";
import type { Logger } from "@whohas/core";
import type { AccessRepo } from "../store/access.js";
import type { SettingsRepo } from "../store/settings.js";
import { AttemptLimiter, WorkGate } from "../limits.js";
import { ClientAddresses, limitKey, peerAddress, trustList } from "../client-address.js";
import { LogThrottle } from "../log-throttle.js";
import { verifyPassword } from "./passwords.js";
import { highest, type Role } from "./roles.js";

/** SESSION_COOKIE holds a dashboard sign-in (HttpOnly, SameSite=Lax; Secure when the hub is reached over TLS). */
export const SESSION_COOKIE = "whohas_session";
/** CSRF_HEADER carries the page's CSRF token on every request that changes anything. */
export const CSRF_HEADER = "x-whohas-csrf";
/**
 * Headers the hub sets for the dashboard's server-side rendering (who is signed in, the CSRF token). They are
 * removed from every incoming request first, so a client can never set them itself.
 */
export const USER_HEADER = "x-whohas-user";
export const ROLE_HEADER = "x-whohas-role";

/** CLIENT_RATE / CLIENT_BURST: failed sign-ins allowed per client address (5 a minute, bursts of 10). */
const CLIENT_RATE = 5 / 60;
const CLIENT_BURST = 10;
/**
 * USER_RATE / USER_BURST: failed sign-ins allowed per user name from all addresses together (10 a minute, bursts of
 * 20): guessing one account from many addresses is slowed too, and the account is open again a few seconds after the
 * guessing stops.
 */
const USER_RATE = 10 / 60;
const USER_BURST = 20;

/**
 * DEVICE_COOKIE marks a browser that has signed in to an account before (OWASP's "device cookie"): a sign-in from it
 * is not held to the account's lock, so guessing an account's password from elsewhere cannot lock its owner out. It
 * is signed with the hub's secret and names the account; a device has its own allowance of failures.
 */
export const DEVICE_COOKIE = "whohas_device";
const DEVICE_TTL_S = 365 * 86_400;
const DEVICE_RATE = 5 / 60;
const DEVICE_BURST = 10;
/**
 * HASHES_RUNNING / HASHES_WAITING: password checks at once (libuv's four threads) and queued, for every caller
 * together; more sign-ins than that at once are refused with 429 before any hash.
 */
const HASHES_RUNNING = 4;
const HASHES_WAITING = 64;

export interface LocalUser {
  readonly name: string;
  /** argon2id in PHC form (`whohas-hub hash-password`). */
  readonly passwordHash: string;
  readonly role: Role;
}

/** ProxyAuth trusts an authenticating reverse proxy's headers, from its addresses only. */
export interface ProxyAuth {
  readonly userHeader: string;
  readonly groupsHeader: string | null;
  /** Addresses or CIDRs the proxy connects from; a request from anywhere else has its headers ignored. */
  readonly trustedProxies: readonly string[];
  /** Role of each group; a user gets the strongest of their groups'. */
  readonly groupRoles: Readonly<Record<string, Role>>;
  /** Role of a proxy user none of whose groups has one; null: such users are refused. */
  readonly defaultRole: Role | null;
}

export interface AuthConfig {
  readonly users: readonly LocalUser[];
  readonly proxy: ProxyAuth | null;
  readonly sessionTtlMs: number;
  /**
   * Proxies (an ingress, a load balancer) whose X-Forwarded-For and X-Forwarded-Proto are believed: sign-in limits
   * then count the real client. The authenticating proxy's addresses are trusted for this too.
   */
  readonly trustedProxies?: readonly string[];
  /** The read API's Bearer token from the config file (api.viewerTokenFile); tokens made in Settings work too. */
  readonly viewerToken: string | null;
}

/** A Principal is who makes a request, and how they proved it. */
export interface Principal {
  readonly user: string;
  readonly role: Role;
  readonly via: "session" | "proxy" | "token";
  /** The CSRF token mutations must carry; null for Bearer tokens (no cookie, so no cross-site request to forge). */
  readonly csrf: string | null;
}

export type LoginResult =
  | { readonly ok: true; readonly user: string; readonly role: Role; readonly setCookie: readonly string[] }
  | { readonly ok: false; readonly status: 401 | 429; readonly reason: "invalid" | "throttled" | "locked"; readonly message: string };

export { peerAddress, trustList };

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** cookieValue reads one cookie from a Cookie header; a value that does not decode is no cookie at all. */
export function cookieValue(header: string | undefined, name: string): string | null {
  for (const part of (header ?? "").split(";")) {
    const i = part.indexOf("=");
    if (i <= 0 || part.slice(0, i).trim() !== name) continue;
    try {
      return decodeURIComponent(part.slice(i + 1).trim());
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * Auth decides who a request comes from: a session cookie from /login (local users), an authenticating proxy's
 * headers (from trusted addresses only), or a Bearer token (read API). It also signs users in and out, checks CSRF
 * tokens, and rate-limits failed sign-ins per client address.
 */
export class Auth {
  readonly #users: ReadonlyMap<string, LocalUser>;
  readonly #trusted: BlockList | null;
  readonly #secret: Buffer;
  readonly #byClient = new AttemptLimiter(CLIENT_RATE, CLIENT_BURST);
  readonly #byUser = new AttemptLimiter(USER_RATE, USER_BURST, Infinity);
  readonly #byUnknownUser = new AttemptLimiter(USER_RATE, USER_BURST);
  /** Password checks in flight and waiting, all callers together. */
  readonly #hashing = new WorkGate(HASHES_RUNNING, HASHES_WAITING);
  readonly #byDevice = new AttemptLimiter(DEVICE_RATE, DEVICE_BURST);
  readonly #noisy: LogThrottle;
  /** clients reads a request's real client address (behind trusted proxies). */
  readonly clients: ClientAddresses;

  /** open reads (or makes) the database's CSRF secret and returns the Auth. */
  static async open(
    config: AuthConfig,
    access: AccessRepo,
    settings: SettingsRepo,
    logger: Logger,
    clock: () => number = Date.now,
  ): Promise<Auth> {
    // One secret per database, so CSRF tokens outlive a hub restart as the sessions do, and hold on every hub of it.
    const secret = await settings.keep("auth.secret", randomBytes(32).toString("base64"), clock());
    return new Auth(config, access, Buffer.from(secret, "base64"), logger, clock);
  }

  private constructor(
    readonly config: AuthConfig,
    readonly access: AccessRepo,
    secret: Buffer,
    readonly logger: Logger,
    readonly clock: () => number,
  ) {
    this.#users = new Map(config.users.map((u) => [u.name, u]));
    this.#noisy = new LogThrottle(logger, clock);
    this.#trusted = config.proxy === null ? null : trustList(config.proxy.trustedProxies);
    this.clients = new ClientAddresses([...(config.trustedProxies ?? []), ...(config.proxy?.trustedProxies ?? [])]);
    this.#secret = secret;
  }

  /** methods says how people can sign in, for the login page and the logs. */
  get methods(): { readonly local: boolean; readonly proxy: boolean } {
    return { local: this.#users.size > 0, proxy: this.config.proxy !== null };
  }

  #csrf(subject: string): string {
    return createHmac("sha256", this.#secret).update(subject).digest("base64url").slice(0, 32);
  }

  /** principal returns who made `req`, or null when no valid credential came with it. */
  async principal(req: IncomingMessage): Promise<Principal | null> {
    return this.#fromProxy(req) ?? (await this.#fromSession(req)) ?? (await this.#fromBearer(req));
  }

  #fromProxy(req: IncomingMessage): Principal | null {
    const p = this.config.proxy;
    if (p === null || this.#trusted === null) return null;
    const peer = peerAddress(req);
    if (!this.#trusted.check(peer, isIPv6(peer) ? "ipv6" : "ipv4")) return null;
    const user = req.headers[p.userHeader.toLowerCase()];
    if (typeof user !== "string" || user === "") return null;
    const groupsText = p.groupsHeader === null ? undefined : req.headers[p.groupsHeader.toLowerCase()];
    const groups =
      typeof groupsText === "string"
        ? groupsText
            .split(",")
            .map((g) => g.trim())
            .filter((g) => g !== "")
        : [];
    const role = highest(groups.flatMap((g) => (p.groupRoles[g] === undefined ? [] : [p.groupRoles[g]]))) ?? p.defaultRole;
    if (role === null) {
      this.logger.warn("auth.proxy_no_role", {
        user,
        groups,
        hint: "map one of the user's groups in auth.proxy.groupRoles, or set auth.proxy.defaultRole",
      });
      return null;
    }
    return { user, role, via: "proxy", csrf: this.#csrf(`proxy\0${user}`) };
  }

  async #fromSession(req: IncomingMessage): Promise<Principal | null> {
    const id = cookieValue(req.headers.cookie, SESSION_COOKIE);
    if (id === null || id.length > 128) return null;
    const idHash = sha256(id);
    const s = await this.access.session(idHash, this.clock());
    if (s === null) return null;
    // The role comes from the configuration of now: a user removed or demoted there loses access at once.
    const u = this.#users.get(s.user);
    if (u === undefined) return null;
    return { user: u.name, role: u.role, via: "session", csrf: this.#csrf(`session\0${idHash}`) };
  }

  async #fromBearer(req: IncomingMessage): Promise<Principal | null> {
    const m = /^Bearer (\S{16,256})$/.exec(req.headers.authorization ?? "");
    if (m?.[1] === undefined) return null;
    const token = m[1];
    if (this.config.viewerToken !== null && same(token, this.config.viewerToken))
      return { user: "viewer-token", role: "viewer", via: "token", csrf: null };
    const t = await this.access.apiTokenByHash(sha256(token), this.clock());
    return t === null ? null : { user: `token:${t.name}`, role: "viewer", via: "token", csrf: null };
  }

  /**
   * csrfOk: a request from a cookie or proxy sign-in carries its CSRF token in CSRF_HEADER, or a form in its field
   * `formToken` (Bearer needs none). Compared in constant time.
   */
  csrfOk(req: IncomingMessage, p: Principal, formToken?: string): boolean {
    if (p.csrf === null) return true;
    const h = req.headers[CSRF_HEADER];
    return (typeof h === "string" && same(h, p.csrf)) || (formToken !== undefined && same(formToken, p.csrf));
  }

  /**
   * login checks a local user's password and opens a session. Each attempt is counted against the client's address
   * (an IPv6 client by its /64) and against the user name, before the password is checked, and given back when it
   * succeeds. A browser that signed in to this account before counts against its own allowance instead of the
   * account's: the owner is never locked out by someone guessing.
   */
  async login(name: string, password: string, req: IncomingMessage, cookiePath: string): Promise<LoginResult> {
    const client = this.clients.of(req);
    const key = limitKey(client);
    const now = this.clock();
    if (!this.#byClient.take(key, now)) {
      this.#noisy.warn("auth.login_throttled", key, {
        user: name,
        client,
        scope: "client",
        hint: `more than ${CLIENT_BURST} failed sign-ins from this address`,
      });
      return {
        ok: false,
        status: 429,
        reason: "throttled",
        message: "too many failed sign-ins from your address: wait a minute and try again",
      };
    }
    const device = this.#device(req, name);
    // Names of real users have buckets that are never evicted (as many as configured users); any other name goes to
    // a bounded table, so that thousands of made-up names cannot push a locked user's bucket out. Both answer alike.
    const known = this.#users.has(name);
    const [byAccount, accountKey] = device !== null ? [this.#byDevice, device] : known ? [this.#byUser, name] : [this.#byUnknownUser, name];
    if (!byAccount.take(accountKey, now)) {
      this.#noisy.warn("auth.login_throttled", `${key} ${name}`, {
        user: name,
        client,
        scope: device === null ? "user" : "device",
        hint:
          device === null
            ? `more than ${USER_BURST} failed sign-ins for this user from all addresses: someone may be guessing its password; its owner can still sign in from a browser that signed in before`
            : `more than ${DEVICE_BURST} failed sign-ins from this browser`,
      });
      return { ok: false, status: 429, reason: "locked", message: "too many failed sign-ins for this user: wait a minute and try again" };
    }
    const u = this.#users.get(name);
    const ok = await this.#hashing.run(() => verifyPassword(u?.passwordHash ?? null, password));
    if (ok === null) {
      byAccount.succeeded(accountKey);
      this.#byClient.succeeded(key);
      this.#noisy.warn("auth.login_busy", "busy", {
        client,
        hint: `more than ${HASHES_RUNNING + HASHES_WAITING} sign-ins at once: a flood of attempts`,
      });
      return { ok: false, status: 429, reason: "throttled", message: "the hub is busy checking sign-ins: try again in a moment" };
    }
    if (!ok || u === undefined) {
      this.logger.warn("auth.login_failed", { user: name, client, reason: u === undefined ? "unknown user" : "wrong password" });
      return { ok: false, status: 401, reason: "invalid", message: "wrong user name or password" };
    }
    this.#byClient.succeeded(key);
    byAccount.succeeded(accountKey);
    const id = randomBytes(32).toString("base64url");
    await this.access.createSession({
      idHash: sha256(id),
      user: u.name,
      createdAt: now,
      expiresAt: now + this.config.sessionTtlMs,
      peer: client,
    });
    this.logger.info("auth.login", { user: u.name, role: u.role, client });
    const secure = (req.socket as Partial<TLSSocket>).encrypted === true || this.#forwardedHttps(req);
    const flags = ["HttpOnly", "SameSite=Lax", ...(secure ? ["Secure"] : [])];
    const session = [`${SESSION_COOKIE}=${id}`, `Path=${cookiePath}`, `Max-Age=${Math.floor(this.config.sessionTtlMs / 1000)}`, ...flags];
    const deviceCookie = [
      `${DEVICE_COOKIE}=${device !== null ? this.#deviceToken(u.name, device) : this.#deviceToken(u.name, randomBytes(12).toString("base64url"))}`,
      `Path=${cookiePath}`,
      `Max-Age=${DEVICE_TTL_S}`,
      ...flags,
    ];
    return { ok: true, user: u.name, role: u.role, setCookie: [session.join("; "), deviceCookie.join("; ")] };
  }

  /** #deviceToken signs "this browser signed in to `user`" (device id, account, MAC). */
  #deviceToken(user: string, id: string): string {
    const mac = createHmac("sha256", this.#secret).update(`device\0${user}\0${id}`).digest("base64url").slice(0, 32);
    return `${id}.${Buffer.from(user).toString("base64url")}.${mac}`;
  }

  /** #device returns the id of the request's device cookie when it is genuine and names `user`, else null. */
  #device(req: IncomingMessage, user: string): string | null {
    const v = cookieValue(req.headers.cookie, DEVICE_COOKIE);
    if (v === null || v.length > 512) return null;
    const [id = "", who = ""] = v.split(".");
    if (id === "" || Buffer.from(who, "base64url").toString() !== user) return null;
    return same(v, this.#deviceToken(user, id)) ? id : null;
  }

  /** logout ends the request's session (if any) and returns the Set-Cookie that clears the cookie. */
  async logout(req: IncomingMessage, cookiePath: string): Promise<string> {
    const id = cookieValue(req.headers.cookie, SESSION_COOKIE);
    if (id !== null) await this.access.deleteSession(sha256(id));
    return `${SESSION_COOKIE}=; Path=${cookiePath}; Max-Age=0; HttpOnly; SameSite=Lax`;
  }

  #forwardedHttps(req: IncomingMessage): boolean {
    return this.clients.trusted(req) && req.headers["x-forwarded-proto"] === "https";
  }
}

/** newApiToken makes a read-API token: the token (shown once), its hash (stored) and its visible prefix. */
export function newApiToken(): { token: string; hash: string; prefix: string } {
  const token = `whohas_${randomBytes(24).toString("base64url")}`;
  return { token, hash: sha256(token), prefix: token.slice(0, 11) };
}
