import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { parse as parseYaml } from "yaml";
import { PatchError, jsonPatch, mergePatch, strategicMergePatch, type Json } from "./patch.js";
import { RESOURCES, groupList, resourceList, resourceNamed } from "./resources.js";
import { ApiError, Store, str, type KubeObject, type WatchEvent } from "./store.js";
import { fieldMatches, labelMatches, route, type Route } from "./routes.js";
import { selfSigned } from "./tls.js";
import { applyMerge, managerFromUserAgent, type FieldManager } from "./managed-fields.js";
import { reviewToken, runDaemonSetController } from "./controllers.js";

/** A Forbidden rule makes the server answer 403 to one identity for one verb on one resource (optionally one name). */
export interface ForbiddenRule {
  readonly user: string;
  readonly verb: string;
  readonly resource: string;
  readonly name?: string;
}

/** A PendingWrite is a write the server has authorised and not yet applied. */
export interface PendingWrite {
  readonly user: string;
  readonly verb: "create" | "update" | "patch" | "delete";
  readonly resource: string;
  readonly namespace: string | null;
  /** The object's name from the path (null for a create, whose name is in the body). */
  readonly name: string | null;
  readonly dryRun: boolean;
}

export interface TestApiServerOptions {
  /** Bearer tokens and the user each one authenticates as; a request without a known token is 401. */
  readonly tokens: ReadonlyMap<string, string>;
  readonly forbidden?: readonly ForbiddenRule[];
  /**
   * Runs before a write (create, update, patch, delete) is applied and holds it until it settles: a test makes another
   * client's change land between a reader's check and its write, as a second person would.
   */
  readonly beforeWrite?: (write: PendingWrite) => Promise<void> | void;
  /** API groups whose resources are not served (e.g. a cluster without MetalLB's CRDs). */
  readonly omitGroups?: readonly string[];
  /** How long the simulated DaemonSet controller takes to finish a rollout. */
  readonly rolloutDelayMs?: number;
  /**
   * The DaemonSet controller counts Pods instead of finishing rollouts on a timer: a DaemonSet's status comes from
   * the Pods its selector matches (annotation TEMPLATE_GENERATION, condition Ready), which the lab's kube-proxy
   * stand-ins write as they restart on each node.
   */
  readonly daemonSetPods?: boolean;
  /**
   * ServiceAccount tokens TokenReview knows: token -> the user it authenticates, the audiences it was issued for, and
   * the user's extra info (a token bound to a Pod carries authentication.kubernetes.io/pod-name and, since 1.30,
   * node-name).
   */
  readonly serviceAccountTokens?: ReadonlyMap<
    string,
    { readonly user: string; readonly audiences: readonly string[]; readonly extra?: Readonly<Record<string, readonly string[]>> }
  >;
}

export { TEMPLATE_GENERATION } from "./controllers.js";

/** A TestApiServer is a Kubernetes API server stand-in that speaks the real REST protocol for whohas's resources. */
export interface TestApiServer {
  readonly url: string;
  /** PEM of the server's self-signed certificate: the CA a client must trust. */
  readonly ca: string;
  /** kubeconfig returns a kubeconfig text for `token` (certificate-authority-data set, TLS verified). */
  kubeconfig(token: string, user?: string): string;
  readonly store: Store;
  readonly server: Server;
  /** Lists served per resource (e.g. "services"): a client that recovers by relisting shows here. */
  readonly lists: Map<string, number>;
  /** down stops answering (open watches cut, the port closed) as a crashed or partitioned API server; `up` returns. */
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

function status(code: number, reason: string, message: string, causes?: ApiError["causes"]): unknown {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(causes ? { details: { causes } } : {}),
    code,
  };
}

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** startTestApiServer listens on 127.0.0.1 (port 0 picks a free one). */
export async function startTestApiServer(opts: TestApiServerOptions, port = 0): Promise<TestApiServer> {
  const store = new Store();
  const omit = new Set(opts.omitGroups ?? []);
  const watches = new Set<ServerResponse>();
  const lists = new Map<string, number>();
  for (const ns of ["default", "kube-system"]) store.create(resourceNamed("namespaces"), null, { metadata: { name: ns } });

  runDaemonSetController(store, { fromPods: opts.daemonSetPods === true, rolloutDelayMs: opts.rolloutDelayMs ?? 300 });
  const tokenReview = (body: KubeObject) => reviewToken(body, opts.serviceAccountTokens);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://x");
    const path = url.pathname;
    const user = opts.tokens.get(/^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "");
    if (user === undefined) return send(res, 401, status(401, "Unauthorized", "Unauthorized"));
    if (path === "/version") return send(res, 200, { major: "1", minor: "32", gitVersion: "v1.32.0-whohas-test", platform: "linux/amd64" });
    if (path === "/api") return send(res, 200, { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [] });
    if (path === "/apis") return send(res, 200, groupList(omit));
    const gv = /^\/api\/(v1)$|^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
    if (gv) {
      const [group, version] = gv[1] !== undefined ? ["", "v1"] : [gv[2] ?? "", gv[3] ?? ""];
      if (omit.has(group) || !RESOURCES.some((r) => r.group === group && r.version === version))
        return send(res, 404, status(404, "NotFound", "the server could not find the requested resource"));
      return send(res, 200, resourceList(group, version, omit));
    }
    const rt = route(path, omit);
    if (rt === null) return send(res, 404, status(404, "NotFound", "the server could not find the requested resource"));
    const watch = url.searchParams.get("watch");
    const verb =
      req.method === "GET"
        ? rt.name === null
          ? watch === "true" || watch === "1"
            ? "watch"
            : "list"
          : "get"
        : req.method === "POST"
          ? "create"
          : req.method === "PUT"
            ? "update"
            : req.method === "PATCH"
              ? "patch"
              : req.method === "DELETE"
                ? "delete"
                : "";
    const denied = opts.forbidden?.find(
      (f) => f.user === user && f.verb === verb && f.resource === rt.r.resource && (f.name === undefined || f.name === rt.name),
    );
    if (denied) {
      const where = rt.ns === null ? "at the cluster scope" : `in the namespace "${rt.ns}"`;
      return send(
        res,
        403,
        status(
          403,
          "Forbidden",
          `${rt.r.resource}${rt.r.group === "" ? "" : `.${rt.r.group}`}${rt.name === null ? "" : ` "${rt.name}"`} is forbidden: User "${user}" cannot ${verb} resource "${rt.r.resource}" in API group "${rt.r.group}" ${where}`,
        ),
      );
    }
    const dryRun = url.searchParams.get("dryRun") === "All";
    if (opts.beforeWrite !== undefined && (verb === "create" || verb === "update" || verb === "patch" || verb === "delete"))
      await opts.beforeWrite({ user, verb, resource: rt.r.resource, namespace: rt.ns, name: rt.name, dryRun });
    const isStatus = rt.sub === "status";
    // The field manager kube-apiserver records: the fieldManager parameter (kubectl always sends one: kubectl-patch,
    // kubectl-edit, kubectl-client-side-apply...), else the program name from the user agent.
    const managerName = url.searchParams.get("fieldManager") ?? managerFromUserAgent(req.headers["user-agent"]);
    const apiVersion = rt.r.group === "" ? rt.r.version : `${rt.r.group}/${rt.r.version}`;
    const updater: FieldManager = { name: managerName, operation: "Update", apiVersion, ...(isStatus ? { subresource: "status" } : {}) };
    if (managerName.length > 128) return send(res, 422, status(422, "Invalid", `fieldManager: Too long: may not be longer than 128`));
    try {
      switch (verb) {
        case "list": {
          lists.set(rt.r.resource, (lists.get(rt.r.resource) ?? 0) + 1);
          const labelSel = url.searchParams.get("labelSelector") ?? "";
          const fieldSel = url.searchParams.get("fieldSelector") ?? "";
          const items = store
            .list(rt.r, rt.ns)
            .filter((o) => labelMatches(labelSel, (o.metadata.labels ?? {}) as Record<string, Json>) && fieldMatches(fieldSel, o));
          return send(res, 200, {
            kind: `${rt.r.kind}List`,
            apiVersion: rt.r.group === "" ? rt.r.version : `${rt.r.group}/${rt.r.version}`,
            metadata: { resourceVersion: String(store.resourceVersion) },
            items,
          });
        }
        case "watch":
          return startWatch(req, res, rt, url);
        case "get":
          return send(res, 200, store.get(rt.r, rt.ns, rt.name ?? ""));
        case "create":
          // TokenReview is not stored: the API server answers whether the token authenticates, for which audiences.
          if (rt.r.resource === "tokenreviews")
            return send(res, 201, tokenReview(parseBody(await readBody(req), req.headers["content-type"])));
          return send(res, 201, store.create(rt.r, rt.ns, parseBody(await readBody(req), req.headers["content-type"]), dryRun, updater));
        case "update":
          return send(
            res,
            200,
            store.update(rt.r, rt.ns, rt.name ?? "", parseBody(await readBody(req), req.headers["content-type"]), {
              status: isStatus,
              dryRun,
              manager: updater,
            }),
          );
        case "patch": {
          const type = (req.headers["content-type"] ?? "").split(";")[0];
          if (type === "application/apply-patch+yaml") return await serverSideApply(req, res, rt, url, dryRun);
          const cur = store.get(rt.r, rt.ns, rt.name ?? "");
          const body = JSON.parse(await readBody(req)) as Json;
          let next: Json;
          if (type === "application/merge-patch+json") next = mergePatch(cur, body);
          else if (type === "application/strategic-merge-patch+json") next = strategicMergePatch(cur, body);
          else if (type === "application/json-patch+json") next = jsonPatch(cur, body);
          else
            return send(
              res,
              415,
              status(
                415,
                "UnsupportedMediaType",
                `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`,
              ),
            );
          const obj = next as KubeObject;
          // A patch that names a resourceVersion is a precondition; one that does not applies to the latest.
          const sentRv = (body as { metadata?: { resourceVersion?: string } } | null)?.metadata?.resourceVersion;
          obj.metadata = { ...obj.metadata, resourceVersion: typeof sentRv === "string" ? sentRv : (cur.metadata.resourceVersion ?? null) };
          return send(res, 200, store.update(rt.r, rt.ns, rt.name ?? "", obj, { status: isStatus, dryRun, manager: updater }));
        }
        case "delete":
          return send(res, 200, store.delete(rt.r, rt.ns, rt.name ?? "", dryRun));
        default:
          return send(res, 405, status(405, "MethodNotAllowed", `${req.method ?? ""} is not supported`));
      }
    } catch (e) {
      if (e instanceof ApiError) return send(res, e.code, status(e.code, e.reason, e.message, e.causes));
      if (e instanceof PatchError) return send(res, 422, status(422, "Invalid", e.message));
      if (e instanceof SyntaxError) return send(res, 400, status(400, "BadRequest", `the body is not valid: ${e.message}`));
      throw e;
    }
  };

  /**
   * serverSideApply is PATCH with application/apply-patch+yaml: the configuration merges into the object (created when
   * absent), its manager's set becomes what it applied, and fields other managers own with another value conflict
   * (409) unless `force=true`. The fieldManager parameter is required, as kube-apiserver requires it.
   */
  async function serverSideApply(req: IncomingMessage, res: ServerResponse, rt: Route, url: URL, dryRun: boolean): Promise<void> {
    const name = url.searchParams.get("fieldManager");
    if (name === null || name === "")
      return send(res, 400, status(400, "BadRequest", "PATCH, fieldManager is required for apply requests"));
    const applied = parseBody(await readBody(req), "yaml");
    const apiVersion = rt.r.group === "" ? rt.r.version : `${rt.r.group}/${rt.r.version}`;
    const fm: FieldManager = { name, operation: "Apply", apiVersion, applied, force: url.searchParams.get("force") === "true" };
    let cur: KubeObject | null = null;
    try {
      cur = store.get(rt.r, rt.ns, rt.name ?? "");
    } catch (e) {
      if (!(e instanceof ApiError) || e.code !== 404) throw e;
    }
    if (cur === null) return send(res, 201, store.create(rt.r, rt.ns, applyMerge(null, structuredClone(applied)), dryRun, fm));
    const next = applyMerge(cur, structuredClone(applied));
    next.metadata = { ...next.metadata, resourceVersion: str(applied.metadata.resourceVersion) || str(cur.metadata.resourceVersion) };
    return send(res, 200, store.update(rt.r, rt.ns, rt.name ?? "", next, { status: rt.sub === "status", dryRun, manager: fm }));
  }

  function startWatch(req: IncomingMessage, res: ServerResponse, rt: Route, url: URL): void {
    const fieldSel = url.searchParams.get("fieldSelector") ?? "";
    const labelSel = url.searchParams.get("labelSelector") ?? "";
    const rvParam = url.searchParams.get("resourceVersion") ?? "";
    const timeout = Number(url.searchParams.get("timeoutSeconds") ?? 0);
    const matches = (e: WatchEvent) =>
      e.r === rt.r &&
      (rt.ns === null || e.object.metadata.namespace === rt.ns) &&
      fieldMatches(fieldSel, e.object) &&
      labelMatches(labelSel, (e.object.metadata.labels ?? {}) as Record<string, Json>);
    res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
    const write = (type: string, object: unknown) => res.write(JSON.stringify({ type, object }) + "\n");
    let backlog: WatchEvent[];
    if (rvParam === "" || rvParam === "0") {
      // "Any": start with the current state as ADDED events, as the API server does.
      backlog = [];
      for (const o of store.list(rt.r, rt.ns))
        if (fieldMatches(fieldSel, o) && labelMatches(labelSel, (o.metadata.labels ?? {}) as Record<string, Json>)) write("ADDED", o);
    } else {
      try {
        backlog = store.eventsSince(Number(rvParam));
      } catch (e) {
        // A too old resourceVersion is a 410 inside the watch stream (an ERROR event), exactly as kube-apiserver does.
        const err = e as ApiError;
        write("ERROR", status(err.code, err.reason, err.message));
        res.end();
        return;
      }
    }
    for (const e of backlog) if (matches(e)) write(e.type, e.object);
    const unsubscribe = store.subscribe((e) => {
      if (matches(e)) write(e.type, e.object);
    });
    watches.add(res);
    const bookmarks =
      url.searchParams.get("allowWatchBookmarks") === "true"
        ? setInterval(
            () =>
              write("BOOKMARK", {
                kind: rt.r.kind,
                apiVersion: rt.r.group === "" ? rt.r.version : `${rt.r.group}/${rt.r.version}`,
                metadata: { resourceVersion: String(store.resourceVersion) },
              }),
            1000,
          )
        : null;
    const end = () => {
      unsubscribe();
      if (bookmarks) clearInterval(bookmarks);
      watches.delete(res);
      res.end();
    };
    if (timeout > 0) setTimeout(end, timeout * 1000).unref();
    req.on("close", end);
  }

  const tls = selfSigned();
  const server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) send(res, 500, status(500, "InternalError", (e as Error).message));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const addr = server.address() as AddressInfo;
  const url = `https://127.0.0.1:${addr.port}`;
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const w of watches) w.end();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return {
    url,
    ca: tls.cert,
    kubeconfig: (token, user = "whohas") => `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: ${url}
    certificate-authority-data: ${Buffer.from(tls.cert).toString("base64")}
users:
- name: ${user}
  user:
    token: ${token}
contexts:
- name: test
  context: { cluster: test, user: ${user} }
current-context: test
`,
    store,
    server,
    lists,
    down: stop,
    up: () => new Promise<void>((resolve) => server.listen(addr.port, "127.0.0.1", resolve)),
    close: () => (server.listening ? stop() : Promise.resolve()),
  };
}

function parseBody(text: string, contentType: string | undefined): KubeObject {
  const body = (contentType ?? "").includes("yaml") ? (parseYaml(text) as unknown) : (JSON.parse(text) as unknown);
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new ApiError(400, "BadRequest", "the body must be an object");
  const o = body as { metadata?: Record<string, Json> };
  o.metadata ??= {};
  return o as KubeObject;
}
