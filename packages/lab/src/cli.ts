#!/usr/bin/env node
// whohas-lab: the network lab. `demo` runs hub + agents + client until Ctrl-C; `kube` runs the test Kubernetes API
// server alone; `gc` removes leftovers of dead runs.
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { startTestApiServer } from "./kube/server.js";
import { collectGarbage, requireRoot } from "./lab.js";
import { DEMO_VLAN_IPS, startDemo, startSecondCluster } from "./demo.js";
import { freePort } from "./hub-process.js";
import { startPostgres } from "./postgres.js";

const USAGE = `Usage: whohas-lab <command> [options]

Commands:
  demo [--nodes N] [--vips N] [--port P] [--replicas N] [--clusters N]
        build a dual-stack lab (N node namespaces answering ARP for every VIP, as kube-proxy IPVS with strictARP
        false leaves them, IPv6 VIPs answered by their MetalLB-like speaker, and one address on VLANs 30 and 40),
        start the hub on port P (default 3000), one agent per node, a client that asks for every address each
        second, and a test Kubernetes API server holding the matching Services, kube-proxy config and MetalLB
        objects. Runs until Ctrl-C, then tears everything down. --replicas 2: two hub replicas (ports P and
        another) on the PostgreSQL of WHOHAS_STORAGE_URL, or on a throwaway one started for the demo.
        --clusters 2: a fleet of two clusters on that PostgreSQL: lab-a as above (port P) and lab-b, one node
        with the same VIPs and a hub of its own (another port); each dashboard's Clusters page shows both.
  kube --kubeconfig-out FILE [--port P]
        start the test Kubernetes API server alone, empty (no lab, no root needed), write a kubeconfig for it
        (an admin token, TLS verified) to FILE, print its address, and serve until Ctrl-C. Drive it with
        kubectl --kubeconfig FILE (MetalLB, Cilium and kube-vip objects included) and point a hub at it.
  gc    remove namespaces and state of labs whose process is gone.
`;

async function kube(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { "kubeconfig-out": { type: "string" }, port: { type: "string" } } });
  const out = values["kubeconfig-out"];
  if (out === undefined) throw new Error("kube needs --kubeconfig-out FILE (where to write the kubeconfig)");
  const port = Number(values.port ?? 0);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be a port number (got ${values.port})`);
  const token = randomBytes(24).toString("hex");
  const api = await startTestApiServer({ tokens: new Map([[token, "admin"]]) }, port);
  writeFileSync(out, api.kubeconfig(token, "admin"), { mode: 0o600 });
  process.stdout.write(
    `test Kubernetes API server at ${api.url}\nkubeconfig: ${out} (kubectl --kubeconfig ${out} get ns)\nCtrl-C stops it.\n`,
  );
  const stop = () => {
    api.server.close();
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

async function demo(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      nodes: { type: "string" },
      vips: { type: "string" },
      port: { type: "string" },
      replicas: { type: "string" },
      clusters: { type: "string" },
    },
  });
  const replicas = Number(values.replicas ?? 1);
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5) throw new Error(`--replicas must be 1 to 5 (got ${values.replicas})`);
  const clusters = Number(values.clusters ?? 1);
  if (clusters !== 1 && clusters !== 2) throw new Error(`--clusters must be 1 or 2 (got ${values.clusters})`);
  if (clusters > 1 && replicas > 1) throw new Error("--clusters 2 and --replicas: one at a time");
  await requireRoot();
  await collectGarbage();
  // Replicas share one PostgreSQL: the one given, or a throwaway one for the demo's life.
  // eslint-disable-next-line no-restricted-properties
  const given = process.env.WHOHAS_STORAGE_URL;
  const shared = replicas > 1 || clusters > 1;
  const pg = shared && given === undefined ? await startPostgres() : null;
  const storageUrl = shared ? (given ?? pg?.url) : undefined;
  const port = Number(values.port ?? 3000) || (await freePort());
  const vips = Number(values.vips ?? 3);
  const stack = await startDemo({
    nodes: Number(values.nodes ?? 3),
    vips,
    port,
    replicas,
    storageUrl,
    ...(clusters > 1 ? { clusterName: "lab-a", externalUrl: `http://localhost:${port}` } : {}),
  }).catch(async (e: unknown) => {
    await pg?.stop();
    throw e;
  });
  const other =
    clusters > 1 && storageUrl !== undefined
      ? await startSecondCluster({ vips, port: await freePort([port]), storageUrl, name: "lab-b" }).catch(async (e: unknown) => {
          await stack.stop();
          await pg?.stop();
          throw e;
        })
      : null;
  const [first, second] = stack.lab.nodes;
  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`\n${why}: tearing the lab down...\n`);
    await Promise.all([stack.stop(), other?.stop()]);
    await pg?.stop();
    process.stdout.write("lab removed.\n");
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("Ctrl-C"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
  const { lab } = stack;
  // The hub takes WHOHAS_STORAGE_URL from the environment it inherits: the demo can run on PostgreSQL too.
  const storage =
    pg !== null
      ? `a throwaway PostgreSQL at ${pg.url}`
      : given === undefined
        ? `SQLite ${stack.dbPath}`
        : "PostgreSQL at WHOHAS_STORAGE_URL";
  const replicaLines =
    stack.replicas.length < 2
      ? []
      : [
          `  Replicas: ${stack.replicas.map((r) => `${r.name} at ${r.url}`).join(", ")}; ${stack.replicas[0]?.name} leads, the others pass`,
          `  requests to it. Open ${stack.replicas[1]?.url ?? "-"}, then kill the leader as a crash would and watch the standby`,
          `  take over (the agents move within seconds, the page goes on): pkill -KILL -f '${stack.hubConfig}'`,
        ];
  process.stdout.write(
    [
      "",
      `whohas demo is running. Dashboard: ${stack.url}`,
      `  Sign in as ${stack.users.operator.name} / ${stack.users.operator.password} (operator: probe, re-announce, acknowledge)`,
      `        or ${stack.users.admin.name} / ${stack.users.admin.password} (admin: also Settings and the audit log).`,
      "",
      `  lab ${lab.names.id}: ${lab.nodes.length} nodes (${lab.nodes.map((n) => n.name).join(", ")}) each holding ${lab.vips.join(", ")}`,
      "  on kube-ipvs0 with arp_ignore=0 (kube-proxy IPVS, strictARP false): every node answers for every VIP.",
      `  IPv6: ${lab.vips6.join(", ")} (Services too), answered by the elected node's speaker alone: Linux does not answer`,
      "  Neighbor Solicitations for addresses on kube-ipvs0.",
      `  VLANs: ${DEMO_VLAN_IPS[0]} is answered by ${first?.name ?? "-"}, ${DEMO_VLAN_IPS[1]} by ${first?.name ?? "-"} and ${second?.name ?? "-"}: two rows.`,
      `  client ${lab.client.ip} / ${lab.client.ip6 ?? "-"} asks for each address every second. Logs: ${stack.logDir}`,
      `  Kubernetes: a test API server at ${stack.api?.url ?? "-"} holds a LoadBalancer Service per VIP (demo/web-N),`,
      "  kube-proxy in IPVS mode with strictARP false, and MetalLB's L2Advertisement; the hub watches it.",
      "  Each node also runs a MetalLB-like speaker (answering for the IPs MetalLB's election gives it) and a kube-proxy",
      "  stand-in that applies strictARP's sysctls when its DaemonSet restarts: fix it and one node answers per IP.",
      `  Hub: whohas-hub --config ${stack.hubConfig} (${storage}).`,
      ...replicaLines,
      ...(other === null
        ? []
        : [
            `  Fleet: this lab is cluster lab-a; cluster lab-b is a second lab (${other.lab.nodes.length} node, the same VIPs) with its own`,
            `  hub at ${other.url} (sign in there as ${other.users.operator.name} / ${other.users.operator.password}). Both hubs write to`,
            `  ${storage}; the Clusters page of either shows both, the same IPs as two rows with their own verdicts.`,
          ]),
      `  Read API: curl -H 'Authorization: Bearer ${stack.viewerToken}' ${stack.url}/api/v1/ips`,
      "",
      "Press Ctrl-C to stop and remove the lab.",
      "",
    ].join("\n"),
  );
}

async function main(): Promise<void> {
  const [cmd, ...rest] = process.argv.slice(2);
  if (cmd === "demo") return demo(rest);
  if (cmd === "kube") return kube(rest);
  if (cmd === "gc") {
    await requireRoot();
    const removed = await collectGarbage();
    process.stdout.write(removed.length === 0 ? "no stale labs\n" : `removed labs: ${removed.join(", ")}\n`);
    return;
  }
  process.stdout.write(USAGE);
  if (cmd !== "--help" && cmd !== "-h") process.exitCode = 2;
}

main().catch((e: unknown) => {
  process.stderr.write(`whohas-lab: ${(e as Error).message}\n`);
  process.exit(1);
});
