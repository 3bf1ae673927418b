import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { X509Certificate } from "node:crypto";
import { rootCertificates, type PeerCertificate } from "node:tls";
import { peerAddress, REPLICA_HEADER, REPLICA_PEER_HEADER } from "../client-address.js";

/** Who leads now, as a standby sees it: the replica's name, and its address once it has written it (null before). */
export interface Leader {
  readonly name: string;
  readonly url: string | null;
}

export interface StandbyOptions {
  /** This replica's name. */
  readonly name: string;
  /** Reads who leads (null: none at this moment) and the replicas' shared key, from the shared database. */
  readonly lookup: () => Promise<{ leader: Leader | null; key: string | null }>;
  /** The agents' WebSocket paths (/agent, and under the base path): agents are told to try again, never forwarded. */
  readonly agentPaths: readonly string[];
  /** With TLS, this replica's own certificate chain (PEM): the leader must present the same, as replicas share it. */
  readonly certificate?: string;
}

/** LOOKUP_MS: how long a standby trusts its last look at who leads (one small query per look). */
const LOOKUP_MS = 1000;
/** Hop-by-hop headers a proxy does not pass on (RFC 9110, 7.6.1). */
const HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"]);

/**
 * A Standby is what a replica serves while another leads. It is ready (so Deployments roll and the Service may send
 * it anything) and passes every request and WebSocket of people and API clients on to the leader, marked with the
 * replicas' shared key and the client's address, so the leader limits, audits and signs in the real client. Agents
 * it refuses with 503 and Retry-After: they reconnect until they reach the leader, whose memory alone holds the live
 * view and the judge. It judges and stores nothing itself.
 */
export class Standby {
  readonly #o: StandbyOptions;
  #known: { leader: Leader | null; key: string | null; at: number } = { leader: null, key: null, at: -Infinity };

  constructor(o: StandbyOptions) {
    this.#o = o;
  }

  async #look(): Promise<{ leader: Leader | null; key: string | null }> {
    if (Date.now() - this.#known.at < LOOKUP_MS) return this.#known;
    const got = await this.#o.lookup().catch(() => ({ leader: null, key: null }));
    this.#known = { ...got, at: Date.now() };
    return got;
  }

  /** #forget makes the next request look again (the leader did not answer: it may have changed). */
  #forget(): void {
    this.#known = { leader: null, key: null, at: -Infinity };
  }

  #unavailable(leader: Leader | null, why: string): string {
    const who = leader === null ? "no replica leads at this moment (one takes over within seconds)" : `${leader.name} leads`;
    return `whohas: this hub replica (${this.#o.name}) is on standby; ${who}; ${why}: try again in a moment`;
  }

  /** listener serves the probes and /metrics itself and passes every other request to the leader. */
  readonly listener = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/healthz") return void res.writeHead(200, { "content-type": "text/plain" }).end("ok (standby)\n");
    if (path === "/metrics") {
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
      return void res.end(
        "# HELP whohas_hub_leader 1 on the replica that leads, 0 on a standby.\n# TYPE whohas_hub_leader gauge\nwhohas_hub_leader 0\n",
      );
    }
    void this.#look().then(({ leader, key }) => {
      if (path === "/readyz") {
        // Ready while there is a leader to pass requests to.
        const ready = leader?.url !== null && leader !== null;
        res.writeHead(ready ? 200 : 503, { "content-type": "application/json", "cache-control": "no-store" });
        return void res.end(`${JSON.stringify({ ready, role: "standby", replica: this.#o.name, leader: leader?.name ?? null })}\n`);
      }
      if (leader?.url === null || leader === null || key === null) return this.#refuse(res, leader, "nobody to pass the request to");
      const up = this.#open(leader.url, req, key);
      up.on("response", (r) => {
        res.writeHead(r.statusCode ?? 502, r.statusMessage, passed(r.headers));
        r.pipe(res);
      });
      up.on("error", (e) => {
        this.#forget();
        if (!res.headersSent) this.#refuse(res, leader, `the leader did not answer (${e.message})`);
        else res.destroy();
      });
      req.pipe(up);
      res.on("close", () => up.destroy());
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
    const path = (req.url ?? "/").split("?")[0];
    void this.#look().then(({ leader, key }) => {
      const refuse = (why: string) => {
        const body = `${this.#unavailable(leader, why)}\n`;
        socket.end(
          `HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      };
      if (path !== undefined && this.#o.agentPaths.includes(path)) return refuse("agents connect to the leader");
      if (leader?.url === null || leader === null || key === null) return refuse("nobody to pass the connection to");
      const up = this.#open(leader.url, req, key);
      up.on("upgrade", (r: IncomingMessage, upSocket: Socket, upHead: Buffer) => {
        socket.write(`HTTP/1.1 101 Switching Protocols\r\n${rawHeaders(r.rawHeaders)}\r\n`);
        if (upHead.length > 0) socket.write(upHead);
        if (head.length > 0) upSocket.write(head);
        upSocket.on("error", () => socket.destroy());
        socket.on("error", () => upSocket.destroy());
        upSocket.pipe(socket).pipe(upSocket);
      });
      up.on("response", (r) => {
        socket.write(`HTTP/1.1 ${r.statusCode} ${r.statusMessage}\r\n${rawHeaders(r.rawHeaders)}\r\n`);
        r.pipe(socket);
      });
      up.on("error", () => {
        this.#forget();
        refuse("the leader did not answer");
      });
      up.end();
    });
  };

  /** #open starts the request to the leader: the client's own headers, marked with the key and the client's address. */
  #open(url: string, req: IncomingMessage, key: string) {
    const target = new URL(url);
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) if (!HOP.has(name) && !name.startsWith("x-whohas-")) headers[name] = value;
    if (req.headers.upgrade !== undefined) {
      headers.connection = "Upgrade";
      headers.upgrade = req.headers.upgrade;
    }
    headers[REPLICA_HEADER] = key;
    headers[REPLICA_PEER_HEADER] = peerAddress(req);
    const common = { host: target.hostname, port: target.port, method: req.method, path: req.url, headers };
    if (target.protocol === "http:") return httpRequest(common);
    // The replicas share one certificate: the leader's is taken when it is this one, whatever address it is reached
    // at (a Pod's IP is in no certificate); anything else is refused before a byte of the request is sent.
    const own = this.#o.certificate === undefined ? null : new X509Certificate(this.#o.certificate).raw;
    return httpsRequest({
      ...common,
      ca: [...rootCertificates, this.#o.certificate ?? ""],
      checkServerIdentity: (_host: string, cert: PeerCertificate) =>
        own !== null && cert.raw.equals(own) ? undefined : new Error("the leader's certificate is not this replica's"),
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
