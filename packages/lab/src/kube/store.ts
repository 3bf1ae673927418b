import { randomUUID } from "node:crypto";
import type { Json } from "./patch.js";
import type { ResourceType } from "./resources.js";
import { manage, type FieldManager } from "./managed-fields.js";

/** A KubeObject is any API object: JSON with metadata. */
export type KubeObject = Record<string, Json> & { metadata: Record<string, Json> };

/** An ApiError carries the HTTP code and the Status reason the real API server would send. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    /** Status details.causes (e.g. server-side apply's FieldManagerConflict per field). */
    readonly causes?: readonly { readonly type: string; readonly message: string; readonly field: string }[],
  ) {
    super(message);
  }
}

export interface WatchEvent {
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly rv: number;
  readonly r: ResourceType;
  readonly object: KubeObject;
}

/** HISTORY_SIZE is how many events a watch can resume from; older resourceVersions get 410 Gone, as etcd compaction. */
export const HISTORY_SIZE = 1000;

const keyOf = (r: ResourceType, ns: string | null, name: string) => `${r.group}/${r.resource}/${ns ?? ""}/${name}`;

function meta(o: KubeObject): Record<string, Json> {
  return o.metadata;
}

/** str reads a JSON value expected to be a string ("" otherwise). */
export function str(v: Json | undefined): string {
  return typeof v === "string" ? v : "";
}

/**
 * A Store keeps the objects of the test API server with one global resourceVersion counter, a bounded event history
 * for watches, and metadata the server owns (uid, resourceVersion, generation, creationTimestamp).
 */
export class Store {
  readonly #objects = new Map<string, KubeObject>();
  readonly #history: WatchEvent[] = [];
  readonly #watchers = new Set<(e: WatchEvent) => void>();
  #rv = 1;

  get resourceVersion(): number {
    return this.#rv;
  }

  /** oldestResumable is the lowest resourceVersion a watch may start after. */
  get oldestResumable(): number {
    return (this.#history[0]?.rv ?? this.#rv + 1) - 1;
  }

  get(r: ResourceType, ns: string | null, name: string): KubeObject {
    const o = this.#objects.get(keyOf(r, ns, name));
    if (o === undefined) throw new ApiError(404, "NotFound", `${r.resource}${r.group === "" ? "" : `.${r.group}`} "${name}" not found`);
    return structuredClone(o);
  }

  list(r: ResourceType, ns: string | null): KubeObject[] {
    const prefix = `${r.group}/${r.resource}/`;
    const out: KubeObject[] = [];
    for (const [k, o] of this.#objects) {
      if (!k.startsWith(prefix)) continue;
      if (ns !== null && meta(o).namespace !== ns) continue;
      out.push(structuredClone(o));
    }
    return out.sort((a, b) => str(meta(a).name).localeCompare(str(meta(b).name)));
  }

  /**
   * create stores a new object; `dryRun` validates and returns it without storing. With a field `manager` the object
   * records it in metadata.managedFields as owning what the body set (not the server's defaults).
   */
  create(r: ResourceType, ns: string | null, body: KubeObject, dryRun = false, manager?: FieldManager): KubeObject {
    const m = { ...meta(body) };
    let name = typeof m.name === "string" ? m.name : "";
    if (name === "" && typeof m.generateName === "string") name = `${m.generateName}${randomUUID().slice(0, 5)}`;
    if (name === "")
      throw new ApiError(422, "Invalid", `${r.kind} is invalid: metadata.name: Required value: name or generateName is required`);
    if (this.#objects.has(keyOf(r, ns, name))) throw new ApiError(409, "AlreadyExists", `${r.resource} "${name}" already exists`);
    const rv = dryRun ? this.#rv : ++this.#rv;
    const obj: KubeObject = {
      ...body,
      apiVersion: r.group === "" ? r.version : `${r.group}/${r.version}`,
      kind: r.kind,
      metadata: {
        ...m,
        name,
        ...(ns === null ? {} : { namespace: ns }),
        uid: randomUUID(),
        resourceVersion: String(rv),
        creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
        ...(r.generation ? { generation: 1 } : {}),
      },
    };
    delete obj.metadata.generateName;
    if (manager !== undefined) manage(null, obj, manager);
    applyDefaults(r, obj);
    if (dryRun) return obj;
    this.#objects.set(keyOf(r, ns, name), obj);
    this.#emit({ type: "ADDED", rv, r, object: obj });
    return structuredClone(obj);
  }

  /**
   * update replaces an object. A resourceVersion in the body must match (409 Conflict otherwise: optimistic
   * concurrency); `status` true updates only the status subresource, false keeps the stored status. Spec changes
   * bump metadata.generation on kinds that have one. With a field `manager`, metadata.managedFields move to it for
   * what it changed (a write that changes nothing leaves them, and the object, as they were).
   */
  update(
    r: ResourceType,
    ns: string | null,
    name: string,
    body: KubeObject,
    opts: { status?: boolean; dryRun?: boolean; manager?: FieldManager } = {},
  ): KubeObject {
    const cur = this.get(r, ns, name);
    const sentRv = meta(body).resourceVersion;
    if (typeof sentRv === "string" && sentRv !== "" && sentRv !== meta(cur).resourceVersion) {
      throw new ApiError(
        409,
        "Conflict",
        `Operation cannot be fulfilled on ${r.resource}${r.group === "" ? "" : `.${r.group}`} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
    const next: KubeObject = opts.status
      ? { ...cur, status: body.status ?? null }
      : { ...body, ...(cur.status === undefined ? {} : { status: cur.status }), metadata: { ...meta(body) } };
    for (const k of ["uid", "creationTimestamp", "namespace", "name"] as const)
      if (meta(cur)[k] !== undefined) next.metadata[k] = meta(cur)[k] ?? null;
    next.apiVersion = cur.apiVersion ?? null;
    next.kind = cur.kind ?? null;
    if (opts.manager !== undefined) manage(cur, next, opts.manager);
    const specChanged = JSON.stringify(cur.spec ?? null) !== JSON.stringify(next.spec ?? null);
    if (r.generation) next.metadata.generation = Number(meta(cur).generation ?? 1) + (specChanged && !opts.status ? 1 : 0);
    const unchanged =
      JSON.stringify({ ...cur, metadata: { ...meta(cur), resourceVersion: null } }) ===
      JSON.stringify({ ...next, metadata: { ...next.metadata, resourceVersion: null } });
    if (unchanged || opts.dryRun) return { ...next, metadata: { ...next.metadata, resourceVersion: meta(cur).resourceVersion ?? null } };
    const rv = ++this.#rv;
    next.metadata.resourceVersion = String(rv);
    this.#objects.set(keyOf(r, ns, name), next);
    this.#emit({ type: "MODIFIED", rv, r, object: next });
    return structuredClone(next);
  }

  delete(r: ResourceType, ns: string | null, name: string, dryRun = false): KubeObject {
    const cur = this.get(r, ns, name);
    if (dryRun) return cur;
    this.#objects.delete(keyOf(r, ns, name));
    const rv = ++this.#rv;
    this.#emit({ type: "DELETED", rv, r, object: { ...cur, metadata: { ...meta(cur), resourceVersion: String(rv) } } });
    return cur;
  }

  /** eventsSince returns the history after `rv`, or throws 410 Gone when it no longer reaches back that far. */
  eventsSince(rv: number): WatchEvent[] {
    if (rv < this.oldestResumable) throw new ApiError(410, "Expired", `too old resource version: ${rv} (${this.oldestResumable})`);
    return this.#history.filter((e) => e.rv > rv);
  }

  /** compact forgets the watch history, as etcd compaction does: a watch from before now is answered 410 Gone. */
  compact(): void {
    this.#history.length = 0;
  }

  /** subscribe calls `f` for every event from now on; returns the unsubscribe function. */
  subscribe(f: (e: WatchEvent) => void): () => void {
    this.#watchers.add(f);
    return () => this.#watchers.delete(f);
  }

  #emit(e: WatchEvent): void {
    this.#history.push(e);
    if (this.#history.length > HISTORY_SIZE) this.#history.shift();
    for (const w of this.#watchers) w(e);
  }
}

/** applyDefaults sets the defaults the API server's defaulting gives the fields kubectl and whohas read. */
function applyDefaults(r: ResourceType, o: KubeObject): void {
  if (r.resource !== "daemonsets") return;
  const spec = (o.spec ?? {}) as Record<string, Json>;
  spec.updateStrategy ??= { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } };
  spec.revisionHistoryLimit ??= 10;
  o.spec = spec;
}
