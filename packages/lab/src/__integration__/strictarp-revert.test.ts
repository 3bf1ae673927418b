import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../stack.js";
import { api, eventually, query, type IncidentView } from "./hub-client.js";
import { kubeProxyConfig, kubectl } from "./kube-client.js";
import { notifying, webhookReceiver, type WebhookReceiver } from "./webhook-receiver.js";

interface Notice {
  type: string;
  status: string;
  summary: string;
  alerts: { type: string; status: string; detail: string }[];
}

/** patchStrictArp sets ipvs.strictARP in kube-proxy's config.conf with kubectl patch, as `manager`. */
async function patchStrictArp(stack: Stack, on: boolean, manager: string): Promise<void> {
  const text = (await kubeProxyConfig(stack)).replace(/strictARP: (true|false)/, `strictARP: ${on}`);
  const patch = JSON.stringify({ data: { "config.conf": text } });
  await kubectl(stack, "patch", "configmap", "kube-proxy", "-n", "kube-system", "--field-manager", manager, "--type", "merge", "-p", patch);
}

const reverted = (list: IncidentView[]) => list.find((i) => i.ip === "cluster/kube-proxy" && i.type === "strictarp-reverted");

// An installer undoing the fix: kube-proxy's ConfigMap patched back to strictARP false by another field manager, as
// KKP's operator does when it reconciles, is an incident naming that manager, and a webhook carries it.
describe("strictARP reverted: who undid the fix is named, and told", () => {
  let stack: Stack;
  let receiver: WebhookReceiver;
  const got: Notice[] = [];

  beforeAll(async () => {
    receiver = await webhookReceiver((body) => {
      got.push(JSON.parse(body) as Notice);
      return 200;
    });
    stack = await startStack({
      nodes: 2,
      vips: 1,
      kube: true,
      cluster: true,
      hubConfig: notifying(receiver, "ops"),
    });
  });
  afterAll(async () => {
    await stack.stop();
    receiver.close();
  });

  it("opens an incident naming kubermatic-operator within 5 s of kubectl patch --field-manager, and a webhook carries it", async () => {
    await patchStrictArp(stack, true, "whohas-test");
    await eventually(
      () => api<{ strictArp: { configured: { strictARP: boolean } | null } }>(stack.url, stack.viewerToken, "cluster"),
      (c) => c.strictArp.configured?.strictARP === true,
      10_000,
    );
    // The hub has seen true: the revert is the next write.
    await new Promise((r) => setTimeout(r, 1500));

    const t0 = Date.now();
    await patchStrictArp(stack, false, "kubermatic-operator");
    const managed = JSON.parse(
      (await kubectl(stack, "get", "configmap", "kube-proxy", "-n", "kube-system", "-o", "json", "--show-managed-fields")).stdout,
    ) as { metadata: { managedFields: { manager: string; fieldsV1: { "f:data"?: Record<string, unknown> } }[] } };
    expect(managed.metadata.managedFields.find((e) => e.manager === "kubermatic-operator")?.fieldsV1["f:data"]).toEqual({
      "f:config.conf": {},
    });

    const open = await eventually(
      () => api<IncidentView[]>(stack.url, stack.viewerToken, "incidents?state=open"),
      (l) => reverted(l) !== undefined,
      5_000,
    );
    const openedMs = Date.now() - t0;
    expect(openedMs).toBeLessThan(5_000);
    const incident = reverted(open);
    expect(incident?.detail).toContain("by field manager kubermatic-operator");
    expect(incident?.detail).toContain("Kubermatic KKP (recognised by field manager kubermatic-operator)");
    expect(incident?.detail).toContain("spec.clusterNetwork.ipvs.strictArp: true");

    // The incident page's facts: who, when, and KKP's persistence step.
    const story = await query<{ revert: { manager: string; at: number; installer: string; step: { commands: string[] } } }>(
      stack,
      `incidents.story?input=${encodeURIComponent(JSON.stringify({ id: incident?.id }))}`,
    );
    expect(story.revert).toMatchObject({ manager: "kubermatic-operator", installer: "kkp" });
    expect(Math.abs(story.revert.at - t0)).toBeLessThan(2_000);
    expect(story.revert.step.commands.join("\n")).toContain('"strictArp":true');

    const notice = await eventually(
      async () => got.find((n) => n.alerts.some((a) => a.type === "strictarp-reverted" && a.status === "firing")),
      (n) => n !== undefined,
      10_000,
    );
    expect(notice?.summary).toContain("ConfigMap kube-system/kube-proxy");
    expect(notice?.alerts.find((a) => a.type === "strictarp-reverted")?.detail).toContain("kubermatic-operator");
  });

  it("resolves when strictARP is true again", async () => {
    await patchStrictArp(stack, true, "whohas-test");
    const all = await eventually(
      () => api<IncidentView[]>(stack.url, stack.viewerToken, "incidents"),
      (l) => reverted(l)?.resolvedAt !== null && reverted(l) !== undefined,
      5_000,
    );
    expect(reverted(all)?.resolvedAt).toEqual(expect.any(Number));
  });
});
