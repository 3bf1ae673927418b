import type { IncomingMessage, ServerResponse } from "node:http";
import { normalizeIpKey } from "@whohas/core";
import type { Hub } from "../hub/hub.js";
import { incidentJson, ipJson } from "../hub/views.js";
import type { Principal } from "../auth/auth.js";
import { decodeSegment } from "../request-target.js";
import { MAX_LIST } from "../store/incidents.js";
import { parseDuration } from "../config/schema.js";
import type { CaptureFile, Evidence } from "../evidence/evidence.js";

/** REST_PREFIX is the read API for scripts and other tools (README "Read API"). */
export const REST_PREFIX = "/api/v1/";
/** TIMELINE_MS: how far back `GET /api/v1/ips/{ip}` reaches for its timeline. */
const TIMELINE_MS = 3_600_000;

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" };

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...JSON_HEADERS, ...headers }).end(JSON.stringify(body, null, 1) + "\n");
}

/** LIST_CHUNK: the entries of a long list serialized in one turn of the event loop. */
const LIST_CHUNK = 256;

/**
 * sendList answers with a list of what `entry` makes of each key (undefined: left out), a chunk at a time: the same
 * bytes as send() of the whole list, but a hub of hundreds of thousands of IPs neither holds every entry and one
 * string of them all at once (which outgrew the hub's heap) nor stops reading its agents while a client downloads.
 * Each entry is read when its chunk is written: a key gone by then is left out.
 */
async function sendList<K>(res: ServerResponse, head: boolean, keys: readonly K[], entry: (key: K) => unknown): Promise<void> {
  res.writeHead(200, JSON_HEADERS);
  if (head) {
    res.end();
    return;
  }
  let started = false;
  for (let i = 0; i < keys.length; i += LIST_CHUNK) {
    if (res.destroyed) return;
    let text = "";
    for (let k = i; k < Math.min(keys.length, i + LIST_CHUNK); k++) {
      const e = entry(keys[k] as K);
      if (e === undefined) continue;
      // An entry one level in, as JSON.stringify(list, null, 1) indents it (JSON text holds no raw line breaks).
      text += (started ? ",\n " : "[\n ") + JSON.stringify(e, null, 1).replaceAll("\n", "\n ");
      started = true;
    }
    const more = text === "" || res.write(text);
    await new Promise<void>((resolve) => {
      if (more) return void setImmediate(resolve);
      const done = () => {
        res.off("drain", done).off("close", done);
        resolve();
      };
      res.on("drain", done).on("close", done);
    });
  }
  if (!res.destroyed) res.end(started ? "\n]\n" : "[]\n");
}

/**
 * sendFleetIps answers `GET /api/v1/ips?cluster=NAME` for another cluster of the fleet: its IPs as its hub last
 * published them, each with `cluster`, `asOf` (when that hub last published: the entry was true then) and `reporting`
 * (false: that hub has been silent longer than STALE_MS, and the entry may be out of date). The entries hold the
 * verdict and what it rests on; the counts, timelines and captures are on that cluster's own hub.
 */
async function sendFleetIps(hub: Hub, cluster: string, head: boolean, res: ServerResponse): Promise<void> {
  const got = await hub.fleet.ips(cluster);
  if (got === null) {
    const known = (await hub.fleet.clusters()).map((c) => c.name);
    return send(res, 404, {
      error: `no cluster ${JSON.stringify(cluster)} reports to this hub's database (clusters: ${known.join(", ")})`,
    });
  }
  const { reportedAt: asOf, reporting } = got.cluster;
  return sendList(res, head, got.rows, (r) => ({
    cluster,
    ip: r.address,
    vlan: r.vlan,
    family: r.family,
    key: r.ip,
    state: r.state,
    services: r.services,
    announcer: r.announcer,
    expectedOwner: r.expectedOwner,
    responders: r.responders,
    findings: r.findings,
    silentDropNodes: r.silentDropNodes,
    asOf,
    reporting,
  }));
}

/**
 * handleRest answers the read API: GET only, for a Bearer token (api.viewerTokenFile, or one an admin made in
 * Settings) or a signed-in dashboard session; anyone else gets 401 saying how to get a token. An answer written
 * over time (a capture, the IP list) or read from the store (an IP's timeline, incidents) is returned as its promise,
 * for the server to log if it fails.
 */
export function handleRest(
  hub: Hub,
  principal: Principal | null,
  req: IncomingMessage,
  res: ServerResponse,
  evidence?: Evidence,
): Promise<void> | undefined {
  const url = new URL(req.url ?? "/", "http://hub");
  if (principal === null) {
    send(
      res,
      401,
      {
        error:
          "missing or wrong token: send Authorization: Bearer <token> with api.viewerTokenFile's token or one made in Settings > API tokens",
      },
      { "www-authenticate": 'Bearer realm="whohas"' },
    );
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    send(res, 405, { error: "the read API is read-only: GET" }, { allow: "GET, HEAD" });
    return;
  }
  const path = url.pathname.slice(REST_PREFIX.length).replace(/\/$/, "");
  const capture = /^(ips|incidents)\/([^/]+)\/capture$/.exec(path);
  if (capture !== null) {
    if (evidence === undefined) {
      send(res, 503, { error: "this hub keeps no evidence" });
      return;
    }
    if (req.method !== "GET") {
      send(res, 405, { error: "a capture is built when it is downloaded: GET only" }, { allow: "GET" });
      return;
    }
    // A signed-in browser sends its session cookie on a link followed from another site too: a capture asks every
    // agent, so it is built only for the dashboard's own pages (or a token).
    if (principal.via === "session" && req.headers["sec-fetch-site"] === "cross-site") {
      send(res, 403, { error: "a capture is downloaded from the dashboard's own pages: open the link there" });
      return;
    }
    return serveCapture(hub, evidence, principal, capture[1] === "ips" ? "ip" : "incident", decodeSegment(capture[2] ?? ""), url, res);
  }
  if (path === "ips") {
    const cluster = url.searchParams.get("cluster") || hub.clusterName;
    if (cluster !== hub.clusterName) return sendFleetIps(hub, cluster, req.method === "HEAD", res);
    const views = (ip: string) => {
      const v = hub.ip(ip);
      return v === null ? undefined : { cluster, ...ipJson(v) };
    };
    return sendList(res, req.method === "HEAD", hub.ipKeys(), views);
  }
  if (path === "clusters") {
    return hub.fleet.clusters().then((clusters) => send(res, 200, clusters));
  }
  if (path.startsWith("ips/")) {
    const asked = decodeSegment(path.slice(4));
    const ip = normalizeIpKey(asked);
    if (ip === null) {
      send(res, 400, { error: `"${asked}" is not an IP address (an address seen in a VLAN is ADDRESS@VLAN, e.g. 192.0.2.10@30)` });
      return;
    }
    const v = hub.ip(ip);
    if (v === null) {
      send(res, 404, { error: `whohas has seen no traffic and no LoadBalancer Service for ${ip}` });
      return;
    }
    const now = hub.clock();
    return Promise.all([hub.timeline(ip, now - TIMELINE_MS, now), hub.incidents({ ip, limit: 50 })]).then(([timeline, incidents]) =>
      send(res, 200, { cluster: hub.clusterName, ...ipJson(v), timeline, incidents: incidents.map(incidentJson) }),
    );
  }
  if (path === "cluster") {
    send(res, 200, { name: hub.clusterName, ...hub.summary() });
    return;
  }
  if (path === "nodes") {
    send(
      res,
      200,
      hub.nodes().map((a) => ({
        cluster: hub.clusterName,
        node: a.node,
        agent: { up: a.up, connected: a.connected, version: a.version, lastSeen: a.lastSeen },
        arp: a.arp,
        kubeIpvs0Addresses: a.facts?.kubeIpvs0.addresses ?? null,
        capture:
          a.facts === null
            ? null
            : {
                frames: a.facts.capture.frames,
                rejected: a.facts.capture.dropped,
                kernelDropped: a.facts.capture.kernelDropped,
                bufferDropped: a.dropped,
              },
      })),
    );
    return;
  }
  if (path === "incidents") {
    const state = url.searchParams.get("state");
    if (state !== null && state !== "open" && state !== "resolved") {
      send(res, 400, { error: "state must be open or resolved" });
      return;
    }
    const ip = url.searchParams.get("ip") ?? undefined;
    const limitText = url.searchParams.get("limit") ?? "500";
    const limit = /^\d{1,4}$/.test(limitText) ? Number(limitText) : NaN;
    if (!(limit >= 1 && limit <= MAX_LIST)) {
      send(res, 400, { error: `limit must be a whole number from 1 to ${MAX_LIST}` });
      return;
    }
    const subject = ip === undefined ? undefined : (normalizeIpKey(ip) ?? ip);
    return hub.incidents({ open: state === null ? undefined : state === "open", ip: subject, limit }).then((incidents) =>
      send(
        res,
        200,
        incidents.map((i) => ({ cluster: hub.clusterName, ...incidentJson(i) })),
      ),
    );
  }
  send(res, 404, {
    error: `no such endpoint: ${url.pathname} (try /api/v1/cluster, /api/v1/clusters, /api/v1/ips, /api/v1/ips/{ip}, /api/v1/ips/{ip}/capture, /api/v1/nodes, /api/v1/incidents, /api/v1/incidents/{id}/capture)`,
  });
}

/** DEFAULT_CAPTURE_MS: the window of an IP's capture when `since` is not given: the last minute. */
const DEFAULT_CAPTURE_MS = 60_000;

/** parseTime reads a query time: RFC 3339 ("2026-12-01T12:00:00Z") or milliseconds since the epoch. */
function parseTime(text: string | null, fallback: number): number | null {
  if (text === null || text === "") return fallback;
  if (/^\d{1,15}$/.test(text)) return Number(text);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(text)) return null;
  const t = Date.parse(text);
  return Number.isNaN(t) ? null : t;
}

/**
 * serveCapture answers an incident's or an IP's capture: the pcapng file the agents' frames make, to any principal
 * (it holds ARP and NDP frames only), each download in the audit log.
 */
async function serveCapture(
  hub: Hub,
  evidence: Evidence,
  principal: Principal,
  kind: "ip" | "incident",
  asked: string,
  url: URL,
  res: ServerResponse,
): Promise<void> {
  let build: () => Promise<CaptureFile>;
  let input: Record<string, unknown>;
  if (kind === "incident") {
    if (!/^\d{1,15}$/.test(asked)) return send(res, 400, { error: `"${asked}" is not an incident id (a whole number)` });
    const id = Number(asked);
    input = { incident: id };
    build = () => evidence.incidentFile(id);
  } else {
    const ip = normalizeIpKey(asked);
    if (ip === null)
      return send(res, 400, { error: `"${asked}" is not an IP address (an address seen in a VLAN is ADDRESS@VLAN, e.g. 192.0.2.10@30)` });
    const now = hub.clock();
    const until = parseTime(url.searchParams.get("until"), now);
    const lastText = url.searchParams.get("last");
    const last = lastText === null || lastText === "" ? DEFAULT_CAPTURE_MS : parseDuration(lastText);
    if (last === null) return send(res, 400, { error: "last is a duration: 90s, 5m, 1h (the window ends at until, or now)" });
    const since = until === null ? null : parseTime(url.searchParams.get("since"), until - last);
    if (since === null || until === null)
      return send(res, 400, { error: "since and until are times: RFC 3339 (2026-12-01T12:00:00Z) or milliseconds since the epoch" });
    input = { ip, since, until };
    build = () => evidence.ipFile(ip, since, until);
  }
  const file = await evidence.download(principal.user, input, build);
  if (!file.ok) return send(res, file.status, { error: file.message });
  res.writeHead(200, {
    "content-type": file.contentType,
    "content-length": String(file.bytes.length),
    "content-disposition": `attachment; filename="${file.filename}"`,
    "cache-control": "no-store",
  });
  res.end(Buffer.from(file.bytes.buffer, file.bytes.byteOffset, file.bytes.byteLength));
}
