// Fidelity of the test API server, proven with kubectl, an independent client.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { request as httpsRequest } from "node:https";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestApiServer, type TestApiServer } from "./server.js";

const dir = mkdtempSync(join(tmpdir(), "whohas-kube-"));
const ADMIN = "admin-token-0123456789";
const VIEWER = "viewer-token-0123456789";
const CONFIG_CONF = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
ipvs:
  scheduler: ""
  strictARP: false
kind: KubeProxyConfiguration
mode: ipvs
`;

let api: TestApiServer;
let kubeconfig: string;

function kubeconfigFor(_url: string, token: string, name: string): string {
  const path = join(dir, `${name}.kubeconfig`);
  writeFileSync(path, api.kubeconfig(token, name));
  return path;
}

/** kubectl runs the real kubectl asynchronously (the server under test lives in this process's event loop). */
function kubectl(args: string[], config = kubeconfig, input?: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("kubectl", ["--kubeconfig", config, "--request-timeout=20s", ...args]);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("close", (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(input ?? "");
  });
}

/** patchKubeProxy runs kubectl patch on kube-proxy's ConfigMap: a merge or JSON patch, then any further arguments. */
function patchKubeProxy(type: "merge" | "json", patch: string, more: string[] = [], config = kubeconfig) {
  return kubectl(["patch", "cm", "kube-proxy", "-n", "kube-system", "--type", type, "-p", patch, ...more], config);
}

/** note reads back, with kubectl get, the `note` the patches below write into kube-proxy's ConfigMap. */
async function note(): Promise<string> {
  return (await kubectl(["get", "cm", "kube-proxy", "-n", "kube-system", "-o", "jsonpath={.data.note}"])).stdout;
}

beforeAll(async () => {
  api = await startTestApiServer({
    tokens: new Map([
      [ADMIN, "admin"],
      [VIEWER, "viewer"],
    ]),
    forbidden: [{ user: "viewer", verb: "patch", resource: "configmaps" }],
    rolloutDelayMs: 500,
    serviceAccountTokens: new Map([["sa-token-0123456789", { user: "system:serviceaccount:whohas:whohas-agent", audiences: ["whohas"] }]]),
  });
  kubeconfig = kubeconfigFor(api.url, ADMIN, "admin");
  const manifests = `apiVersion: v1
kind: ConfigMap
metadata: { name: kube-proxy, namespace: kube-system }
data:
  config.conf: |
${CONFIG_CONF.split("\n")
  .map((l) => `    ${l}`)
  .join("\n")}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: { name: kube-proxy, namespace: kube-system, labels: { k8s-app: kube-proxy } }
spec:
  selector: { matchLabels: { k8s-app: kube-proxy } }
  template:
    metadata: { labels: { k8s-app: kube-proxy } }
    spec: { containers: [{ name: kube-proxy, image: registry.k8s.io/kube-proxy:v1.32.0 }] }
`;
  const r = await kubectl(["apply", "--validate=false", "-f", "-"], kubeconfig, manifests);
  if (r.status !== 0) throw new Error(`kubectl apply failed: ${r.stderr}`);
});
afterAll(async () => {
  await api.close();
});

describe("the test API server, driven by kubectl", () => {
  it("serves discovery and lists: kubectl get namespaces", async () => {
    const r = await kubectl(["get", "namespaces", "-o", "name"]);
    expect(r.stderr).toBe("");
    expect(r.stdout.split("\n").filter(Boolean)).toEqual(["namespace/default", "namespace/kube-system"]);
  });

  it("stores what kubectl apply sent, byte for byte", async () => {
    const r = await kubectl(["get", "configmap", "kube-proxy", "-n", "kube-system", "-o", "jsonpath={.data.config\\.conf}"]);
    expect(r.stdout).toBe(CONFIG_CONF);
  });

  it("applies merge and JSON patches", async () => {
    expect((await patchKubeProxy("merge", '{"data":{"note":"a"}}')).status).toBe(0);
    expect((await patchKubeProxy("json", '[{"op":"replace","path":"/data/note","value":"b"}]')).status).toBe(0);
    expect(await note()).toBe("b");
  });

  it("keeps the object unchanged on a server-side dry run", async () => {
    const r = await patchKubeProxy("merge", '{"data":{"note":"dry"}}', ["--dry-run=server", "-o", "jsonpath={.data.note}"]);
    expect(r.stdout).toBe("dry");
    expect(await note()).toBe("b");
  });

  it("rolls a DaemonSet: rollout restart bumps generation, rollout status waits for the controller", async () => {
    const before = Number(
      (await kubectl(["get", "ds", "kube-proxy", "-n", "kube-system", "-o", "jsonpath={.metadata.generation}"])).stdout,
    );
    const restart = await kubectl(["rollout", "restart", "ds/kube-proxy", "-n", "kube-system"]);
    expect(restart.stdout).toContain("daemonset.apps/kube-proxy restarted");
    const ds = JSON.parse((await kubectl(["get", "ds", "kube-proxy", "-n", "kube-system", "-o", "json"])).stdout) as {
      metadata: { generation: number };
      spec: { template: { metadata: { annotations: Record<string, string> } } };
    };
    expect(ds.metadata.generation).toBe(before + 1);
    expect(ds.spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"]).toMatch(/^\d{4}-\d\d-\d\dT/);
    const st = await kubectl(["rollout", "status", "ds/kube-proxy", "-n", "kube-system", "--timeout=20s"]);
    expect(st.status, st.stderr).toBe(0);
    expect(st.stdout).toContain('daemon set "kube-proxy" successfully rolled out');
  });

  it("answers a stale resourceVersion with 409 Conflict", async () => {
    const cm = JSON.parse((await kubectl(["get", "cm", "kube-proxy", "-n", "kube-system", "-o", "json"])).stdout) as {
      metadata: { resourceVersion: string };
    };
    await patchKubeProxy("merge", '{"data":{"note":"c"}}');
    const stale = JSON.stringify({ ...cm, data: { "config.conf": "changed" } });
    const r = await kubectl(["replace", "--validate=false", "-f", "-"], kubeconfig, stale);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/Operation cannot be fulfilled on configmaps "kube-proxy": the object has been modified/);
  });

  it("answers 403 Forbidden for an identity without the permission, with the missing permission named", async () => {
    const viewer = kubeconfigFor(api.url, VIEWER, "viewer");
    expect((await kubectl(["get", "cm", "-n", "kube-system", "-o", "name"], viewer)).stdout).toContain("configmap/kube-proxy");
    const r = await patchKubeProxy("merge", '{"data":{"x":"y"}}', [], viewer);
    expect(r.stderr).toMatch(/Forbidden.*User "viewer" cannot patch resource "configmaps" in API group "" in the namespace "kube-system"/);
  });

  it("serves the announcers' resources: Leases (with a field selector leaving node heartbeats out), BGP, Cilium", async () => {
    const manifests = [
      {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "plndr-svcs-lock", namespace: "kube-system" },
        spec: { holderIdentity: "node-b" },
      },
      {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "node-a", namespace: "kube-node-lease" },
        spec: { holderIdentity: "node-a" },
      },
      {
        apiVersion: "metallb.io/v1beta1",
        kind: "BGPAdvertisement",
        metadata: { name: "bgp", namespace: "metallb-system" },
        spec: { ipAddressPools: ["lb"] },
      },
      {
        apiVersion: "metallb.io/v1beta2",
        kind: "BGPPeer",
        metadata: { name: "tor", namespace: "metallb-system" },
        spec: { peerAddress: "192.0.2.1", peerASN: 64500, myASN: 64501 },
      },
      {
        apiVersion: "cilium.io/v2alpha1",
        kind: "CiliumL2AnnouncementPolicy",
        metadata: { name: "l2" },
        spec: { interfaces: ["^eth[0-9]+"], loadBalancerIPs: true },
      },
    ];
    const applied = await kubectl(
      ["apply", "--validate=false", "-f", "-"],
      kubeconfig,
      JSON.stringify({ apiVersion: "v1", kind: "List", items: manifests }),
    );
    expect(applied.status, applied.stderr).toBe(0);
    const holders = await kubectl([
      "get",
      "leases",
      "-A",
      "--field-selector",
      "metadata.namespace!=kube-node-lease",
      "-o",
      "jsonpath={.items[*].spec.holderIdentity}",
    ]);
    expect(holders.stdout).toBe("node-b");
    expect((await kubectl(["get", "bgpadvertisements.metallb.io", "-n", "metallb-system", "-o", "name"])).stdout).toContain(
      "bgpadvertisement.metallb.io/bgp",
    );
    expect((await kubectl(["get", "bgppeers.v1beta2.metallb.io", "-n", "metallb-system", "-o", "name"])).stdout).toContain(
      "bgppeer.metallb.io/tor",
    );
    expect((await kubectl(["get", "ciliuml2announcementpolicies", "-o", "jsonpath={.items[0].spec.interfaces[0]}"])).stdout).toBe(
      "^eth[0-9]+",
    );
  });

  it("refuses an unknown token with 401", async () => {
    const r = await kubectl(["get", "ns"], kubeconfigFor(api.url, "nope-nope-nope", "nobody"));
    expect(r.stderr).toMatch(/Unauthorized|must be logged in/);
  });
});

/** request talks to the server with its CA trusted; `lines` resolves with the first `n` lines of the body. */
function request(method: string, path: string, body?: unknown, n = Infinity): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${api.url}${path}`,
      { method, ca: api.ca, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" } },
      (res) => {
        let buf = "";
        res.on("data", (d: Buffer) => {
          buf += d.toString();
          const lines = buf.split("\n").filter(Boolean);
          if (lines.length >= n) {
            res.destroy();
            resolve(lines.slice(0, n));
          }
        });
        res.on("end", () => resolve(buf.split("\n").filter(Boolean)));
      },
    );
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe("watch", () => {
  it("streams events after a resourceVersion and answers a compacted one with a 410 ERROR event", async () => {
    const [listText] = await request("GET", "/api/v1/namespaces/default/configmaps");
    const rv = (JSON.parse(listText ?? "{}") as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const first = request("GET", `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${rv}`, undefined, 1);
    await new Promise((r) => setTimeout(r, 100));
    await request("POST", "/api/v1/namespaces/default/configmaps", { metadata: { name: "w1" } });
    const [event] = await first;
    expect(JSON.parse(event ?? "")).toMatchObject({ type: "ADDED", object: { kind: "ConfigMap", metadata: { name: "w1" } } });
    for (let i = 0; i < 1001; i++)
      api.store.create({ group: "", version: "v1", resource: "events", kind: "Event", namespaced: true }, "default", {
        metadata: { name: `e${i}` },
      });
    const [gone] = await request("GET", `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rv}`);
    expect(JSON.parse(gone ?? "")).toMatchObject({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } });
  });
});

describe("TokenReview", () => {
  it("answers kubectl create as kube-apiserver does: authenticated for a known token and audience, not otherwise", async () => {
    const review = (token: string, audience: string) =>
      JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token, audiences: [audience] } });
    const ok = await kubectl(["create", "--validate=false", "-f", "-", "-o", "json"], kubeconfig, review("sa-token-0123456789", "whohas"));
    expect(ok.stderr).toBe("");
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({
      kind: "TokenReview",
      status: { authenticated: true, user: { username: "system:serviceaccount:whohas:whohas-agent" }, audiences: ["whohas"] },
    });
    const other = JSON.parse(
      (await kubectl(["create", "--validate=false", "-f", "-", "-o", "json"], kubeconfig, review("sa-token-0123456789", "vault"))).stdout,
    ) as { status: { authenticated?: boolean; error: string } };
    expect(other.status.authenticated).toBeUndefined();
    expect(other.status.error).toBe("token audiences do not match");
  });
});

interface ManagedEntry {
  manager: string;
  operation: string;
  apiVersion: string;
  time: string;
  fieldsType: string;
  fieldsV1: Record<string, unknown>;
}

/** owners reads ConfigMap kube-system/owners with kubectl, managedFields shown. */
async function owners(): Promise<{ data: Record<string, string>; managedFields: ManagedEntry[] }> {
  const r = await kubectl(["get", "cm", "owners", "-n", "kube-system", "-o", "json", "--show-managed-fields"]);
  const o = JSON.parse(r.stdout) as { data: Record<string, string>; metadata: { managedFields: ManagedEntry[] } };
  return { data: o.data, managedFields: o.metadata.managedFields };
}
const byManager = (mf: readonly ManagedEntry[], m: string) => mf.find((e) => e.manager === m);
const patchOwners = (p: string, more: string[] = []) =>
  kubectl(["patch", "cm", "owners", "-n", "kube-system", "--type", "merge", "-p", p, ...more]);
const applyOwners = (data: Record<string, string>, more: string[] = []) =>
  kubectl(
    ["apply", "--server-side", "--validate=false", "-f", "-", ...more],
    kubeconfig,
    JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "owners", namespace: "kube-system" }, data }),
  );

describe("managedFields, as kubectl --show-managed-fields shows them", () => {
  it("records the creator as owning every field it set, with kubectl's field manager", async () => {
    // kubectl create configmap speaks protobuf, which this server does not: the same create, from a manifest.
    const cm = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "owners", namespace: "kube-system" },
      data: { "config.conf": "strictARP: true", a: "1" },
    };
    const r = await kubectl(["create", "--validate=false", "-f", "-"], kubeconfig, JSON.stringify(cm));
    expect(r.status, r.stderr).toBe(0);
    const { managedFields } = await owners();
    expect(managedFields).toEqual([
      {
        manager: "kubectl-create",
        operation: "Update",
        apiVersion: "v1",
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/) as unknown,
        fieldsType: "FieldsV1",
        fieldsV1: { "f:data": { ".": {}, "f:a": {}, "f:config.conf": {} } },
      },
    ]);
  });

  it("moves a field to the manager that patched it last (--field-manager), leaving the rest where it was", async () => {
    const r = await patchOwners('{"data":{"config.conf":"strictARP: false"}}', ["--field-manager", "kubermatic-operator"]);
    expect(r.status, r.stderr).toBe(0);
    const { managedFields } = await owners();
    expect(managedFields.map((e) => e.manager)).toEqual(["kubectl-create", "kubermatic-operator"]);
    expect(byManager(managedFields, "kubectl-create")?.fieldsV1).toEqual({ "f:data": { ".": {}, "f:a": {} } });
    expect(byManager(managedFields, "kubermatic-operator")).toMatchObject({
      operation: "Update",
      fieldsV1: { "f:data": { "f:config.conf": {} } },
    });
  });

  it("names kubectl patch's own manager by default, for JSON patches too, and drops a manager left with nothing", async () => {
    expect(
      (
        await kubectl([
          "patch",
          "cm",
          "owners",
          "-n",
          "kube-system",
          "--type",
          "json",
          "-p",
          '[{"op":"replace","path":"/data/a","value":"2"}]',
        ])
      ).status,
    ).toBe(0);
    const { managedFields } = await owners();
    expect(byManager(managedFields, "kubectl-patch")?.fieldsV1).toEqual({ "f:data": { "f:a": {} } });
    expect(byManager(managedFields, "kubectl-create")?.fieldsV1).toEqual({ "f:data": {} });
  });

  it("leaves managedFields, times included, as they were on a patch that changes nothing", async () => {
    const before = (await owners()).managedFields;
    await new Promise((r) => setTimeout(r, 1100));
    expect((await patchOwners('{"data":{"a":"2"}}', ["--field-manager", "someone-else"])).status).toBe(0);
    expect((await owners()).managedFields).toEqual(before);
  });

  it("takes the manager from the user agent when a client names none, as kube-apiserver does", async () => {
    const body = JSON.stringify({ data: { b: "1" } });
    await new Promise<void>((resolve, reject) => {
      const req = httpsRequest(
        `${api.url}/api/v1/namespaces/kube-system/configmaps/owners`,
        {
          method: "PATCH",
          ca: api.ca,
          headers: {
            authorization: `Bearer ${ADMIN}`,
            "content-type": "application/merge-patch+json",
            "user-agent": "kubespray-tool/v2.27 (linux/amd64)",
          },
        },
        (res) => res.resume().on("end", resolve),
      );
      req.on("error", reject);
      req.end(body);
    });
    expect(byManager((await owners()).managedFields, "kubespray-tool")?.fieldsV1).toEqual({ "f:data": { "f:b": {} } });
  });

  it("server-side apply: a conflict names the other manager; --force-conflicts takes the field; the set is what was applied", async () => {
    const conflict = await applyOwners({ "config.conf": "strictARP: true" }, ["--field-manager", "whohas"]);
    expect(conflict.status).not.toBe(0);
    expect(conflict.stderr).toContain('Apply failed with 1 conflict: conflict with "kubermatic-operator" using v1: .data.config.conf');
    const forced = await applyOwners({ "config.conf": "strictARP: true", c: "1" }, ["--field-manager", "whohas", "--force-conflicts"]);
    expect(forced.status, forced.stderr).toBe(0);
    const { data, managedFields } = await owners();
    expect(data["config.conf"]).toBe("strictARP: true");
    expect(byManager(managedFields, "kubermatic-operator")).toBeUndefined();
    expect(managedFields[0]).toMatchObject({ manager: "whohas", operation: "Apply" });
    expect(managedFields[0]?.fieldsV1).toEqual({ "f:data": { "f:c": {}, "f:config.conf": {} } });
  });

  it("server-side apply: applying the same value another manager set shares it; a field no longer applied goes", async () => {
    expect((await applyOwners({ "config.conf": "strictARP: true", a: "2" }, ["--field-manager", "whohas"])).status).toBe(0);
    const { data, managedFields } = await owners();
    expect(data.c).toBeUndefined();
    expect(byManager(managedFields, "kubectl-patch")?.fieldsV1).toEqual({ "f:data": { "f:a": {} } });
    expect(byManager(managedFields, "whohas")?.fieldsV1).toEqual({ "f:data": { "f:a": {}, "f:config.conf": {} } });
  });
});
