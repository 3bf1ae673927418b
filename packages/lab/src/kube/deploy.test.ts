// The install manifests (deploy/): every overlay rendered with kubectl's Kustomize, its security properties asserted
// on the rendered objects, and the result applied with kubectl to the test API server (well-formed objects).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { REPO_ROOT } from "../stack.js";
import { startTestApiServer, type TestApiServer } from "./server.js";

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return -- rendered manifests are untyped YAML, asserted field by field */
type Obj = Record<string, any>;

const dir = mkdtempSync(join(tmpdir(), "whohas-deploy-"));
const OVERLAYS = ["base", "overlays/shared-token", "overlays/ingress", "overlays/monitoring", "overlays/ha"] as const;
const ADMIN = "admin-token-0123456789";

function run(cmd: string, args: string[], input = ""): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("close", (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(input);
  });
}

const rendered = new Map<string, { text: string; objects: Obj[] }>();
let api: TestApiServer;
let kubeconfig: string;

beforeAll(async () => {
  // A copy of deploy/, with the token the shared-token overlay expects next to it (kept out of git).
  cpSync(join(REPO_ROOT, "deploy"), join(dir, "deploy"), { recursive: true });
  writeFileSync(join(dir, "deploy/overlays/shared-token/agent-token"), "0123456789abcdef0123456789abcdef\n");
  writeFileSync(join(dir, "deploy/overlays/ha/storage-url"), "postgres://whohas:pw@postgres.db:5432/whohas?sslmode=require");
  writeFileSync(join(dir, "deploy/overlays/ha/users.yaml"), "users: []\n");
  for (const o of OVERLAYS) {
    const r = await run("kubectl", ["kustomize", join(dir, "deploy", o)]);
    if (r.status !== 0) throw new Error(`kubectl kustomize deploy/${o}: ${r.stderr}`);
    rendered.set(o, {
      text: r.stdout,
      objects: parseAllDocuments(r.stdout)
        .map((d) => d.toJS() as Obj | null)
        .filter((x): x is Obj => x !== null),
    });
  }
  api = await startTestApiServer({ tokens: new Map([[ADMIN, "admin"]]) });
  kubeconfig = join(dir, "kubeconfig");
  writeFileSync(kubeconfig, api.kubeconfig(ADMIN, "admin"));
});
afterAll(async () => {
  await api.close();
});

const find = (objs: Obj[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata?.name === name);
  if (o === undefined) throw new Error(`no ${kind} ${name}`);
  return o;
};
const podSpecs = (objs: Obj[]) =>
  objs
    .filter((o) => ["Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob", "Pod"].includes(o.kind))
    .map((o) => ({ name: `${o.kind}/${o.metadata.name}`, spec: (o.kind === "Pod" ? o.spec : o.spec.template.spec) as Obj }));

/** rules flattens RBAC rules to "group/resource[/name]:verb" lines, so that a test states them exactly. */
const rules = (o: Obj) =>
  (o.rules as Obj[])
    .flatMap((r) =>
      (r.apiGroups as string[]).flatMap((g) =>
        (r.resources as string[]).flatMap((res) =>
          ((r.resourceNames as string[] | undefined) ?? [""]).flatMap((n) =>
            (r.verbs as string[]).map((v) => `${g}/${res}${n === "" ? "" : `/${n}`}:${v}`),
          ),
        ),
      ),
    )
    .sort();

describe.each(OVERLAYS)("deploy/%s", (overlay) => {
  const objs = () => rendered.get(overlay)?.objects ?? [];

  it("runs the agent on every node's host network with NET_RAW and NET_ADMIN only, read-only, unprivileged", () => {
    const ds = find(objs(), "DaemonSet", "whohas-agent");
    const spec = ds.spec.template.spec as Obj;
    expect(ds.metadata.namespace).toBe("whohas");
    expect(spec.hostNetwork).toBe(true);
    expect(spec.dnsPolicy).toBe("ClusterFirstWithHostNet");
    expect(spec.hostPID ?? false).toBe(false);
    expect(spec.hostIPC ?? false).toBe(false);
    expect(spec.tolerations).toContainEqual({ operator: "Exists" });
    expect(spec.automountServiceAccountToken).toBe(false);
    expect((spec.volumes as Obj[]).some((v) => v.hostPath !== undefined)).toBe(false);
    const [c, ...more] = spec.containers as Obj[];
    expect(more).toEqual([]);
    expect(c?.securityContext).toMatchObject({
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    expect([...(c?.securityContext.capabilities.add as string[])].sort()).toEqual(["NET_ADMIN", "NET_RAW"]);
    expect(c?.env).toContainEqual({ name: "NODE_NAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } });
    expect(c?.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(c?.resources.limits).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(c?.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "metrics" });
    expect(c?.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "metrics" });
    expect(c?.ports).toContainEqual({ name: "metrics", containerPort: 9472 });
    expect(c?.args).toContain("--token-file=/var/run/secrets/whohas/token");
  });

  it("runs the hub as non-root on a read-only root, no capabilities, SQLite on a PersistentVolumeClaim, probed", () => {
    const d = find(objs(), "Deployment", "whohas-hub");
    const spec = d.spec.template.spec as Obj;
    // The replicas of ha keep no SQLite: their own test below.
    const sqlite = overlay !== "overlays/ha";
    expect(d.spec.replicas).toBe(sqlite ? 1 : 2);
    if (sqlite) expect(d.spec.strategy).toEqual({ type: "Recreate" });
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: expect.any(Number), fsGroup: expect.any(Number) });
    expect(spec.securityContext.runAsUser).toBeGreaterThan(0);
    expect(spec.hostNetwork ?? false).toBe(false);
    const c = (spec.containers as Obj[])[0];
    expect(c?.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      privileged: false,
      capabilities: { drop: ["ALL"] },
    });
    expect(c?.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(c?.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
    expect(c?.resources.limits.memory).toBeDefined();
    const data = (spec.volumes as Obj[]).find((v) => v.name === "data");
    if (sqlite) {
      expect(data?.persistentVolumeClaim.claimName).toBe("whohas-data");
      find(objs(), "PersistentVolumeClaim", "whohas-data");
    }
    expect((c?.volumeMounts as Obj[]).find((m) => m.name === "data")?.mountPath).toBe("/var/lib/whohas");
  });

  it("has no privileged container and no capability beyond the agent's two", () => {
    for (const { name, spec } of podSpecs(objs())) {
      for (const c of [...(spec.containers as Obj[]), ...((spec.initContainers as Obj[] | undefined) ?? [])]) {
        expect(c.securityContext?.privileged ?? false, name).toBe(false);
        const add = (c.securityContext?.capabilities?.add as string[] | undefined) ?? [];
        expect(
          add.every((x) => ["NET_RAW", "NET_ADMIN"].includes(x)) && (add.length === 0 || name === "DaemonSet/whohas-agent"),
          `${name} adds ${add.join(",")}`,
        ).toBe(true);
      }
    }
  });

  it("grants the hub exactly what it reads cluster-wide, and in kube-system only kube-proxy's ConfigMap and DaemonSet by name", () => {
    const cr = find(objs(), "ClusterRole", "whohas-hub");
    expect(rules(cr)).toEqual(
      [
        "/events:get",
        "/events:list",
        "/events:watch",
        "/pods:list", // MetalLB's speakers, by label
        "/pods:watch",
        "/nodes:get",
        "/nodes:list",
        "/nodes:watch",
        "/services:get",
        "/services:list",
        "/services:watch",
        "authentication.k8s.io/tokenreviews:create",
        "cilium.io/ciliuml2announcementpolicies:get",
        "cilium.io/ciliuml2announcementpolicies:list",
        "cilium.io/ciliuml2announcementpolicies:watch",
        "coordination.k8s.io/leases:get",
        "coordination.k8s.io/leases:list",
        "coordination.k8s.io/leases:watch",
        "discovery.k8s.io/endpointslices:get",
        "discovery.k8s.io/endpointslices:list",
        "discovery.k8s.io/endpointslices:watch",
        "metallb.io/bgpadvertisements:get",
        "metallb.io/bgpadvertisements:list",
        "metallb.io/bgpadvertisements:watch",
        "metallb.io/ipaddresspools:get",
        "metallb.io/ipaddresspools:list",
        "metallb.io/ipaddresspools:watch",
        "metallb.io/l2advertisements:get",
        "metallb.io/l2advertisements:list",
        "metallb.io/l2advertisements:watch",
        "metallb.io/servicel2statuses:get",
        "metallb.io/servicel2statuses:list",
        "metallb.io/servicel2statuses:watch",
      ].sort(),
    );
    const role = find(objs(), "Role", "whohas-hub");
    expect(role.metadata.namespace).toBe("kube-system");
    expect(rules(role)).toEqual(
      [
        "/configmaps/kube-proxy:get",
        "/configmaps/kube-proxy:list",
        "/configmaps/kube-proxy:watch",
        "/configmaps/kube-proxy:patch",
        "/configmaps:create", // the backup ConfigMap (create cannot name its object)
        "/configmaps/kubeadm-config:get",
        "apps/daemonsets/kube-proxy:get",
        "apps/daemonsets/kube-proxy:list",
        "apps/daemonsets/kube-proxy:watch",
        "apps/daemonsets/kube-proxy:patch",
        "apps/daemonsets/antrea-agent:get",
      ].sort(),
    );
    // In its own namespace, the agents' Pods (read one), to learn the node of a token bound to a Pod only.
    const pods = find(objs(), "Role", "whohas-hub-agent-pods");
    expect(pods.metadata.namespace).toBe("whohas");
    expect(rules(pods)).toEqual(["/pods:get"]);
    expect(find(objs(), "RoleBinding", "whohas-hub-agent-pods").subjects).toEqual([
      { kind: "ServiceAccount", name: "whohas-hub", namespace: "whohas" },
    ]);
    // Nothing anywhere may touch Secrets, use wildcards, or escalate.
    for (const o of objs().filter((x) => x.kind === "ClusterRole" || x.kind === "Role")) {
      for (const line of rules(o)) {
        expect(line).not.toMatch(/\*|secrets|escalate|bind|impersonate/);
      }
    }
    expect(find(objs(), "ClusterRoleBinding", "whohas-hub").subjects).toEqual([
      { kind: "ServiceAccount", name: "whohas-hub", namespace: "whohas" },
    ]);
    expect(find(objs(), "RoleBinding", "whohas-hub").subjects).toEqual([
      { kind: "ServiceAccount", name: "whohas-hub", namespace: "whohas" },
    ]);
    // The agents' ServiceAccount is bound to nothing: it is only an identity toward the hub.
    expect(objs().filter((o) => o.kind.endsWith("Binding") && (o.subjects as Obj[]).some((s) => s.name === "whohas-agent"))).toEqual([]);
  });

  it("lets only the hub's ports in, /metrics from the monitoring namespace only, and applies with kubectl to the API server", async () => {
    const np = find(objs(), "NetworkPolicy", "whohas-hub");
    expect(np.spec.policyTypes).toEqual(["Ingress"]);
    expect(np.spec.ingress).toEqual([
      { ports: [{ protocol: "TCP", port: 3000 }] },
      {
        ports: [{ protocol: "TCP", port: 9473 }],
        from: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } }],
      },
    ]);
    const text = rendered.get(overlay)?.text ?? "";
    const apply = await run("kubectl", ["--kubeconfig", kubeconfig, "apply", "--validate=false", "-f", "-"], text);
    expect(apply.stderr).toBe("");
    expect(apply.status).toBe(0);
    // Applied again: nothing to change (kubectl computes the patches, the server answers them).
    const again = await run("kubectl", ["--kubeconfig", kubeconfig, "apply", "--validate=false", "-f", "-"], text);
    expect(again.status, again.stderr).toBe(0);
    const got = await run("kubectl", ["--kubeconfig", kubeconfig, "get", "-f", "-", "-o", "name"], text);
    expect(got.status, got.stderr).toBe(0);
    expect(got.stdout.trim().split("\n")).toHaveLength(objs().length);
  });
});

describe("the overlays", () => {
  it("ingress tells the hub its proxies, so sign-in limits count each client", () => {
    const objs = rendered.get("overlays/ingress")?.objects ?? [];
    const hub = find(objs, "Deployment", "whohas-hub");
    const env = (hub.spec.template.spec.containers[0]?.env ?? []) as { name: string; value?: string }[];
    expect(env.find((e) => e.name === "WHOHAS_TRUSTED_PROXIES")?.value).toMatch(/^\d+\.\d+\.\d+\.\d+\/\d+$/);
  });

  it("shared-token mounts the generated Secret in the hub and the agents instead of the projected token", () => {
    const objs = rendered.get("overlays/shared-token")?.objects ?? [];
    const secret = find(objs, "Secret", "whohas-agent-token");
    expect(
      Buffer.from(secret.data.token as string, "base64")
        .toString()
        .trim(),
    ).toHaveLength(32);
    const agent = find(objs, "DaemonSet", "whohas-agent").spec.template.spec as Obj;
    expect((agent.volumes as Obj[])[0]).toEqual({ name: "hub-token", secret: { secretName: "whohas-agent-token", defaultMode: 0o400 } });
    const hub = find(objs, "Deployment", "whohas-hub").spec.template.spec as Obj;
    expect((hub.containers as Obj[])[0]?.env).toContainEqual({ name: "WHOHAS_AGENT_TOKEN_FILE", value: "/etc/whohas-agent-token/token" });
  });

  it("ha runs two hub replicas on PostgreSQL from a Secret, rolling one at a time, one kept through a drain", () => {
    const objs = rendered.get("overlays/ha")?.objects ?? [];
    const hub = find(objs, "Deployment", "whohas-hub");
    expect(hub.spec.replicas).toBe(2);
    expect(hub.spec.strategy).toEqual({ type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    const env = (hub.spec.template.spec.containers[0]?.env ?? []) as Obj[];
    expect(env).toContainEqual({ name: "WHOHAS_HA", value: "true" });
    expect(env).toContainEqual({ name: "WHOHAS_STORAGE_URL", valueFrom: { secretKeyRef: { name: "whohas-hub-ha", key: "storage-url" } } });
    expect(env).toContainEqual({ name: "WHOHAS_USERS_FILE", value: "/etc/whohas-users/users.yaml" });
    expect(find(objs, "PodDisruptionBudget", "whohas-hub").spec).toMatchObject({ minAvailable: 1 });
    // No SQLite volume to share: the data volume is scratch space, and no claim is made.
    expect(objs.some((o) => o.kind === "PersistentVolumeClaim")).toBe(false);
    expect((hub.spec.template.spec.volumes as Obj[]).find((v) => v.name === "data")).toEqual({
      name: "data",
      emptyDir: { sizeLimit: "64Mi" },
    });
    expect(Buffer.from(find(objs, "Secret", "whohas-hub-ha").data["storage-url"] as string, "base64").toString()).toMatch(/^postgres:\/\//);
  });

  it("monitoring scrapes the hub and every agent and carries the alert rules", () => {
    const objs = rendered.get("overlays/monitoring")?.objects ?? [];
    expect(find(objs, "ServiceMonitor", "whohas-hub").spec.endpoints[0]).toMatchObject({ port: "metrics", path: "/metrics" });
    expect(find(objs, "PodMonitor", "whohas-agent").spec.podMetricsEndpoints[0]).toMatchObject({ port: "metrics", path: "/metrics" });
    expect((find(objs, "PrometheusRule", "whohas").spec.groups[0].rules as Obj[]).map((r) => r.alert)).toContain("WhohasSeveralResponders");
  });

  it("ingress routes users to the hub's Service with TLS, and never its metrics port", () => {
    const objs = rendered.get("overlays/ingress")?.objects ?? [];
    const ing = find(objs, "Ingress", "whohas-hub");
    // /metrics has a port of its own (metrics.listen), which the Ingress does not route.
    const conf = find(objs, "ConfigMap", "whohas-hub").data["config.yaml"] as string;
    expect(conf).toMatch(/metrics:\n\s+listen: 0\.0\.0\.0:9473/);
    expect(find(objs, "Service", "whohas-hub").spec.ports).toEqual([
      { name: "http", port: 3000, targetPort: "http" },
      { name: "metrics", port: 9473, targetPort: "metrics" },
    ]);
    expect(ing.spec.tls[0].secretName).toBe("whohas-tls");
    expect(ing.spec.rules[0].http.paths[0].backend.service).toEqual({ name: "whohas-hub", port: { name: "http" } });
  });
});
