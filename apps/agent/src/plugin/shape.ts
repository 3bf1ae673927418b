// The read API's answers are checked for the fields the plugin reads before anything is rendered: a hub of another
// release, or something else at --url, gets a message that says so instead of a TypeError.
import type { ApiIncident, ApiIp } from "./render.js";

/** ShapeError names the first field that is not what the read API gives. */
export class ShapeError extends Error {}

type Check = (v: unknown) => boolean;
const str: Check = (v) => typeof v === "string";
const num: Check = (v) => typeof v === "number" && Number.isFinite(v);
const bool: Check = (v) => typeof v === "boolean";
const orNull =
  (c: Check): Check =>
  (v) =>
    v === null || c(v);
const obj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** fields checks `v` is an object whose named fields pass their checks; `where` names it in the error. */
function fields(v: unknown, where: string, checks: Readonly<Record<string, Check>>): void {
  if (!obj(v)) throw new ShapeError(`${where} is not an object`);
  for (const [k, c] of Object.entries(checks)) if (!c(v[k])) throw new ShapeError(`${where}.${k}`);
}

/** list checks `v` is an array and each item with `item`. */
function list(v: unknown, where: string, item: (x: unknown, where: string) => void): void {
  if (!Array.isArray(v)) throw new ShapeError(`${where} is not a list`);
  v.forEach((x, i) => item(x, `${where}[${i}]`));
}

const isArray: Check = (v) => Array.isArray(v);
const node: Check = (v) => obj(v) && str(v.mac) && orNull(str)(v.node);

function ipShape(v: unknown, where: string): void {
  fields(v, where, {
    key: str,
    ip: str,
    vlan: orNull(num),
    state: str,
    announcer: orNull(str),
    ownerUnknown: orNull(str),
    fastest: orNull(str),
  });
  const o = v as Record<string, unknown>;
  fields(o, where, {
    requests: num,
    silentDropNodes: isArray,
    expectedOwner: (x) => x === null || (obj(x) && str(x.node) && str(x.source)),
  });
  list(o.services, `${where}.services`, (s, w) => fields(s, w, { namespace: str, name: str }));
  list(o.responders, `${where}.responders`, (r, w) =>
    fields(r, w, {
      mac: str,
      node: orNull(str),
      answering: bool,
      replies: num,
      gratuitous: num,
      lastSeen: num,
      meanLatencyMs: orNull(num),
    }),
  );
  list(o.findings, `${where}.findings`, (f, w) => fields(f, w, { type: str, detail: str, firstSeen: num, incidentId: orNull(num) }));
  list(o.handovers, `${where}.handovers`, (h, w) =>
    fields(h, w, { from: node, to: node, at: num, gapMs: num, unanswered: num, announced: orNull(bool) }),
  );
  list(o.askers, `${where}.askers`, (a, w) => fields(a, w, { ip: str, mac: orNull(str), requests: num, firstAnswerChanges: num }));
}

function incidentShape(v: unknown, where: string): void {
  fields(v, where, {
    id: num,
    key: str,
    type: str,
    detail: str,
    firstSeen: num,
    lastSeen: num,
    count: num,
    resolvedAt: orNull(num),
    acknowledgedBy: orNull(str),
  });
  const facets = (v as Record<string, unknown>).facets;
  if (facets !== undefined) list(facets, `${where}.facets`, (f, w) => fields(f, w, { type: str, resolvedAt: orNull(num) }));
}

export function asIps(v: unknown): ApiIp[] {
  list(v, "the answer", ipShape);
  return v as ApiIp[];
}

export function asIp(v: unknown): ApiIp {
  ipShape(v, "the answer");
  return v as ApiIp;
}

export function asIncidents(v: unknown): ApiIncident[] {
  list(v, "the answer", incidentShape);
  return v as ApiIncident[];
}
