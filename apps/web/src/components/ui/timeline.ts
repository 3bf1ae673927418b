import type { ObservationKind } from "@whohas/core";

const MINUTE_MS = 60_000;

/** A TimelineRow is one minute of one MAC's frames of one kind (the hub's per-minute timeline). */
export interface TimelineRow {
  readonly minute: number;
  readonly mac: string;
  readonly kind: ObservationKind;
  readonly count: number;
}

/** A Responder names a MAC: its node (null: not a cluster node) and the vendor its prefix is registered to. */
export interface Responder {
  readonly mac: string;
  readonly node: string | null;
  readonly vendor: string | null;
}

/** A Party is one side of a handover: a MAC and its node. */
type Party = Pick<Responder, "mac" | "node">;

/** A Lane is one responder's small chart: one point per minute with its replies and announcements. */
export interface Lane {
  readonly mac: string;
  readonly node: string | null;
  readonly label: string;
  readonly owner: boolean;
  readonly vendor: string | null;
  readonly points: readonly { readonly minute: number; readonly replies: number; readonly announcements: number }[];
  /** The series it has frames of, as "LABEL replies" / "LABEL announcements". */
  readonly series: readonly string[];
}

/** A Marker is a moment drawn across every lane: a handover, or the findings that opened in one minute. */
export interface Marker {
  readonly t: number;
  readonly kind: "handover" | "incident";
  readonly label: string;
  readonly title: string;
}

type Role = "replies" | "announcements";

/** drawnAs sorts a frame kind into what the chart draws: core's "answer" and "announce" roles (requests are not drawn). */
function drawnAs(kind: ObservationKind): Role | null {
  if (kind === "reply" || kind === "na-solicited") return "replies";
  if (kind.startsWith("gratuitous") || kind === "na-unsolicited") return "announcements";
  return null;
}

/**
 * lanes turns the per-minute rows into one lane per responder MAC, owner first, then by node name (MACs no agent
 * reports last). Each lane has a point for every minute from the first to the last minute any lane has frames in
 * (a minute without frames is a zero, not a gap bridged by a line), so the lanes line up.
 */
export function lanes(rows: readonly TimelineRow[], responders: readonly Responder[], owner: string | null): Lane[] {
  const who = new Map(responders.map((r) => [r.mac, r]));
  const counts = new Map<string, Map<number, { replies: number; announcements: number }>>();
  let first = Infinity;
  let last = -Infinity;
  for (const p of rows) {
    const role = drawnAs(p.kind);
    if (role === null) continue;
    const byMinute = counts.get(p.mac) ?? new Map<number, { replies: number; announcements: number }>();
    const point = byMinute.get(p.minute) ?? { replies: 0, announcements: 0 };
    point[role] += p.count;
    byMinute.set(p.minute, point);
    counts.set(p.mac, byMinute);
    first = Math.min(first, p.minute);
    last = Math.max(last, p.minute);
  }
  const out = [...counts].map(([mac, byMinute]): Lane => {
    const r = who.get(mac);
    const node = r?.node ?? null;
    const label = node ?? mac;
    const points: Lane["points"][number][] = [];
    for (let m = first; m <= last; m += MINUTE_MS) points.push({ minute: m, ...(byMinute.get(m) ?? { replies: 0, announcements: 0 }) });
    const has = (role: Role) => points.some((p) => p[role] > 0);
    const series = (["replies", "announcements"] as const).filter(has).map((role) => `${label} ${role}`);
    return { mac, node, label, owner: owner !== null && node === owner, vendor: r?.vendor ?? null, points, series };
  });
  const rank = (l: Lane) => (l.owner ? 0 : l.node === null ? 2 : 1);
  return out.sort((a, b) => rank(a) - rank(b) || a.label.localeCompare(b.label));
}

/** peak is the largest count any lane has in one minute: the y scale all lanes share (at least 1). */
export function peak(all: readonly Lane[]): number {
  let max = 1;
  for (const l of all) for (const p of l.points) max = Math.max(max, p.replies, p.announcements);
  return max;
}

/** countTicks are the y-axis ticks for counts up to `max`: zero, half and a round top (1, 2 or 5 times a power of ten). */
export function countTicks(max: number): number[] {
  const pow = 10 ** Math.floor(Math.log10(Math.max(1, max)));
  const top = [1, 2, 5, 10].map((m) => m * pow).find((t) => t >= max) ?? 10 * pow;
  return Number.isInteger(top / 2) ? [0, top / 2, top] : [0, top];
}

const STEPS_MS = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720].map((m) => m * MINUTE_MS);

/**
 * ticks are the x-axis ticks for [from, to]: on whole multiples of the smallest step from one minute up that gives at
 * most `max` of them, so no two read the same.
 */
export function ticks(from: number, to: number, max = 6): number[] {
  const step = STEPS_MS.find((s) => (to - from) / s <= max) ?? STEPS_MS.at(-1) ?? MINUTE_MS;
  const out: number[] = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) out.push(t);
  return out;
}

/** tickLabel shows a tick's time: hours and minutes, with the day's date for a span over a day. */
export function tickLabel(t: number, span: number): string {
  const d = new Date(t);
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return span > 86_400_000 ? `${d.toLocaleDateString([], { month: "short", day: "numeric" })} ${time}` : time;
}

/**
 * markers are the handovers and the findings opened within [from, to], one marker per kind and minute: every type
 * opened in a minute in one label, every move in one title.
 */
export function markers(
  handovers: readonly { readonly at: number; readonly from: Party; readonly to: Party }[],
  incidents: readonly { readonly id: number; readonly type: string; readonly firstSeen: number }[],
  from: number,
  to: number,
): Marker[] {
  const name = (r: Party) => r.node ?? r.mac;
  const byMinute = new Map<string, { t: number; kind: Marker["kind"]; labels: Set<string>; titles: string[] }>();
  const add = (t: number, kind: Marker["kind"], label: string, title: string) => {
    if (t < from || t > to) return;
    const minute = t - (t % MINUTE_MS);
    const key = `${kind}@${minute}`;
    const m = byMinute.get(key) ?? { t: minute, kind, labels: new Set<string>(), titles: [] };
    m.labels.add(label);
    m.titles.push(title);
    byMinute.set(key, m);
  };
  for (const h of handovers) add(h.at, "handover", "handover", `${name(h.from)} → ${name(h.to)} at ${new Date(h.at).toLocaleTimeString()}`);
  for (const i of incidents)
    add(i.firstSeen, "incident", i.type, `#${i.id} ${i.type} opened at ${new Date(i.firstSeen).toLocaleTimeString()}`);
  return [...byMinute.values()]
    .map((m) => ({ t: m.t, kind: m.kind, label: [...m.labels].join(", "), title: m.titles.join("; ") }))
    .sort((a, b) => a.t - b.t || a.kind.localeCompare(b.kind));
}
