import { describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeProxyConfigMap } from "@whohas/core";
import { Hub } from "../hub/hub.js";
import { storyOf } from "../hub/story.js";
import { openSqlite } from "../store/sqlite.js";
import { Store } from "../store/store.js";
import { cluster } from "./helpers.js";

const conf = (strictARP: boolean) =>
  `apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\nipvs:\n  strictARP: ${strictARP}\n`;

/** configMap is kube-proxy's ConfigMap as the informer gives it, config.conf last written by `manager` at `time`. */
const configMap = (strictARP: boolean, manager: string, time: string): KubeProxyConfigMap => ({
  configConf: conf(strictARP),
  labels: { app: "kube-proxy" },
  annotations: {},
  managedFields: [
    {
      manager: "kubeadm",
      operation: "Update",
      apiVersion: "v1",
      time: "2026-01-01T00:00:00Z",
      fieldsType: "FieldsV1",
      fieldsV1: { "f:data": {} },
    },
    { manager, operation: "Update", apiVersion: "v1", time, fieldsType: "FieldsV1", fieldsV1: { "f:data": { "f:config.conf": {} } } },
  ],
});

/** watched is a hub whose cluster's kube-proxy ConfigMap is whatever `cm.now` holds (a fresh object per change). */
async function watched(store?: Store) {
  const now = 10_000;
  const hub = await Hub.open({ clock: () => now, ...(store === undefined ? {} : { store }) });
  const cm: { now: KubeProxyConfigMap | null } = { now: configMap(true, "whohas", "2026-02-01T00:00:00Z") };
  hub.setCluster({ ...cluster(["node-a"]), kubeProxyConfigMap: () => cm.now });
  return { hub, cm };
}

const reverted = async (hub: Hub) => (await hub.incidents({ open: true })).filter((i) => i.type === "strictarp-reverted");

describe("strictARP reverted", () => {
  it("opens on true -> false naming the field manager and KKP's step, and resolves at once when strictARP is true again", async () => {
    const { hub, cm } = await watched();
    hub.tick();
    expect(await reverted(hub)).toEqual([]);
    cm.now = configMap(false, "kubermatic-operator", "2026-03-01T10:00:00Z");
    hub.tick();
    const [i] = await reverted(hub);
    expect(i).toMatchObject({ ip: "cluster/kube-proxy", type: "strictarp-reverted" });
    expect(i?.detail).toContain("by field manager kubermatic-operator at 2026-03-01T10:00:00.000Z");
    const story = await storyOf(hub, i?.id ?? 0);
    expect(story?.revert).toMatchObject({ manager: "kubermatic-operator", installer: "kkp", step: { name: "Kubermatic KKP" } });
    // Relists hand the same content again: nothing new.
    cm.now = { ...cm.now };
    hub.tick();
    expect((await hub.incidents({})).filter((x) => x.type === "strictarp-reverted")).toHaveLength(1);
    cm.now = configMap(true, "whohas", "2026-03-01T11:00:00Z");
    hub.tick();
    expect(await reverted(hub)).toEqual([]);
  });

  it("raises nothing for a hub that starts and finds strictARP already false", async () => {
    const { hub, cm } = await watched();
    cm.now = configMap(false, "kubeone", "2026-03-01T10:00:00Z");
    hub.tick();
    hub.tick();
    expect(await reverted(hub)).toEqual([]);
  });

  it("catches a revert made while the hub was down: it remembers the true it saw before", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "whohas-revert-")), "hub.db");
    const first = await watched(await Store.open(openSqlite(path), 10_000));
    first.hub.tick();
    expect(await reverted(first.hub)).toEqual([]);
    await first.hub.store.close();

    // An installer's run restarts the hub's node and turns strictARP off meanwhile.
    const second = await watched(await Store.open(openSqlite(path), 10_000));
    second.cm.now = configMap(false, "kubeone", "2026-03-01T10:00:00Z");
    second.hub.tick();
    expect((await reverted(second.hub)).map((i) => i.detail)).toEqual([expect.stringContaining("by field manager kubeone")]);
  });

  it("keeps a revert open across a hub restart until strictARP is true again", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "whohas-revert-")), "hub.db");
    const first = await watched(await Store.open(openSqlite(path), 10_000));
    first.hub.tick();
    first.cm.now = configMap(false, "kubermatic-operator", "2026-03-01T10:00:00Z");
    first.hub.tick();
    expect(await reverted(first.hub)).toHaveLength(1);
    await first.hub.store.close();

    const second = await watched(await Store.open(openSqlite(path), 10_000));
    second.cm.now = configMap(false, "kubermatic-operator", "2026-03-01T10:00:00Z");
    second.hub.tick();
    second.hub.tick();
    expect((await reverted(second.hub)).map((i) => i.detail)).toEqual([expect.stringContaining("kubermatic-operator")]);
    second.cm.now = configMap(true, "whohas", "2026-03-02T00:00:00Z");
    second.hub.tick();
    expect(await reverted(second.hub)).toEqual([]);
  });
});
