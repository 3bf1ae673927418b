import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { silentLogger } from "@whohas/core";
import { Auth } from "../auth/auth.js";
import { hashPassword } from "../auth/passwords.js";
import { createHubServer } from "../http.js";
import { Hub } from "../hub/hub.js";

const TOKEN = "agent-token-0123456789";

// The hub over HTTPS/WSS with a certificate of its own CA: agents and browsers verify it; nothing works without trust.
describe("TLS", () => {
  let dir: string;
  let cert: string;
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "whohas-tls-"));
    // A P-256 certificate for a day, for 127.0.0.1 and localhost. No argument here holds a space, so the split is the
    // list; the paths, which might, go apart.
    const args =
      "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=whohas-hub " +
      "-addext subjectAltName=IP:127.0.0.1,DNS:localhost";
    execFileSync("openssl", [...args.split(" "), "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "ignore" });
    cert = readFileSync(join(dir, "cert.pem"), "utf8");
    const hub = await Hub.open();
    const auth = await Auth.open(
      {
        users: [{ name: "olga", passwordHash: await hashPassword("correct horse"), role: "operator" }],
        proxy: null,
        sessionTtlMs: 3_600_000,
        viewerToken: null,
      },
      hub.store.access,
      hub.store.settings,
      silentLogger,
    );
    server = createHubServer({
      hub,
      agentToken: TOKEN,
      auth,
      logger: silentLogger,
      pages: (_q, res) => res.writeHead(404).end(),
    }).createServer({ cert, key: readFileSync(join(dir, "key.pem"), "utf8") });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("accepts an agent over wss:// that trusts the CA, and one that does not fails on the certificate", async () => {
    const ok = new WebSocket(`wss://127.0.0.1:${port}/agent`, { ca: cert, headers: { authorization: `Bearer ${TOKEN}` } });
    await once(ok, "open");
    ok.close();
    const untrusted = new WebSocket(`wss://127.0.0.1:${port}/agent`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const [err] = (await once(untrusted, "error")) as [Error & { code?: string }];
    expect(err.code).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY/);
  });

  it("serves the sign-in over HTTPS and marks the session cookie Secure", async () => {
    const body = JSON.stringify({ username: "olga", password: "correct horse" });
    const setCookie = await new Promise<string>((resolve, reject) => {
      const req = request(
        `https://127.0.0.1:${port}/api/auth/login`,
        { method: "POST", ca: cert, headers: { "content-type": "application/json" } },
        (res) => {
          res.resume();
          resolve(String(res.headers["set-cookie"]?.[0] ?? ""));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
    expect(setCookie).toMatch(/^whohas_session=.*; HttpOnly; SameSite=Lax; Secure$/);
  });
});
