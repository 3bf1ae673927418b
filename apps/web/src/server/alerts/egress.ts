import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { addressScope } from "@whohas/core";
import { trustList } from "../client-address.js";

/** REQUEST_TIMEOUT_MS: one delivery attempt's limit, connection and answer included. */
export const REQUEST_TIMEOUT_MS = 10_000;
/** MAX_ANSWER_BYTES: how much of a receiver's answer is read (for the log and Settings); the rest is never read. */
export const MAX_ANSWER_BYTES = 2048;

/**
 * An EgressPolicy says where the hub may send notifications. Receivers are reached on public addresses only,
 * unless an operator names the host (allowHosts, which then is the only list allowed) or allows private
 * networks (allowPrivate: RFC 1918, shared address space, IPv6 unique local). Loopback, link-local (cloud
 * metadata), unspecified and reserved addresses are reached only through a host named in allowHosts.
 */
export interface EgressPolicy {
  /** Host names or addresses/CIDRs that may receive (empty: any host whose addresses pass the scope rule). */
  readonly allowHosts: readonly string[];
  readonly allowPrivate: boolean;
}

/** An Attempt is what a receiver answered (or why there was no answer). */
export interface Attempt {
  readonly status: number | null;
  readonly body: string;
  readonly ms: number;
  readonly error: string | null;
  readonly retryAfterMs: number | null;
}

/** retryAfter reads Retry-After (seconds or an HTTP date) as milliseconds from now, null when absent or unreadable. */
export function retryAfter(value: string | null, now: number): number | null {
  if (value === null) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : Math.max(0, t - now);
}

/** An Egress checks receiver hosts and addresses against an EgressPolicy. */
export class Egress {
  readonly #names: ReadonlySet<string>;
  readonly #ranges: ReturnType<typeof trustList>;

  constructor(readonly policy: EgressPolicy) {
    const names = new Set<string>();
    const ranges: string[] = [];
    for (const h of policy.allowHosts) {
      const bare = h.replace(/^\[|\]$/g, "");
      if (isIP(bare.split("/")[0] ?? "") !== 0) ranges.push(bare);
      else names.add(h.toLowerCase());
    }
    this.#names = names;
    this.#ranges = trustList(ranges);
  }

  #listed(host: string, address: string | null): boolean {
    if (this.#names.has(host.toLowerCase())) return true;
    if (address === null) return false;
    const family = isIP(address);
    return family !== 0 && this.#ranges.check(address, family === 4 ? "ipv4" : "ipv6");
  }

  /** hostRefusal says why a URL's host may not receive at all (before any lookup), or null. */
  hostRefusal(hostname: string): string | null {
    const host = hostname.replace(/^\[|\]$/g, "");
    const literal = isIP(host) !== 0 ? host : null;
    if (this.policy.allowHosts.length > 0 && !this.#listed(host, literal))
      return `${host} is not in alerting.allowHosts (${this.policy.allowHosts.join(", ")})`;
    return literal === null ? null : this.addressRefusal(host, literal);
  }

  /** addressRefusal says why `host` may not be reached at `address` (what DNS gave), or null. */
  addressRefusal(host: string, address: string): string | null {
    const scope = addressScope(address);
    if (scope === null) return `${address} is not an IP address`;
    if (scope === "public") return null;
    const what = host === address ? address : `${host} resolves to ${address}, which`;
    if (this.#listed(host, address)) return scope === "unspecified" ? `${what} is the unspecified address` : null;
    if (scope === "private" && this.policy.allowPrivate) return null;
    const fix =
      scope === "private"
        ? "set alerting.allowPrivate: true, or list the host in alerting.allowHosts"
        : "list the host in alerting.allowHosts if this receiver is really meant";
    return `${what} is ${scope === "unspecified" ? "an" : "a"} ${scope} address: refused (${fix})`;
  }

  /**
   * lookup resolves a host for a connection and refuses it when any of its addresses is refused: the check is made
   * on the very addresses the socket connects to, at send time, so a name that resolved to a public address when
   * the receiver was saved cannot be pointed at the hub's own network later.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err !== null) return void callback(err, "", 0);
      for (const a of addresses) {
        const why = this.addressRefusal(hostname, a.address);
        if (why !== null) return void callback(Object.assign(new Error(why), { code: "EREFUSED_SCOPE" }), "", 0);
      }
      if ((options as { all?: boolean }).all === true)
        return void (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (first === undefined) return void callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 0);
      callback(null, first.address, first.family);
    });
  };

  /**
   * post sends one notification and reads at most MAX_ANSWER_BYTES of the answer (a receiver cannot make the hub
   * buffer a large body). Redirects are not followed: the receiver's URL must be its final one.
   */
  post(url: string, body: string, headers: Record<string, string>, now: () => number): Promise<Attempt> {
    const t0 = now();
    const failed = (error: string): Attempt => ({ status: null, body: "", ms: now() - t0, error, retryAfterMs: null });
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return Promise.resolve(failed(`"${url}" is not a URL`));
    }
    const refused = this.hostRefusal(u.hostname);
    if (refused !== null) return Promise.resolve(failed(refused));
    const send = u.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise<Attempt>((resolve) => {
      let settled = false;
      const finish = (a: Attempt) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(a);
      };
      const req = send(
        u,
        { method: "POST", headers: { ...headers, "content-length": String(Buffer.byteLength(body)) }, lookup: this.lookup },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          let size = 0;
          const done = () => {
            const text = Buffer.concat(chunks).toString("utf8").slice(0, MAX_ANSWER_BYTES);
            const status = res.statusCode ?? 0;
            const redirect =
              status >= 300 && status < 400
                ? `the receiver answers ${res.statusCode} (a redirect): whohas does not follow redirects, use the final URL`
                : null;
            const ra = res.headers["retry-after"];
            finish({
              status,
              body: text,
              ms: now() - t0,
              error: redirect,
              retryAfterMs: retryAfter(typeof ra === "string" ? ra : null, now()),
            });
            res.destroy();
          };
          res.on("data", (c: Buffer) => {
            if (size >= MAX_ANSWER_BYTES) return;
            chunks.push(c.subarray(0, MAX_ANSWER_BYTES - size));
            size += c.length;
            if (size >= MAX_ANSWER_BYTES) done();
          });
          res.on("end", done);
          res.on("error", done);
        },
      );
      const timer = setTimeout(() => {
        req.destroy();
        finish(failed(`no answer within ${REQUEST_TIMEOUT_MS / 1000} s`));
      }, REQUEST_TIMEOUT_MS);
      req.on("error", (e: NodeJS.ErrnoException) => finish(failed(e.code === "EREFUSED_SCOPE" ? e.message : (e.code ?? e.message))));
      req.end(body);
    });
  }
}
