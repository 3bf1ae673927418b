// `kubectl whohas` against a running lab: the real hub and agents, the kernels of three nodes answering (strictARP
// false, so every node answers for every VIP), and the test API server for the kubeconfig path.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT, freePort, startStack, type Stack } from "../stack.js";
import { eventually } from "./hub-client.js";

/** The plugin as a user installs it: the one file, copied alone into a directory on PATH as kubectl-whohas. */
const PLUGIN = join(REPO_ROOT, "apps/agent/dist/kubectl-whohas.cjs");
const bin = mkdtempSync(join(tmpdir(), "whohas-plugin-"));
copyFileSync(PLUGIN, join(bin, "kubectl-whohas"));

/**
 * A stand-in for `kubectl port-forward` only: the test API server cannot serve a port-forward (kubectl speaks SPDY
 * to it, tunnelled or not), so this script forwards a local port to FORWARD_TO as kubectl would, prints kubectl's
 * "Forwarding from" line, and writes its pid and arguments to FORWARD_LOG. Every other command runs the real kubectl
 * with the same arguments (the Secret is read from the test API server for real).
 */
const STAND_IN = `#!/usr/bin/env node
const { spawnSync } = require("node:child_process");
const { appendFileSync } = require("node:fs");
const net = require("node:net");
const args = process.argv.slice(2);
if (!args.includes("port-forward")) process.exit(spawnSync("kubectl", args, { stdio: "inherit" }).status ?? 1);
appendFileSync(process.env.FORWARD_LOG, JSON.stringify({ pid: process.pid, args }) + "\\n");
const server = net.createServer((c) => {
  const up = net.connect(Number(process.env.FORWARD_TO), "127.0.0.1");
  c.pipe(up).pipe(c);
  up.on("error", () => c.destroy());
  c.on("error", () => up.destroy());
});
server.listen(0, "127.0.0.1", () => process.stdout.write("Forwarding from 127.0.0.1:" + server.address().port + " -> 3000\\n"));
`;
const standIn = join(bin, "port-forward-stand-in");
writeFileSync(standIn, STAND_IN);
chmodSync(standIn, 0o755);

/** alive tells whether process `pid` still runs. */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** plugin runs `kubectl whohas ARGS` as a user would (kubectl finds the plugin on PATH), with `env` added. */
function plugin(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const path = `${bin}:${process.env.PATH ?? ""}`;
  return new Promise((resolve) => {
    execFile("kubectl", ["whohas", ...args], { env: { PATH: path, HOME: bin, ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : -1, stdout, stderr }),
    );
  });
}

function kubectl(kubeconfig: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile("kubectl", ["--kubeconfig", kubeconfig, "--request-timeout=20s", ...args], (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : -1, stdout, stderr }),
    );
  });
}

interface ApiIp {
  key: string;
  state: string;
  responders: { node: string | null; answering: boolean }[];
}

describe("kubectl whohas", () => {
  let stack: Stack;
  let vip: string;
  let at: string[];
  beforeAll(async () => {
    stack = await startStack({ nodes: 3, vips: 2, kube: true, requestIntervalMs: 500 });
    vip = stack.lab.vips[0] ?? "";
    at = ["--url", stack.url, "--token", stack.viewerToken];
    // Every node's kernel answers (strictARP false): wait until the hub says so, and has the incident open.
    await eventually(
      async () =>
        (await fetch(`${stack.url}/api/v1/ips`, { headers: { authorization: `Bearer ${stack.viewerToken}` } })).json() as Promise<ApiIp[]>,
      (ips) =>
        stack.lab.vips.every((v) => ips.some((ip) => ip.key === v && ip.state === "multi-responder")) &&
        ips.some((ip) => ip.key === vip && ip.responders.filter((r) => r.answering).length === 3),
      30_000,
    );
    // And both incidents are open.
    await eventually(
      async () =>
        (
          await fetch(`${stack.url}/api/v1/incidents?state=open`, { headers: { authorization: `Bearer ${stack.viewerToken}` } })
        ).json() as Promise<{ key: string }[]>,
      (list) => stack.lab.vips.every((v) => list.some((i) => i.key === v)),
      30_000,
    );
  });
  afterAll(async () => {
    await stack.stop();
    rmSync(bin, { recursive: true, force: true });
  });

  it("ips: a table of every IP, the one answered by three nodes flagged, and exit 1", async () => {
    const r = await plugin(["ips", ...at]);
    expect(r.code, r.stderr).toBe(1);
    const [header, ...lines] = r.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^IP +STATE +SERVICE +OWNER +ANSWERING +FINDINGS$/);
    const line = lines.find((l) => l.startsWith(`${vip} `)) ?? "";
    expect(line).toContain("multi-responder!");
    for (const node of stack.lab.nodes) expect(line).toContain(node.name);
    // The FINDINGS column, the last: the several answers, and the nodes that are not the owner.
    expect(line).toMatch(/ multi-responder(,[a-z-]+)*$/);
    // Columns line up under the header, as kubectl's do.
    expect(line.indexOf("multi-responder!")).toBe(header?.indexOf("STATE"));
  });

  it("ips -o json: the read API's objects, filtered by --state, with the exit status of what is shown", async () => {
    const all = await plugin(["ips", "-o", "json", ...at]);
    expect(all.code).toBe(1);
    const ips = JSON.parse(all.stdout) as ApiIp[];
    const api = (await (
      await fetch(`${stack.url}/api/v1/ips`, { headers: { authorization: `Bearer ${stack.viewerToken}` } })
    ).json()) as ApiIp[];
    expect(ips.map((ip) => ip.key).sort()).toEqual(api.map((ip) => ip.key).sort());
    const several = await plugin(["ips", "--state", "several-responders", "-o", "json", ...at]);
    expect(several.code).toBe(1);
    expect((JSON.parse(several.stdout) as ApiIp[]).map((ip) => ip.state)).toContain("multi-responder");
    expect((JSON.parse(several.stdout) as ApiIp[]).every((ip) => ip.state === "multi-responder")).toBe(true);
    // No IP is idle here: nothing shown, nothing wrong.
    const idle = await plugin(["ips", "--state", "idle", ...at]);
    expect([idle.code, idle.stdout]).toEqual([0, "No IPs. The hub lists an IP once a Service has it or an agent sees ARP / NDP for it.\n"]);
  });

  it("ip IP: responders, owner, findings and handovers of one IP; an unknown IP is the hub's 404, exit 2", async () => {
    const r = await plugin(["ip", vip, ...at]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`^IP: +${vip.replaceAll(".", "\\.")}\\nState: +multi-responder\\n`));
    expect(r.stdout).toMatch(/\nResponders:\n +MAC +NODE +ANSWERING/);
    for (const node of stack.lab.nodes) expect(r.stdout).toMatch(new RegExp(`\\n  \\S+ +${node.name} +yes`));
    expect(r.stdout).toMatch(/\nFindings:\n {2}multi-responder \(since \d{4}-\d\d-\d\dT/);
    expect(r.stdout).toContain("\nHandovers:\n");
    const json = await plugin(["ip", vip, "-o", "json", ...at]);
    expect((JSON.parse(json.stdout) as ApiIp).key).toBe(vip);
    const unknown = await plugin(["ip", "192.0.2.250", ...at]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("404: whohas has seen no traffic and no LoadBalancer Service for 192.0.2.250");
    const bad = await plugin(["ip", "not-an-ip", ...at]);
    expect([bad.code, bad.stdout]).toEqual([2, ""]);
    expect(bad.stderr).toContain('"not-an-ip" is not an IP address');
  });

  it("incidents: the open multi-responder incident, exit 1; resolved ones only, exit 0", async () => {
    const r = await plugin(["incidents", ...at]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^ID +STATE +TYPE +SUBJECT +AGE +LAST +COUNT +DETAIL\n/);
    // TYPE lists the findings open in each incident: several responders, and the nodes that are not the owner.
    expect(r.stdout).toMatch(new RegExp(`\\n\\d+ +open +multi-responder(,[a-z-]+)* +${vip.replaceAll(".", "\\.")} `));
    // Both VIPs have an incident: --ip must leave the other's out.
    const other = stack.lab.vips[1] ?? "";
    const all = JSON.parse((await plugin(["incidents", "-o", "json", ...at])).stdout) as { key: string; type: string }[];
    expect(new Set(all.map((i) => i.key))).toEqual(new Set([vip, other]));
    const json = JSON.parse((await plugin(["incidents", "--ip", vip, "-o", "json", ...at])).stdout) as { key: string; type: string }[];
    expect(json.length).toBeGreaterThan(0);
    expect(json.every((i) => i.key === vip)).toBe(true);
    const resolved = await plugin(["incidents", "--state", "resolved", "-o", "json", ...at]);
    expect(resolved.code).toBe(0);
    expect(JSON.parse(resolved.stdout)).toEqual([]);
  });

  it("says what is wrong when it cannot ask: a refused token, no hub, no token, a bad option", async () => {
    const refused = await plugin(["ips", "--url", stack.url, "--token", "not-the-token"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^kubectl whohas: the hub refused the token \(401\): /);
    const env = await plugin(["ips", "-o", "json"], { WHOHAS_URL: stack.url, WHOHAS_TOKEN: stack.viewerToken });
    expect(env.code).toBe(1);
    const closed = await freePort();
    const gone = await plugin(["ips", "--url", `http://127.0.0.1:${closed}`, "--token", "x"]);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toContain(`the hub at http://127.0.0.1:${closed} did not answer: ECONNREFUSED`);
    const noToken = await plugin(["ips", "--url", stack.url]);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain("no read-API token");
    expect(noToken.stderr).toContain("Settings > Read-API tokens");
    const usage = await plugin(["ips", "--limit", "3"]);
    expect([usage.code, usage.stderr]).toEqual([
      2,
      "kubectl whohas: --limit applies to incidents only\nRun 'kubectl whohas --help' for the commands and options.\n",
    ]);
  });

  it("through the kubeconfig: the token from the team's Secret, then kubectl port-forward to the hub's Service", async () => {
    const kubeconfig = join(stack.lab.names.stateDir, "kubeconfig");
    const ns = "whohas";
    // Objects go in as manifests (JSON on the wire): the test API server does not read the protobuf that
    // `kubectl create namespace` and `kubectl create secret` send.
    const manifest = (name: string, object: object) => {
      const path = join(stack.lab.names.stateDir, `${name}.json`);
      writeFileSync(path, JSON.stringify(object));
      return kubectl(kubeconfig, ["create", "--validate=false", "-f", path]);
    };
    const namespace = await manifest("namespace", { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    expect(namespace.code, namespace.stderr).toBe(0);
    // No Secret yet: the plugin says how to make one, having asked the API server through kubectl.
    const none = await plugin(["ips", "--kubeconfig", kubeconfig]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(`no Secret whohas-read-token in ${ns}`);
    expect(none.stderr).toContain(`kubectl -n ${ns} create secret generic whohas-read-token --from-file=token=/dev/stdin`);
    const data = { token: Buffer.from(stack.viewerToken).toString("base64") };
    const made = await manifest("secret", {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "whohas-read-token", namespace: ns },
      data,
    });
    expect(made.code, made.stderr).toBe(0);
    // With the Secret the token is found and the next step runs: kubectl port-forward to service/whohas-hub. The test
    // API server has no such Service (it runs no hub Pod to forward to), and the plugin passes kubectl's own words on.
    const forward = await plugin(["ips", "--kubeconfig", kubeconfig]);
    expect(forward.code).toBe(2);
    expect(forward.stderr).toContain(`kubectl port-forward to service/whohas-hub in ${ns}:`);
    expect(forward.stderr).toContain('services "whohas-hub" not found');
    // With the port-forward stood in for (to the lab hub), the rest is real: the token read from the Secret is the one
    // the hub accepts, the table comes back, kubectl is given the cluster's flags, and the forward ends with the command.
    const log = join(bin, "forwards.log");
    const through = await plugin(["ips", "--kubeconfig", kubeconfig, "--context", "test", "--service", "hub", "--port", "3001"], {
      KUBECTL: standIn,
      FORWARD_TO: String(stack.port),
      FORWARD_LOG: log,
    });
    expect(through.code, through.stderr).toBe(1);
    expect(through.stdout).toMatch(new RegExp(`\\n${vip.replaceAll(".", "\\.")} +multi-responder! `));
    const forwards = readFileSync(log, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { pid: number; args: string[] });
    expect(forwards.map((f) => f.args)).toEqual([
      ["--kubeconfig", kubeconfig, "--context", "test", "-n", ns, "port-forward", "service/hub", ":3001", "--address", "127.0.0.1"],
    ]);
    await eventually(
      async () => forwards.filter((f) => alive(f.pid)).length,
      (n) => n === 0,
      5_000,
    );
  });

  it("installs as the package's bin (in dist/, through a symlink) as well as a copy, and leaves no port-forward behind a signal", async () => {
    const help = await new Promise<Run>((resolve) =>
      execFile(PLUGIN, ["--help"], (err, stdout, stderr) => resolve({ code: err === null ? 0 : Number(err.code), stdout, stderr })),
    );
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: kubectl whohas <command>/);
    const linked = mkdtempSync(join(tmpdir(), "whohas-plugin-link-"));
    symlinkSync(PLUGIN, join(linked, "kubectl-whohas"));
    const viaLink = await new Promise<Run>((resolve) =>
      execFile(
        "kubectl",
        ["whohas", "ips", "--url", stack.url, "--token-file", join(stack.lab.names.stateDir, "viewer-token")],
        {
          env: { PATH: `${linked}:${process.env.PATH ?? ""}`, HOME: linked },
        },
        (err, stdout, stderr) => resolve({ code: err === null ? 0 : Number(err.code), stdout, stderr }),
      ),
    );
    rmSync(linked, { recursive: true, force: true });
    expect(viaLink.code, viaLink.stderr).toBe(1);
    // A hub that takes the connection and never answers: the command waits, and is sent SIGTERM (a CI job cancelled).
    const silent = createServer(() => undefined);
    silent.listen(0, "127.0.0.1");
    await once(silent, "listening");
    const log = join(bin, "signal.log");
    const child = spawn(process.execPath, [join(bin, "kubectl-whohas"), "ips", "--token", "t"], {
      env: { PATH: process.env.PATH, KUBECTL: standIn, FORWARD_TO: String((silent.address() as { port: number }).port), FORWARD_LOG: log },
      stdio: "ignore",
    });
    await eventually(
      async () => existsSync(log),
      (ok) => ok,
      10_000,
    );
    await new Promise((r) => setTimeout(r, 500));
    const [code] = (await Promise.all([once(child, "exit"), Promise.resolve(child.kill("SIGTERM"))]))[0] as [number | null];
    silent.close();
    expect(code).toBe(143);
    const { pid } = JSON.parse(readFileSync(log, "utf8").trim()) as { pid: number };
    await eventually(
      async () => alive(pid),
      (a) => !a,
      5_000,
    );
  });
});
