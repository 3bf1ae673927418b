import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { patchStrictArp } from "@whohas/core";
import { startStack, type Stack } from "../stack.js";
import { api as readApi, eventually } from "./hub-client.js";
import { kubeProxyConfig, kubectl as kubectlIn, setKubeProxyConfig } from "./kube-client.js";

const exec = promisify(execFile);

interface IpRow {
  ip: string;
  state: string;
  expectedOwner: { node: string } | null;
  responders: { node: string | null; answering: boolean }[];
}

// The lab as a whole cluster: MetalLB-like speakers answering for the IPs the election gives their node, and
// kube-proxy stand-ins that apply strictARP's sysctls when their DaemonSet restarts. The operator's fix by hand, with
// kubectl against the test API server, leaves exactly one responder per IP: the elected one.
describe("the complete lab cluster: speakers and kube-proxy", () => {
  let stack: Stack;
  const kubectl = (...args: string[]) => kubectlIn(stack, ...args);
  const ips = () => readApi<IpRow[]>(stack.url, stack.viewerToken, "ips");

  beforeAll(async () => {
    stack = await startStack({ nodes: 3, vips: 2, kube: true, cluster: true, requestIntervalMs: 500 });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("answers from every node while strictARP is false; after the ConfigMap patch and a rollout restart, only from the elected one", async () => {
    // Before: each node's kernel answers for every VIP on kube-ipvs0 (and the owner's speaker too, with the same MAC).
    await eventually(ips, (l) => l.length === 2 && l.every((i) => i.responders.filter((r) => r.answering).length === 3), 30_000);
    for (const vip of stack.lab.vips) expect((await ips()).find((i) => i.ip === vip)?.expectedOwner?.node).toBe(stack.owners.get(vip));

    // The fix by hand: patch config.conf, restart kube-proxy's DaemonSet, wait for the rollout.
    const patched = patchStrictArp(await kubeProxyConfig(stack));
    if (!patched.ok) throw new Error(patched.message);
    await setKubeProxyConfig(stack, patched.text);
    await kubectl("-n", "kube-system", "rollout", "restart", "daemonset/kube-proxy");
    const status = await kubectl("-n", "kube-system", "rollout", "status", "daemonset/kube-proxy", "--timeout", "60s");
    expect(status.stdout).toMatch(/successfully rolled out/);
    // Every node's kube-proxy started with the new generation and applied the sysctls.
    expect(new Set(stack.kubeProxies?.started.values()).size).toBe(1);

    // After: the kernels keep quiet (arp_ignore=1), and each VIP is answered by its elected node's speaker alone.
    const after = await eventually(ips, (l) => l.every((i) => i.responders.filter((r) => r.answering).length === 1), 45_000);
    for (const i of after) expect(i.responders.filter((r) => r.answering).map((r) => r.node)).toEqual([stack.owners.get(i.ip)]);
    // Seen from the client: one reply per request.
    const vip = stack.lab.vips[0] ?? "";
    const probe = await exec("ip", [
      "netns",
      "exec",
      stack.lab.client.ns,
      process.execPath,
      `${process.cwd()}/../../apps/agent/dist/main.js`,
      "probe",
      vip,
      "--duration",
      "3s",
      "--interval",
      "500ms",
    ]);
    // exec rejects on a non-zero exit: the probe exits 1 when a request got several answers.
    const summary = /^(\d+) requests, (\d+) unanswered, (\d+) answered by more than one MAC$/m.exec(probe.stdout);
    expect(summary, probe.stdout).not.toBeNull();
    expect(Number(summary?.[1])).toBeGreaterThanOrEqual(4);
    expect([summary?.[2], summary?.[3]]).toEqual(["0", "0"]);
  });
});
