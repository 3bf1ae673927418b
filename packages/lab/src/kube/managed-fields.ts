// metadata.managedFields as kube-apiserver keeps them (sigs.k8s.io/structured-merge-diff, FieldsV1): each field
// manager owns the fields it set; a later write of a field by another manager moves ownership, a removed field leaves
// every set; server-side apply replaces its manager's set, conflicts with other owners unless forced, and removes the
// fields it stopped applying. Lists merge by key only for the fields patch.ts knows (MERGE_KEYS); every other list is
// atomic. Not kept: the cap of ten Update managers (kube-apiserver folds the oldest into "ancient-changes").

import { MERGE_KEYS, isObject, strategicMergePatch, type Json } from "./patch.js";
import { ApiError, type KubeObject } from "./store.js";

/** A FieldManager is who writes and how: the `fieldManager` parameter (or the user agent's program) and the operation. */
export type FieldManager =
  | { readonly name: string; readonly operation: "Update"; readonly apiVersion: string; readonly subresource?: string }
  | {
      readonly name: string;
      readonly operation: "Apply";
      readonly apiVersion: string;
      /** The configuration applied, as sent. */
      readonly applied: KubeObject;
      readonly force: boolean;
    };

interface Entry {
  manager: string;
  operation: string;
  apiVersion: string;
  time: string;
  subresource?: string;
  set: Set<string>;
}

/** A field path, as FieldsV1 keys: "f:data", "f:config.conf", `k:{"name":"kube-proxy"}`. */
type Path = readonly string[];
type Fields = Map<string, { path: Path; value: Json; leaf: boolean }>;
const keyOf = (p: Path) => JSON.stringify(p);

/** The server's own metadata, never owned (structured-merge-diff's stripMeta). */
const STRIPPED_METADATA = new Set([
  "name",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "selfLink",
  "managedFields",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "generateName",
]);

/** fieldValues lists every field of `o` with its value: maps and list items by key are nodes, the rest leaves. */
function fieldValues(o: Json): Fields {
  const out: Fields = new Map();
  const walk = (v: Json, path: Path, field: string) => {
    if (path.length > 0) out.set(keyOf(path), { path, value: v, leaf: !isObject(v) && !keyedList(v, field) });
    if (isObject(v)) {
      for (const [k, child] of Object.entries(v)) {
        if (path.length === 0 && (k === "apiVersion" || k === "kind")) continue;
        if (path.length === 1 && path[0] === "f:metadata" && STRIPPED_METADATA.has(k)) continue;
        walk(child, [...path, `f:${k}`], k);
      }
    } else if (Array.isArray(v) && keyedList(v, field)) {
      const key = MERGE_KEYS[field] ?? "";
      for (const item of v) if (isObject(item)) walk(item, [...path, `k:${JSON.stringify({ [key]: item[key] ?? null })}`], "");
    }
  };
  walk(o, [], "");
  // metadata itself is the server's: only what is under it (labels, annotations...) is owned.
  out.delete(keyOf(["f:metadata"]));
  return out;
}

const keyedList = (v: Json, field: string): boolean => {
  const key = MERGE_KEYS[field];
  return key !== undefined && Array.isArray(v) && v.every((i) => isObject(i) && i[key] !== undefined);
};

/** toFieldsV1 writes a set as FieldsV1: `{}` for a leaf, "." for a map owned itself beside some of its fields. */
export function toFieldsV1(set: ReadonlySet<string>): Record<string, Json> {
  const root: Record<string, Json> = {};
  const paths = [...set].map((k) => JSON.parse(k) as string[]);
  for (const p of paths) {
    let node = root;
    for (const seg of p) {
      const next = node[seg];
      node = isObject(next) ? next : (node[seg] = {});
    }
  }
  for (const p of paths) {
    let node: Json = root;
    for (const seg of p) node = isObject(node) ? (node[seg] ?? null) : null;
    if (isObject(node) && Object.keys(node).some((k) => k !== ".")) node["."] = {};
  }
  return root;
}

/** fromFieldsV1 reads FieldsV1 back into a set of paths. */
export function fromFieldsV1(f: Json | undefined): Set<string> {
  const out = new Set<string>();
  const walk = (node: Json, path: string[]) => {
    if (!isObject(node)) return;
    const children = Object.keys(node).filter((k) => k !== ".");
    if (path.length > 0 && (children.length === 0 || "." in node)) out.add(keyOf(path));
    for (const k of children) walk(node[k] ?? null, [...path, k]);
  };
  walk(f ?? null, []);
  return out;
}

function readEntries(o: KubeObject | null): Entry[] {
  const mf = o?.metadata.managedFields;
  if (!Array.isArray(mf)) return [];
  return mf.filter(isObject).map((e) => ({
    manager: typeof e.manager === "string" ? e.manager : "",
    operation: typeof e.operation === "string" ? e.operation : "Update",
    apiVersion: typeof e.apiVersion === "string" ? e.apiVersion : "",
    time: typeof e.time === "string" ? e.time : "",
    ...(typeof e.subresource === "string" ? { subresource: e.subresource } : {}),
    set: fromFieldsV1(e.fieldsV1),
  }));
}

/** writeEntries orders entries as kube-apiserver does: Apply first, then Update by time, then by manager. */
function writeEntries(entries: readonly Entry[]): Json[] {
  const rank = (e: Entry) => (e.operation === "Apply" ? 0 : 1);
  return [...entries]
    .filter((e) => e.set.size > 0)
    .sort(
      (a, b) =>
        rank(a) - rank(b) ||
        (a.operation === "Update" ? a.time.localeCompare(b.time) : 0) ||
        a.manager.localeCompare(b.manager) ||
        a.apiVersion.localeCompare(b.apiVersion),
    )
    .map((e) => ({
      manager: e.manager,
      operation: e.operation,
      apiVersion: e.apiVersion,
      time: e.time,
      fieldsType: "FieldsV1",
      fieldsV1: toFieldsV1(e.set),
      ...(e.subresource === undefined ? {} : { subresource: e.subresource }),
    }));
}

const same = (a: Json | undefined, b: Json | undefined) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
const dotted = (p: Path) => p.map((s) => (s.startsWith("f:") ? `.${s.slice(2)}` : `[${s.slice(2)}]`)).join("");

function sameEntry(e: Entry, fm: FieldManager): boolean {
  const sub = fm.operation === "Update" ? fm.subresource : undefined;
  return e.manager === fm.name && e.operation === fm.operation && e.apiVersion === fm.apiVersion && e.subresource === sub;
}

/** deletePath removes the field at `p` from `o` (a map field or a keyed list item). */
function deletePath(o: Json, p: Path): void {
  let node: Json = o;
  for (const seg of p.slice(0, -1)) {
    if (isObject(node)) node = node[seg.slice(2)] ?? null;
    else if (Array.isArray(node)) node = node.find((i) => isObject(i) && keyMatches(i, seg)) ?? null;
  }
  const last = p[p.length - 1] ?? "";
  if (isObject(node) && last.startsWith("f:")) delete node[last.slice(2)];
  else if (Array.isArray(node)) {
    const i = node.findIndex((x) => isObject(x) && keyMatches(x, last));
    if (i >= 0) node.splice(i, 1);
  }
}

const keyMatches = (item: Record<string, Json>, seg: string): boolean =>
  Object.entries(JSON.parse(seg.slice(2)) as Record<string, Json>).every(([k, v]) => same(item[k], v));

/** time is how kube-apiserver stamps an entry: RFC 3339, whole seconds. */
const stamp = (now: Date) => now.toISOString().replace(/\.\d+Z$/, "Z");

/**
 * manage sets `next.metadata.managedFields` for a write of `cur` (null: a create) into `next` by `fm`. An Update
 * gives the manager the fields it added or changed and takes them from everyone else; a write that changes nothing
 * keeps the entries as they were (and their times). An Apply first checks conflicts (409 naming the other managers
 * unless forced), then replaces its manager's set and removes from `next` the fields it no longer applies that nobody
 * else owns. Returns nothing; throws an ApiError for a conflict.
 */
export function manage(cur: KubeObject | null, next: KubeObject, fm: FieldManager, now = new Date()): void {
  const entries = readEntries(cur);
  const before: Fields = cur === null ? new Map<string, never>() : fieldValues(cur);
  if (fm.operation === "Apply") applyOwnership(entries, before, next, fm, now);
  const after = fieldValues(next);
  const changed = [...after].filter(([k, f]) => !before.has(k) || (f.leaf && !same(before.get(k)?.value, f.value))).map(([k]) => k);
  const removed = [...before.keys()].filter((k) => !after.has(k));
  if (changed.length === 0 && removed.length === 0 && fm.operation === "Update") {
    const kept = cur?.metadata.managedFields;
    if (kept === undefined) delete next.metadata.managedFields;
    else next.metadata.managedFields = kept;
    return;
  }
  let mine = entries.find((e) => sameEntry(e, fm));
  if (mine === undefined) {
    mine = {
      manager: fm.name,
      operation: fm.operation,
      apiVersion: fm.apiVersion,
      time: "",
      ...(fm.operation === "Update" && fm.subresource !== undefined ? { subresource: fm.subresource } : {}),
      set: new Set(),
    };
    entries.push(mine);
  }
  for (const e of entries) {
    for (const k of removed) e.set.delete(k);
    if (e !== mine) for (const k of changed) e.set.delete(k);
  }
  if (fm.operation === "Update") for (const k of changed) mine.set.add(k);
  mine.time = stamp(now);
  next.metadata.managedFields = writeEntries(entries);
}

/** applyOwnership does server-side apply's part before the diff: conflicts, the applier's new set, dropped fields. */
function applyOwnership(
  entries: Entry[],
  before: Fields,
  next: KubeObject,
  fm: Extract<FieldManager, { operation: "Apply" }>,
  now: Date,
): void {
  const applied = fieldValues(fm.applied);
  const conflicts = new Map<string, string[]>();
  for (const [k, f] of applied) {
    if (!f.leaf || !before.has(k) || same(before.get(k)?.value, f.value)) continue;
    for (const e of entries) {
      if (sameEntry(e, fm) || !e.set.has(k)) continue;
      if (fm.force) e.set.delete(k);
      else conflicts.set(e.manager, [...(conflicts.get(e.manager) ?? []), dotted(f.path)]);
    }
  }
  if (conflicts.size > 0) throw conflictError(conflicts, fm.apiVersion);
  let mine = entries.find((e) => sameEntry(e, fm));
  const dropped = [...(mine?.set ?? [])].filter((k) => !applied.has(k) && !entries.some((e) => e !== mine && e.set.has(k)));
  for (const k of dropped) deletePath(next, JSON.parse(k) as string[]);
  if (mine === undefined) {
    mine = { manager: fm.name, operation: "Apply", apiVersion: fm.apiVersion, time: stamp(now), set: new Set() };
    entries.push(mine);
  }
  // An applier owns the leaves and list items it sent, not the maps holding them (structured-merge-diff's ToFieldSet).
  mine.set = new Set([...applied].filter(([, f]) => f.leaf || (f.path.at(-1) ?? "").startsWith("k:")).map(([k]) => k));
}

/** conflictError is kube-apiserver's 409 for an apply that would take fields other managers own. */
function conflictError(conflicts: Map<string, string[]>, apiVersion: string): ApiError {
  const all = [...conflicts].flatMap(([m, fields]) => fields.map((f) => ({ m, f })));
  const n = all.length;
  const message =
    n === 1
      ? `Apply failed with 1 conflict: conflict with "${all[0]?.m ?? ""}" using ${apiVersion}: ${all[0]?.f ?? ""}`
      : `Apply failed with ${n} conflicts: ${[...conflicts]
          .map(([m, fields]) => `conflicts with "${m}" using ${apiVersion}:\n${fields.map((f) => `- ${f}`).join("\n")}`)
          .join("\n")}`;
  return new ApiError(
    409,
    "Conflict",
    message,
    all.map(({ m, f }) => ({ type: "FieldManagerConflict", message: `conflict with "${m}" using ${apiVersion}`, field: f })),
  );
}

/** applyMerge merges an applied configuration into the object: maps merge, keyed lists by key, the rest replace. */
export function applyMerge(cur: KubeObject | null, applied: KubeObject): KubeObject {
  return strategicMergePatch(cur, applied) as KubeObject;
}

/**
 * managerFromUserAgent is the field manager kube-apiserver derives when a request names none: the user agent up to
 * its first "/", printable characters only, at most 128 bytes.
 */
export function managerFromUserAgent(ua: string | undefined): string {
  return [...((ua ?? "").split("/")[0] ?? "")]
    .filter((c) => /\P{C}/u.test(c))
    .join("")
    .slice(0, 128);
}
