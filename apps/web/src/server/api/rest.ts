import type { IncomingMessage, ServerResponse } from "node:http";
import { isIP } from "@whohas/core";
import type { Hub, HubIpView } from "../hub/hub.js";
import type { Principal } from "../auth/auth.js";
import { decodeSegment } from "../request-target.js";

/** REST_PREFIX is the read API for scripts and other tools (README "Read API"). */
export const REST_PREFIX = "/api/v1/";
/** TIMELINE_MS: how far back `GET /api/v1/ips/{ip}` reaches for its timeline. */
const TIMELINE_MS = 3_600_000;

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers }).end(JSON.stringify(body, null, 1) + "\n");
}

/** ipJson is one IP as the read API documents it; times are milliseconds since the epoch. */
function ipJson(v: HubIpView) {
  return {
    ip: v.ip,
    state: v.state,
    services: v.services.map((s) => ({ namespace: s.namespace, name: s.name, externalTrafficPolicy: s.externalTrafficPolicy, ports: s.ports })),
    pool: v.pool,
    expectedOwner: v.expectedOwner === null ? null : { node: v.expectedOwner.node, source: v.expectedOwner.source },
    responders: v.responders.map((r) => ({ mac: r.mac, node: r.node, answering: r.answering, replies: r.replies, gratuitous: r.gratuitous, lastSeen: r.lastSeen, lastGratuitous: r.lastGratuitous, meanLatencyMs: r.meanLatencyMs })),
    fastest: v.fastest,
    findings: v.findings.map((f) => ({ type: f.type, detail: f.detail, macs: f.macs, firstSeen: f.firstSeen, lastSeen: f.lastSeen, incidentId: f.incidentId })),
    requests: v.requests,
    lastRequest: v.lastRequest,
    silentDropNodes: v.silentDropNodes,
  };
}

/**
 * handleRest answers the read API: GET only, for a Bearer token (api.viewerTokenFile, or one an admin made in
 * Settings) or a signed-in dashboard session; anyone else gets 401 saying how to get a token.
 */
export function handleRest(hub: Hub, principal: Principal | null, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? "/", "http://hub");
  if (principal === null) {
    send(res, 401, { error: "missing or wrong token: send Authorization: Bearer <token> with api.viewerTokenFile's token or one made in Settings > API tokens" }, { "www-authenticate": 'Bearer realm="whohas"' });
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    send(res, 405, { error: "the read API is read-only: GET" }, { allow: "GET, HEAD" });
    return;
  }
  const path = url.pathname.slice(REST_PREFIX.length).replace(/\/$/, "");
  if (path === "ips") {
    send(res, 200, hub.ips().map(ipJson));
    return;
  }
  if (path.startsWith("ips/")) {
    const ip = decodeSegment(path.slice(4));
    if (!isIP(ip)) {
      send(res, 400, { error: `"${ip}" is not an IP address` });
      return;
    }
    const v = hub.ip(ip);
    if (v === null) {
      send(res, 404, { error: `whohas has seen no traffic and no LoadBalancer Service for ${ip}` });
      return;
    }
    const now = hub.clock();
    send(res, 200, { ...ipJson(v), timeline: hub.timeline(ip, now - TIMELINE_MS, now), incidents: hub.incidents({ ip, limit: 50 }) });
    return;
  }
  if (path === "cluster") {
    send(res, 200, hub.cluster());
    return;
  }
  if (path === "nodes") {
    send(
      res,
      200,
      hub.nodes().map((a) => ({
        node: a.node,
        agent: { up: a.up, connected: a.connected, version: a.version, lastSeen: a.lastSeen },
        arp: a.arp,
        kubeIpvs0Addresses: a.facts?.kubeIpvs0.addresses ?? null,
        capture: a.facts === null ? null : { frames: a.facts.capture.frames, rejected: a.facts.capture.dropped, kernelDropped: a.facts.capture.kernelDropped, bufferDropped: a.dropped },
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
    send(res, 200, hub.incidents({ open: state === null ? undefined : state === "open", ip, limit: Number(url.searchParams.get("limit") ?? 500) || 500 }));
    return;
  }
  send(res, 404, { error: `no such endpoint: ${url.pathname} (try /api/v1/cluster, /api/v1/ips, /api/v1/ips/{ip}, /api/v1/nodes, /api/v1/incidents)` });
}
