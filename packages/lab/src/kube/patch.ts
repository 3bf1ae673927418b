// The patch types of the Kubernetes API: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge
// patch for the fields whohas and kubectl use (maps merge; lists of named items merge by name; $patch: delete).

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** isObject tells a JSON object from the other values. */
export const isObject = (v: unknown): v is Record<string, Json> => typeof v === "object" && v !== null && !Array.isArray(v);

/** mergePatch applies RFC 7386: objects merge recursively, null deletes, anything else replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k] ?? null, v);
  }
  return out;
}

/** MERGE_KEYS are the list fields strategic merge patch merges by key instead of replacing (by their patchMergeKey). */
export const MERGE_KEYS: Readonly<Record<string, string>> = {
  containers: "name",
  initContainers: "name",
  env: "name",
  volumes: "name",
  volumeMounts: "mountPath",
  ports: "containerPort",
  tolerations: "key",
  conditions: "type",
};

/** strategicMergePatch applies a strategic merge patch as the API server does for the built-in types used here. */
export function strategicMergePatch(target: Json, patch: Json, field = ""): Json {
  if (!isObject(patch)) {
    const key = MERGE_KEYS[field];
    if (key !== undefined && Array.isArray(patch) && Array.isArray(target)) return mergeList(target, patch, key);
    return patch;
  }
  if (patch.$patch === "delete") return null;
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith("$")) continue;
    if (v === null) delete out[k];
    else out[k] = strategicMergePatch(out[k] ?? null, v, k);
  }
  return out;
}

function mergeList(target: Json[], patch: Json[], key: string): Json[] {
  const out = [...target];
  for (const item of patch) {
    if (!isObject(item)) continue;
    const i = out.findIndex((t) => isObject(t) && t[key] === item[key]);
    if (item.$patch === "delete") {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) out[i] = strategicMergePatch(out[i] ?? null, item);
    else out.push(strategicMergePatch(null, item));
  }
  return out;
}

/** A PatchError is a patch that cannot apply (HTTP 422). */
export class PatchError extends Error {}

function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/")) throw new PatchError(`bad JSON pointer ${path}`);
  return path
    .slice(1)
    .split("/")
    .map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
}

function parentOf(doc: Json, parts: string[]): { parent: Json; last: string } {
  let cur: Json = doc;
  for (const p of parts.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(p)] ?? null;
    else if (isObject(cur)) cur = cur[p] ?? null;
    else throw new PatchError(`path segment ${p} not found`);
  }
  return { parent: cur, last: parts[parts.length - 1] ?? "" };
}

/** jsonPatch applies RFC 6902 operations (add, remove, replace, test, copy, move) to a copy of `doc`. */
export function jsonPatch(doc: Json, ops: Json): Json {
  if (!Array.isArray(ops)) throw new PatchError("a JSON patch is an array of operations");
  let out = structuredClone(doc);
  const get = (path: string): Json => {
    let cur: Json = out;
    for (const p of pointer(path)) {
      if (Array.isArray(cur)) cur = cur[Number(p)] ?? null;
      else if (isObject(cur) && p in cur) cur = cur[p] ?? null;
      else throw new PatchError(`path ${path} not found`);
    }
    return cur;
  };
  const set = (path: string, value: Json, insert: boolean) => {
    const parts = pointer(path);
    if (parts.length === 0) {
      out = value;
      return;
    }
    const { parent, last } = parentOf(out, parts);
    if (Array.isArray(parent)) {
      const i = last === "-" ? parent.length : Number(last);
      if (insert) parent.splice(i, 0, value);
      else parent[i] = value;
    } else if (isObject(parent)) parent[last] = value;
    else throw new PatchError(`cannot set ${path}`);
  };
  const remove = (path: string) => {
    const { parent, last } = parentOf(out, pointer(path));
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else if (isObject(parent) && last in parent) delete parent[last];
    else throw new PatchError(`path ${path} not found`);
  };
  for (const op of ops) {
    if (!isObject(op) || typeof op.op !== "string" || typeof op.path !== "string") throw new PatchError("each operation needs op and path");
    const value = op.value ?? null;
    switch (op.op) {
      case "add":
        set(op.path, value, true);
        break;
      case "replace":
        get(op.path);
        set(op.path, value, false);
        break;
      case "remove":
        remove(op.path);
        break;
      case "test":
        if (JSON.stringify(get(op.path)) !== JSON.stringify(value)) throw new PatchError(`test failed at ${op.path}`);
        break;
      case "copy":
        set(op.path, structuredClone(get(typeof op.from === "string" ? op.from : "")), true);
        break;
      case "move": {
        const from = typeof op.from === "string" ? op.from : "";
        const v = get(from);
        remove(from);
        set(op.path, v, true);
        break;
      }
      default:
        throw new PatchError(`unknown operation ${op.op}`);
    }
  }
  return out;
}

export type { Json };
