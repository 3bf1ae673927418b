// What the plugin prints: the read API's objects as kubectl-style tables (pure: the objects in, text out). Every
// string from the hub goes through clean(): a Service annotation or a node name must not be able to move the cursor,
// clear the screen or print a line of its own in an operator's terminal.

/** clean shows control characters (C0, DEL, C1: escape sequences, carriage returns, new lines) as \xNN. */
export function clean(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** The parts of the read API's IP object the tables show. */
export interface ApiIp {
  readonly key: string;
  readonly ip: string;
  readonly vlan: number | null;
  readonly state: string;
  readonly services: readonly { readonly namespace: string; readonly name: string; readonly externalTrafficPolicy?: string }[];
  readonly announcer: string | null;
  readonly expectedOwner: { readonly node: string; readonly source: string } | null;
  readonly ownerUnknown: string | null;
  readonly responders: readonly {
    readonly mac: string;
    readonly node: string | null;
    readonly vendor?: string | null;
    readonly answering: boolean;
    readonly replies: number;
    readonly gratuitous: number;
    readonly lastSeen: number;
    readonly meanLatencyMs: number | null;
  }[];
  readonly fastest: string | null;
  readonly findings: readonly {
    readonly type: string;
    readonly detail: string;
    readonly firstSeen: number;
    readonly incidentId: number | null;
  }[];
  readonly requests: number;
  readonly silentDropNodes: readonly string[];
  readonly handovers: readonly {
    readonly from: { readonly mac: string; readonly node: string | null };
    readonly to: { readonly mac: string; readonly node: string | null };
    readonly at: number;
    readonly gapMs: number;
    readonly unanswered: number;
    readonly announced: boolean | null;
  }[];
  readonly askers: readonly {
    readonly ip: string;
    readonly mac: string | null;
    readonly requests: number;
    readonly firstAnswerChanges: number;
  }[];
}

/** The parts of the read API's incident object the table shows. */
export interface ApiIncident {
  readonly id: number;
  readonly key: string;
  readonly type: string;
  readonly detail: string;
  readonly firstSeen: number;
  readonly lastSeen: number;
  readonly count: number;
  readonly resolvedAt: number | null;
  readonly acknowledgedBy: string | null;
  readonly facets?: readonly { readonly type: string; readonly resolvedAt: number | null }[];
}

/** SEVERE: the findings that make the plugin exit 1, as `whohas analyze` does. */
export type Severe = readonly string[];

/** several tells whether an IP has several responders: its state, or a severe finding open on it. */
export const several = (ip: ApiIp, severe: Severe): boolean =>
  ip.state === "multi-responder" || ip.findings.some((f) => severe.includes(f.type));

/**
 * openTypes are the findings open in an incident now: its facets still open. An incident is named after the worst
 * finding it ever held, which may have cleared (strictARP fixed, one wrong node left answering).
 */
export const openTypes = (i: ApiIncident): string[] =>
  i.resolvedAt !== null ? [] : i.facets === undefined ? [i.type] : i.facets.filter((f) => f.resolvedAt === null).map((f) => f.type);

/** severeIncident: an open incident with a severe finding open among its facets. */
export const severeIncident = (i: ApiIncident, severe: Severe): boolean => openTypes(i).some((t) => severe.includes(t));

/** table aligns rows under their headers, three spaces apart, as kubectl prints (the last column is not padded). */
export function table(headers: readonly string[], dirty: readonly (readonly string[])[]): string {
  const rows = dirty.map((r) => r.map(clean));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("   ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n") + "\n";
}

/** age says how long ago `t` was, as kubectl does: 45s, 12m, 3h, 5d. */
export function age(t: number, now: number): string {
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

const dash = (s: string | null | undefined): string => (s === null || s === undefined || s === "" ? "-" : s);
const who = (r: { readonly mac: string; readonly node: string | null }): string => r.node ?? r.mac;
const serviceOf = (ip: ApiIp): string => {
  const [first] = ip.services;
  if (first === undefined) return "-";
  return `${first.namespace}/${first.name}${ip.services.length > 1 ? ` +${ip.services.length - 1}` : ""}`;
};
const ownerOf = (ip: ApiIp): string => ip.expectedOwner?.node ?? (ip.ownerUnknown === null ? "-" : "unknown");

/** ipsTable: one line per IP. */
export function ipsTable(ips: readonly ApiIp[], severe: Severe): string {
  if (ips.length === 0) return "No IPs. The hub lists an IP once a Service has it or an agent sees ARP / NDP for it.\n";
  const rows = ips.map((ip) => [
    ip.key,
    several(ip, severe) ? `${ip.state}!` : ip.state,
    serviceOf(ip),
    ownerOf(ip),
    dash(
      ip.responders
        .filter((r) => r.answering)
        .map(who)
        .join(","),
    ),
    dash([...new Set(ip.findings.map((f) => f.type))].join(",")),
  ]);
  return table(["IP", "STATE", "SERVICE", "OWNER", "ANSWERING", "FINDINGS"], rows);
}

const iso = (t: number): string => new Date(t).toISOString().replace(/\.\d{3}Z$/, "Z");

/** ipDetail: one IP in full, as `kubectl describe` lays things out. */
export function ipDetail(ip: ApiIp, now: number): string {
  const out: string[] = [];
  const field = (k: string, v: string) => out.push(`${`${k}:`.padEnd(12)}${clean(v)}`);
  /** section: a titled table, indented under its title; with no rows, `none` in its place (null: no section at all). */
  const section = (title: string, none: string | null, headers: readonly string[], rows: readonly (readonly string[])[]) => {
    if (rows.length > 0) out.push("", title, indent(table(headers, rows)));
    else if (none !== null) out.push("", title, `  ${none}`);
  };
  field("IP", ip.vlan === null ? ip.ip : `${ip.ip} (VLAN ${ip.vlan})`);
  field("State", ip.state);
  field(
    "Services",
    ip.services.length === 0
      ? "none (no LoadBalancer Service has this address)"
      : ip.services
          .map((s) => `${s.namespace}/${s.name}${s.externalTrafficPolicy === "Local" ? " (externalTrafficPolicy Local)" : ""}`)
          .join(", "),
  );
  field("Announcer", dash(ip.announcer));
  field(
    "Owner",
    ip.expectedOwner === null
      ? `unknown${ip.ownerUnknown === null ? "" : `: ${ip.ownerUnknown}`}`
      : `${ip.expectedOwner.node} (${ip.expectedOwner.source})`,
  );
  field("Requests", String(ip.requests));
  if (ip.silentDropNodes.length > 0)
    field("Drops", `${ip.silentDropNodes.join(", ")} answer with no local endpoint: traffic sent there is dropped`);
  section(
    "Responders:",
    "none seen",
    ["MAC", "NODE", "ANSWERING", "REPLIES", "GRATUITOUS", "LAST SEEN", "LATENCY"],
    ip.responders.map((r) => [
      r.mac,
      r.node ?? `not a node${r.vendor === null || r.vendor === undefined ? "" : ` (${r.vendor})`}`,
      r.answering ? (ip.fastest === r.mac && ip.responders.filter((x) => x.answering).length > 1 ? "yes, fastest" : "yes") : "no",
      String(r.replies),
      String(r.gratuitous),
      `${age(r.lastSeen, now)} ago`,
      r.meanLatencyMs === null ? "-" : `${r.meanLatencyMs.toFixed(2)} ms`,
    ]),
  );
  out.push("", "Findings:");
  if (ip.findings.length === 0) out.push("  none");
  for (const f of ip.findings)
    out.push(clean(`  ${f.type} (since ${iso(f.firstSeen)}${f.incidentId === null ? "" : `, incident ${f.incidentId}`}): ${f.detail}`));
  section(
    "Handovers:",
    "none seen",
    ["AT", "FROM", "TO", "GAP", "UNANSWERED", "ANNOUNCED"],
    ip.handovers.map((h) => [
      iso(h.at),
      who(h.from),
      who(h.to),
      `${Math.round(h.gapMs)} ms`,
      String(h.unanswered),
      h.announced === null ? "checking" : h.announced ? "yes" : "NO",
    ]),
  );
  section(
    "Askers whose first answer changed node (each change breaks their connections):",
    null,
    ["ASKER", "MAC", "REQUESTS", "CHANGES"],
    ip.askers.filter((a) => a.firstAnswerChanges > 0).map((a) => [a.ip, dash(a.mac), String(a.requests), String(a.firstAnswerChanges)]),
  );
  return out.join("\n").replace(/\n+$/, "") + "\n";
}

const indent = (text: string): string =>
  text
    .replace(/\n$/, "")
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");

/** incidentsTable: one line per incident, newest first as the hub lists them. */
export function incidentsTable(list: readonly ApiIncident[], now: number): string {
  if (list.length === 0) return "No incidents.\n";
  const rows = list.map((i) => [
    String(i.id),
    i.resolvedAt === null ? (i.acknowledgedBy === null ? "open" : `open, ack ${i.acknowledgedBy}`) : "resolved",
    openTypes(i).join(",") || i.type,
    i.key,
    age(i.firstSeen, now),
    i.resolvedAt === null ? age(i.lastSeen, now) : age(i.resolvedAt, now),
    String(i.count),
    i.detail.length > 100 ? `${i.detail.slice(0, 99)}…` : i.detail,
  ]);
  return table(["ID", "STATE", "TYPE", "SUBJECT", "AGE", "LAST", "COUNT", "DETAIL"], rows);
}
