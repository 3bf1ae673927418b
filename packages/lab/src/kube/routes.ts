import type { Json } from "./patch.js";
import { RESOURCES, type ResourceType } from "./resources.js";
import type { KubeObject } from "./store.js";

// What a request names: the resource its path points at, and the objects its label and field selectors keep.

/** A Route is a request path's resource, namespace, name and subresource (null where the path has none). */
export interface Route {
  r: ResourceType;
  ns: string | null;
  name: string | null;
  sub: string | null;
}

/** route maps a path onto a resource: /api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUB]] and /apis/G/V/... likewise. */
export function route(path: string, omit: ReadonlySet<string>): Route | null {
  const parts = path.split("/").filter((p) => p !== "");
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === "api" && parts.length >= 3) [group, version, rest] = ["", parts[1] ?? "", parts.slice(2)];
  else if (parts[0] === "apis" && parts.length >= 4) [group, version, rest] = [parts[1] ?? "", parts[2] ?? "", parts.slice(3)];
  else return null;
  if (omit.has(group)) return null;
  const find = (res: string) => RESOURCES.find((r) => r.group === group && r.version === version && r.resource === res);
  // namespaces/NS/RESOURCE... is a namespaced path; namespaces[/NAME] alone is the Namespace resource itself.
  if (rest[0] === "namespaces" && rest.length >= 3) {
    const r = find(rest[2] ?? "");
    return !r?.namespaced ? null : { r, ns: rest[1] ?? null, name: rest[3] ?? null, sub: rest[4] ?? null };
  }
  const r = find(rest[0] ?? "");
  return r === undefined ? null : { r, ns: null, name: rest[1] ?? null, sub: rest[2] ?? null };
}

/** labelMatches supports the selector forms kubectl and client-go send: k=v, k==v, k!=v, k, !k, k in (a,b), k notin (a,b). */
export function labelMatches(selector: string, labels: Record<string, Json>): boolean {
  const terms = selector.match(/[^,(]+(\([^)]*\))?/g) ?? [];
  return terms.every((raw) => {
    const t = raw.trim();
    if (t === "") return true;
    let m = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(t);
    if (m) {
      const vals = (m[3] ?? "").split(",").map((s) => s.trim());
      const v = labels[m[1] ?? ""];
      return m[2] === "in" ? typeof v === "string" && vals.includes(v) : !(typeof v === "string" && vals.includes(v));
    }
    m = /^(\S+?)\s*(!=|==|=)\s*(\S*)$/.exec(t);
    if (m) return m[2] === "!=" ? labels[m[1] ?? ""] !== m[3] : labels[m[1] ?? ""] === m[3];
    if (t.startsWith("!")) return !(t.slice(1) in labels);
    return t in labels;
  });
}

/** fieldMatches supports the field selectors client-go sends: a.b=v, a.b==v, a.b!=v, comma-separated. */
export function fieldMatches(selector: string, o: KubeObject): boolean {
  return selector.split(",").every((term) => {
    const m = /^([\w.]+)\s*(!=|==|=)\s*(.*)$/.exec(term.trim());
    if (m === null) return term.trim() === "";
    const path = (m[1] ?? "").split(".");
    let v: Json | undefined = o;
    for (const p of path) v = typeof v === "object" && v !== null && !Array.isArray(v) ? v[p] : undefined;
    return m[2] === "!=" ? v !== m[3] : v === m[3];
  });
}
