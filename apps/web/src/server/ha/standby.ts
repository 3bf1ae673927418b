import { X509Certificate } from "node:crypto";
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import { DEFAULT_CLUSTER } from "@whohas/core";
import { peerAddress, REPLICA_HEADER, REPLICA_PEER_HEADER, vouchedByReplica } from "../client-address.js";

/**
 * Who leads now, as a standby sees it: the replica's name, its address once it has written it (null before), and
 * whether that is this very replica (an old session of it, or two replicas given one name).
 */
export interface Leader {
  readonly name: string;
  readonly url: string | null;
  readonly self: boolean;
}

export interface StandbyOptions {
  /** This replica's name. */
  readonly name: string;
  /** The cluster its hub watches: its gauge carries the label the leader's series carry (none for the default). */
  readonly cluster?: string;
  /** Reads who leads (null: none at this moment) and the replicas' shared key, from the shared database. */
  readonly lookup: () => Promise<{ leader: Leader | null; key: string | null }>;
  /** The agents' WebSocket paths (/agent, and under the base path): agents are told to try again, never forwarded. */
  readonly agentPaths: readonly string[];
  /** With TLS, this replica's own certificate chain (PEM): the leader must present the same leaf, as replicas share it. */
  readonly certificate?: string;
}

/** LOOKUP_MS: how long a standby trusts its last look at who leads (one small query per look). */
const LOOKUP_MS = 1000;
/** UNREACHABLE_MS: after the leader failed to answer, the standby says it is not ready this long (unless it answers). */
const UNREACHABLE_MS = 5000;
/** Hop-by-hop headers a proxy does not pass on (RFC 9110, 7.6.1). */
const HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"]);

/**
 * A Standby is what a replica serves while another leads. It is ready while the leader answers (so Deployments roll
 * and the Service may send it anything) and passes every request and WebSocket of people and API clients on to the
 * leader, marked with the replicas' shared key and the client's address, so the leader signs in, limits and audits
 * the real client. Agents it refuses with 503 and Retry-After: they reconnect until they reach the leader, whose
 * memory alone holds the live view and the judge. It judges and stores nothing itself.
 */
export class Standby {
  readonly #o: StandbyOptions;
  readonly #own: Buffer | null;
  #known: { leader: Leader | null; key: string | null; at: number } = { leader: null, key: null, at: -Infinity };
  #failedAt = -Infinity;

  constructor(o: StandbyOptions) {
    this.#o = o;
    this.#own = o.certificate === undefined ? null : new X509Certificate(o.certificate).raw;
  }

  async #look(): Promise<{ leader: Leader | null; key: string | null }> {
    if (Date.now() - this.#known.at < LOOKUP_MS) return this.#known;
    const got = await this.#o.lookup().catch(() => ({ leader: null, key: null }));
    this.#known = { ...got, at: Date.now() };
    return got;
  }

  /** #failed notes that the leader did not answer: the next request looks again, and /readyz says not ready a while. */
  #failed(): void {
    this.#known = { leader: null, key: null, at: -Infinity };
    this.#failedAt = Date.now();
  }

  /** #target is where a request goes, or why it cannot go anywhere. */
  #target(leader: Leader | null, key: string | null): { url: string; key: string } | { why: string } {
    if (leader === null) return { why: "nobody to pass it to" };
    if (leader.self)
      return {
        why: "the leader's lock is held under this replica's own name (an old session of it, or two replicas with one ha.name)",
      };
    if (leader.url === null || key === null) return { why: "the leader has not said where it listens yet" };
    return { url: leader.url, key };
  }

  #unavailable(leader: Leader | null, why: string): string {
    const who = leader === null ? "no replica leads at this moment (one takes over within seconds)" : `${leader.name} leads`;
    return `whohas: this hub replica (${this.#o.name}) is on standby; ${who}; ${why}: try again in a moment`;
  }

  /** metricsListener serves the metrics port: /metrics, /healthz and /readyz, nothing else (as the leader's does). */
  readonly metricsListener = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/healthz" || path === "/readyz") return this.listener(req, res);
    if (path !== "/metrics")
      return void res.writeHead(404, { "content-type": "text/plain" }).end("this port serves /metrics, /healthz and /readyz only\n");
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    const labels = this.#o.cluster === undefined || this.#o.cluster === DEFAULT_CLUSTER ? "" : `{cluster="${this.#o.cluster}"}`;
    res.end(
      `# HELP whohas_hub_leader 1 on the replica that leads, 0 on a standby.\n# TYPE whohas_hub_leader gauge\nwhohas_hub_leader${labels} 0\n`,
    );
  };

  /** listener serves the probes itself and passes every other request to the leader. */
  readonly listener = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (path === "/healthz") return void res.writeHead(200, { "content-type": "text/plain" }).end("ok (standby)\n");
    void this.#look().then(({ leader, key }) => {
      const target = this.#target(leader, key);
      if (path === "/readyz") {
        // Ready while there is a leader to pass requests to, that answered lately.
        const ready = "url" in target && Date.now() - this.#failedAt > UNREACHABLE_MS;
        res.writeHead(ready ? 200 : 503, { "content-type": "application/json", "cache-control": "no-store" });
        const why = "why" in target ? target.why : ready ? null : "the leader did not answer lately";
        return void res.end(`${JSON.stringify({ ready, role: "standby", replica: this.#o.name, leader: leader?.name ?? null, why })}\n`);
      }
      // An agent's request without a proper upgrade is no agent's business here either.
      if (this.#o.agentPaths.includes(path)) return this.#refuse(res, leader, "agents connect to the leader");
      // Passed on by a replica already: never again (a loop between replicas).
      if (key !== null && vouchedByReplica(req, key)) return this.#refuse(res, leader, "a request another replica passed on");
      if ("why" in target) return this.#refuse(res, leader, target.why);
      const up = this.#open(target.url, req, target.key, false);
      up.on("response", (r) => {
        this.#failedAt = -Infinity;
        res.writeHead(r.statusCode ?? 502, r.statusMessage, passed(r.headers));
        r.pipe(res);
        // A stream the leader broke off (it died): break this one too, so that the client reconnects.
        r.on("close", () => {
          if (!r.complete) res.destroy();
        });
      });
      up.on("error", (e) => {
        this.#failed();
        if (!res.headersSent) this.#refuse(res, leader, `the leader did not answer (${e.message})`);
        else res.destroy();
      });
      req.pipe(up);
      res.on("close", () => {
        if (!res.writableFinished) up.destroy();
      });
    });
  };

  #refuse(res: ServerResponse, leader: Leader | null, why: string): void {
    res.writeHead(503, { "content-type": "application/json", "retry-after": "1", "cache-control": "no-store" });
    res.end(
      `${JSON.stringify({ error: this.#unavailable(leader, why), role: "standby", replica: this.#o.name, leader: leader?.name ?? null })}\n`,
    );
  }

  /** upgrade passes a WebSocket on to the leader, except an agent's: 503 with Retry-After, to try the next address. */
  readonly upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on("error", () => undefined);
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    void this.#look().then(({ leader, key }) => {
      const refuse = (why: string) => {
        const body = `${this.#unavailable(leader, why)}\n`;
        socket.end(
          `HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      };
      if (this.#o.agentPaths.includes(path)) return refuse("agents connect to the leader");
      if (key !== null && vouchedByReplica(req, key)) return refuse("a connection another replica passed on");
      const target = this.#target(leader, key);
      if ("why" in target) return refuse(target.why);
      const up = this.#open(target.url, req, target.key, true);
      up.on("upgrade", (r: IncomingMessage, upSocket: Socket, upHead: Buffer) => {
        socket.write(`HTTP/1.1 101 Switching Protocols\r\n${rawHeaders(r.rawHeaders)}\r\n`);
        if (upHead.length > 0) socket.write(upHead);
        if (head.length > 0) upSocket.write(head);
        upSocket.on("error", () => socket.destroy());
        upSocket.on("close", () => socket.destroy());
        socket.on("close", () => upSocket.destroy());
        upSocket.pipe(socket).pipe(upSocket);
      });
      up.on("response", (r) => {
        socket.write(`HTTP/1.1 ${r.statusCode} ${r.statusMessage}\r\n${rawHeaders(r.rawHeaders)}\r\n`);
        r.pipe(socket);
      });
      up.on("error", () => {
        this.#failed();
        refuse("the leader did not answer");
      });
      up.end();
    });
  };

  /**
   * #open starts the request to the leader: the client's own headers (but any that claim to come from a replica),
   * marked with the key and the client's address; an upgrade only when the client asked for one.
   */
  #open(url: string, req: IncomingMessage, key: string, upgrade: boolean) {
    const target = new URL(url);
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers))
      if (!HOP.has(name) && name !== REPLICA_HEADER && name !== REPLICA_PEER_HEADER) headers[name] = value;
    if (upgrade) {
      headers.connection = "Upgrade";
      headers.upgrade = req.headers.upgrade;
    }
    headers[REPLICA_HEADER] = key;
    headers[REPLICA_PEER_HEADER] = peerAddress(req);
    const common = { host: target.hostname, port: target.port, method: req.method, path: req.url, headers };
    if (target.protocol === "http:") return httpRequest(common);
    // The replicas share one certificate: the leader is taken when it shows this replica's own, whatever address it is
    // reached at (a Pod's IP is in no certificate) and whoever signed it; the request goes out only after that check.
    const own = this.#own;
    return httpsRequest({
      ...common,
      createConnection: (_o: unknown, done: (e: Error | null, s: Duplex) => void) => {
        const s = tlsConnect({ host: target.hostname, port: Number(target.port || 443), rejectUnauthorized: false });
        s.once("error", (e: Error) => done(e, s));
        s.once("secureConnect", () => {
          if (own !== null && s.getPeerCertificate().raw.equals(own)) return done(null, s);
          s.destroy();
          done(new Error("the leader's certificate is not this replica's (replicas share one certificate)"), s);
        });
        return undefined;
      },
    });
  }
}

/** passed drops the hop-by-hop headers of the leader's answer. */
function passed(h: IncomingMessage["headers"]): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(h)) if (!HOP.has(name)) out[name] = value;
  return out;
}

/** rawHeaders writes header lines as received. */
function rawHeaders(raw: readonly string[]): string {
  let out = "";
  for (let i = 0; i + 1 < raw.length; i += 2) out += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return out;
}
