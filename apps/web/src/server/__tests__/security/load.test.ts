// What one signed-in user, a read-API token or an unauthenticated client can make the hub do at once: bounded.
import { describe, expect, it } from "vitest";
import { connect, type Socket } from "node:net";
import { HEADERS_TIMEOUT_MS, MAX_BATCH, REQUEST_TIMEOUT_MS } from "../../http.js";
import { VIEWER_TOKEN, raw, startHub } from "./harness.js";

const bearer = { authorization: `Bearer ${VIEWER_TOKEN}` };

describe("load one principal can put on the hub", () => {
  it("answers a batch of at most MAX_BATCH calls, and refuses a larger one before running any", async () => {
    const { origin } = await startHub();
    const batch = (n: number) =>
      raw(origin, `/api/trpc/${Array.from({ length: n }, () => "ips.list").join(",")}?batch=1&input=%7B%7D`, bearer);
    expect((await batch(MAX_BATCH)).status).toBe(200);
    const refused = await batch(MAX_BATCH + 1);
    expect(refused.status).toBe(400);
    expect(refused.body).toContain("Batch call exceeds maximum size");
  });

  it("holds each principal to its live streams, and gives them back as they close", async () => {
    const { origin } = await startHub({ extra: { streamsPerUser: 3, maxStreams: 100 } });
    const open: AbortController[] = [];
    const stream = async () => {
      const ac = new AbortController();
      open.push(ac);
      const res = await fetch(`${origin}/api/trpc/cluster.live`, { headers: bearer, signal: ac.signal });
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      let text = "";
      // Two whole events: "connected", then the first value or the refusal.
      while (text.split("\n\n").length < 3) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      return text;
    };
    for (let i = 0; i < 3; i++) expect(await stream()).not.toContain("serialized-error");
    const fourth = await stream();
    expect(fourth).toContain("serialized-error");
    expect(fourth).toContain("live views open, the most one user may");
    for (const ac of open.splice(0, 2)) ac.abort();
    await expect.poll(async () => !(await stream()).includes("serialized-error")).toBe(true);
    for (const ac of open) ac.abort();
  });

  it("answers the read API's incidents with a limit of 1..5000 only", async () => {
    const { origin } = await startHub();
    for (const limit of ["-1", "0", "5001", "1e3", "abc", "99999999999"]) {
      const r = await raw(origin, `/api/v1/incidents?limit=${limit}`, bearer);
      expect([limit, r.status]).toEqual([limit, 400]);
    }
    expect((await raw(origin, "/api/v1/incidents?limit=5000", bearer)).status).toBe(200);
  });
});

describe("connections", () => {
  it("bounds the time a client may take to send a request, whatever it is", async () => {
    const { server } = await startHub();
    const s = server.createServer();
    expect([s.headersTimeout, s.requestTimeout]).toEqual([HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS]);
    expect(REQUEST_TIMEOUT_MS).toBeLessThanOrEqual(30_000);
  });

  it("closes a connection past connectionsPerAddress at once, and takes one again when another closes", async () => {
    const { origin } = await startHub({ extra: { connections: { max: 1000, perAddress: 4 } } });
    const u = new URL(origin);
    const sockets: Socket[] = [];
    const open = async () => {
      const s = connect(Number(u.port), u.hostname);
      sockets.push(s);
      await new Promise((r) => s.once("connect", r));
      return s;
    };
    for (let i = 0; i < 4; i++) await open();
    const fifth = await open();
    await new Promise((r) => fifth.once("close", r));
    sockets[0]?.destroy();
    await new Promise((r) => setTimeout(r, 50));
    const again = await open();
    again.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    const answer = await new Promise<string>((r) => again.once("data", (d: Buffer) => r(d.toString())));
    expect(answer).toMatch(/^HTTP\/1.1 200/);
    for (const s of sockets) s.destroy();
  });
});
