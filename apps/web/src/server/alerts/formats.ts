import { createHash, createHmac } from "node:crypto";
import { DEFAULT_CLUSTER, splitIpKey, subjectCluster, subjectIsIp, subjectNode } from "@whohas/core";
import type { Format } from "../store/outbox.js";

/** An Alert is one incident of the notified IP, firing or resolved. */
export interface Alert {
  readonly incidentId: number;
  readonly type: string;
  readonly status: "firing" | "resolved";
  readonly detail: string;
  readonly macs: readonly string[];
  /** The node of each MAC (null when no agent has it: not a cluster node), in the same order. */
  readonly nodes: readonly (string | null)[];
  /** The vendor each MAC's prefix is registered to (null: none), in the same order. */
  readonly vendors: readonly (string | null)[];
  readonly firstSeen: number;
  readonly lastSeen: number;
  readonly resolvedAt: number | null;
  /** Times the finding was seen (the first few): when sample frames were captured. */
  readonly samples: readonly number[];
}

/** A Notice is what one notification says: an IP's incidents, grouped as Alertmanager groups by label. */
export interface Notice {
  readonly id: string;
  readonly receiver: string;
  /** The cluster the subject is in (cluster.name): several clusters' hubs may notify one receiver. */
  readonly cluster: string;
  /**
   * The subject: an IP, node/NAME for a node's incidents (agent down, strictARP drift), or cluster/kube-proxy for
   * kube-proxy's ConfigMap (strictARP reverted).
   */
  readonly ip: string;
  readonly status: "firing" | "resolved";
  readonly services: readonly { readonly namespace: string; readonly name: string }[];
  readonly expectedOwner: string | null;
  readonly alerts: readonly Alert[];
  /** The dashboard's address for links (alerting.externalUrl), null when not configured. */
  readonly externalUrl: string | null;
  readonly test?: boolean;
}

const iso = (t: number) => new Date(t).toISOString();
/** Alertmanager's "not resolved yet" endsAt. */
const ZERO_TIME = "0001-01-01T00:00:00Z";

const SEVERITY: Record<string, "critical" | "warning"> = {
  "multi-responder": "critical",
  "address-conflict": "critical",
  "wrong-owner": "critical",
  "wrong-interface": "warning",
  "split-brain": "critical",
  "silent-drop": "critical",
};

function alertName(type: string): string {
  return `Whohas${type.replace(/(^|-)(\w)/g, (_, _d: string, c: string) => c.toUpperCase())}`;
}

function ipUrl(n: Notice): string | null {
  if (n.externalUrl === null) return null;
  const base = n.externalUrl.replace(/\/$/, "");
  if (subjectIsIp(n.ip)) return `${base}/ips/${encodeURIComponent(n.ip)}`;
  const incident = n.alerts[0]?.incidentId;
  return subjectNode(n.ip) !== null || incident === undefined ? `${base}/nodes` : `${base}/incidents/${incident}`;
}

/** captureUrl is where an IP incident's frames are downloaded (a node's incidents have none), null without externalUrl. */
function captureUrl(n: Notice, a: Alert): string | null {
  if (n.externalUrl === null || !subjectIsIp(n.ip)) return null;
  return `${n.externalUrl.replace(/\/$/, "")}/api/v1/incidents/${a.incidentId}/capture`;
}

/** clusterObject names a cluster subject's object: cluster/kube-proxy is ConfigMap kube-system/kube-proxy. */
const clusterObject = (name: string) => `kube-system/${name}`;

/** subjectLabels are the grouping labels: the IP (and its VLAN when it was seen tagged), the node, or the ConfigMap. */
function subjectLabels(n: Notice): Record<string, string> {
  const node = subjectNode(n.ip);
  if (node !== null) return { node };
  const cluster = subjectCluster(n.ip);
  if (cluster !== null) return { configmap: clusterObject(cluster) };
  const { ip, vlan } = splitIpKey(n.ip);
  return vlan === null ? { ip } : { ip, vlan: String(vlan) };
}

/** shown is the subject as a person reads it: "192.0.2.10", "192.0.2.10 on VLAN 30", the node, or the ConfigMap. */
function shown(n: Notice): string {
  const node = subjectNode(n.ip);
  if (node !== null) return node;
  const cluster = subjectCluster(n.ip);
  if (cluster !== null) return `ConfigMap ${clusterObject(cluster)}`;
  const { ip, vlan } = splitIpKey(n.ip);
  return vlan === null ? ip : `${ip} on VLAN ${vlan}`;
}

function who(a: Alert): string {
  return a.macs.map((m, i) => `${a.nodes[i] ?? `not a cluster node, ${a.vendors[i] ?? "vendor not registered"}`} (${m})`).join(", ");
}

/** summary is the one line a person reads first. */
export function summary(n: Notice): string {
  const firing = n.alerts.filter((a) => a.status === "firing");
  const svc = n.services.map((s) => `${s.namespace}/${s.name}`).join(", ");
  const where = n.cluster === DEFAULT_CLUSTER ? "" : ` in cluster ${n.cluster}`;
  const what = `${shown(n)}${svc === "" ? "" : ` (${svc})`}${where}`;
  if (n.test === true) return `whohas test notification to ${n.receiver}`;
  if (firing.length === 0) return `RESOLVED: ${what}: ${n.alerts.map((a) => a.type).join(", ")} cleared`;
  return `FIRING: ${what}: ${firing.map((a) => a.detail).join("; ")}`;
}

/** genericBody is whohas' own JSON (signed per Standard Webhooks). */
export function genericBody(n: Notice): unknown {
  return {
    version: "1",
    type: n.test === true ? "whohas.test" : "whohas.incident",
    id: n.id,
    status: n.status,
    summary: summary(n),
    cluster: n.cluster,
    ip: subjectIsIp(n.ip) ? splitIpKey(n.ip).ip : null,
    vlan: subjectIsIp(n.ip) ? splitIpKey(n.ip).vlan : null,
    family: subjectIsIp(n.ip) ? splitIpKey(n.ip).family : null,
    node: subjectNode(n.ip),
    services: n.services,
    expectedOwner: n.expectedOwner,
    url: ipUrl(n),
    alerts: n.alerts.map((a) => ({
      incidentId: a.incidentId,
      type: a.type,
      status: a.status,
      detail: a.detail,
      responders: a.macs.map((mac, i) => ({ mac, node: a.nodes[i] ?? null, vendor: a.vendors[i] ?? null })),
      captureUrl: captureUrl(n, a),
      firstSeen: iso(a.firstSeen),
      lastSeen: iso(a.lastSeen),
      resolvedAt: a.resolvedAt === null ? null : iso(a.resolvedAt),
      sampleTimes: a.samples.map(iso),
    })),
  };
}

/**
 * slackText escapes text for Slack's mrkdwn: &, < and > are its only control characters ("<!channel>",
 * "<https://x|y>"), so a node, Service or MAC name can never mention people or hide a link; a line break cannot start
 * a line of its own. Every mrkdwn object is sent `verbatim`, so Slack does not turn bare names into mentions or links.
 */
export function slackText(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/[\r\n\u2028\u2029]+/g, " ");
}

/** slackBody is an incoming-webhook message: `text` (notifications, fallbacks) and Block Kit `blocks`. */
export function slackBody(n: Notice): unknown {
  const text = slackText(summary(n));
  const url = ipUrl(n);
  // A link's own URL: escaped the same way, and "|" (which would end it) percent-encoded.
  const link = url === null ? "" : ` · <${slackText(url).replace(/\|/g, "%7C")}|open in whohas>`;
  const lines = n.alerts.map((a) => {
    const capture = captureUrl(n, a);
    const frames = capture === null ? "" : ` · <${slackText(capture).replace(/\|/g, "%7C")}|capture>`;
    return `${a.status === "firing" ? ":red_circle:" : ":large_green_circle:"} *${slackText(a.type)}* ${slackText(a.detail)}\nanswering: ${slackText(who(a)) || "-"} · since ${iso(a.firstSeen)}${frames}`;
  });
  return {
    text,
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: `*${text}*`, verbatim: true } },
      ...lines.map((l) => ({ type: "section", text: { type: "mrkdwn", text: l, verbatim: true } })),
      {
        type: "context",
        elements: [{ type: "mrkdwn", text: `expected owner: ${slackText(n.expectedOwner ?? "unknown")}${link}`, verbatim: true }],
      },
    ],
  };
}

function fingerprint(labels: Record<string, string>): string {
  const text = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k] ?? ""}`)
    .join("\xff");
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

/** alertmanagerBody is Alertmanager's webhook payload, version 4: receivers written for Alertmanager take it unchanged. */
export function alertmanagerBody(n: Notice): unknown {
  const svc = n.services[0];
  const alerts = n.alerts.map((a) => {
    const labels: Record<string, string> = {
      alertname: alertName(a.type),
      // The default cluster's alerts keep the labels (and fingerprints) they had before clusters were named.
      ...(n.cluster === DEFAULT_CLUSTER ? {} : { cluster: n.cluster }),
      ...subjectLabels(n),
      ...(subjectIsIp(n.ip) ? { family: String(splitIpKey(n.ip).family) } : {}),
      type: a.type,
      severity: SEVERITY[a.type] ?? "warning",
    };
    if (svc !== undefined) {
      labels.namespace = svc.namespace;
      labels.service = svc.name;
    }
    return {
      status: a.status,
      labels,
      annotations: {
        summary: `${a.type} on ${shown(n)}`,
        description: `${a.detail}. Answering: ${who(a) || "-"}. Expected owner: ${n.expectedOwner ?? "unknown"}.`,
        ...(captureUrl(n, a) === null ? {} : { capture_url: captureUrl(n, a) ?? "" }),
      },
      startsAt: iso(a.firstSeen),
      endsAt: a.resolvedAt === null ? ZERO_TIME : iso(a.resolvedAt),
      generatorURL: ipUrl(n) ?? "",
      fingerprint: fingerprint(labels),
    };
  });
  const common = (key: "labels" | "annotations") => {
    const first = alerts[0]?.[key] ?? {};
    return Object.fromEntries(Object.entries(first).filter(([k, v]) => alerts.every((a) => (a[key] as Record<string, string>)[k] === v)));
  };
  return {
    version: "4",
    groupKey: `{}:{${Object.entries(subjectLabels(n))
      .map(([k, v]) => `${k}="${v}"`)
      .join(",")}}`,
    truncatedAlerts: 0,
    status: n.status,
    receiver: n.receiver,
    groupLabels: subjectLabels(n),
    commonLabels: common("labels"),
    commonAnnotations: common("annotations"),
    externalURL: n.externalUrl ?? "",
    alerts,
  };
}

/** render is the body a receiver of `format` gets. */
export function render(format: Format, n: Notice): string {
  return JSON.stringify(format === "slack" ? slackBody(n) : format === "alertmanager" ? alertmanagerBody(n) : genericBody(n));
}

/**
 * signature is Standard Webhooks' `webhook-signature`: "v1," + base64 HMAC-SHA256 of "id.timestamp.body". A secret
 * written as `whsec_<base64>` is used as the bytes it encodes (the spec's form); any other text as its UTF-8 bytes.
 */
export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = secret.startsWith("whsec_") ? Buffer.from(secret.slice(6), "base64") : Buffer.from(secret, "utf8");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`;
}

/** headers are the request headers of one attempt: JSON, and for signed receivers the Standard Webhooks trio. */
export function headers(id: string, secret: string | null, body: string, now: number): Record<string, string> {
  const h: Record<string, string> = { "content-type": "application/json", "user-agent": "whohas-hub", "webhook-id": id };
  if (secret !== null) {
    const ts = Math.floor(now / 1000);
    h["webhook-timestamp"] = String(ts);
    h["webhook-signature"] = signature(secret, id, ts, body);
  }
  return h;
}
