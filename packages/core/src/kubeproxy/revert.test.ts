import { describe, expect, it } from "vitest";
import {
  REVERT_WATCH_START,
  lastWriter,
  persistenceStep,
  recogniseInstaller,
  resumeRevertWatch,
  revertFindings,
  watchStrictArp,
  type KubeProxyConfigMap,
  type ManagedFieldsEntry,
  type RevertWatch,
} from "./revert.js";

const conf = (strictARP: boolean | null, mode = "ipvs") =>
  `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: ${mode}
${strictARP === null ? "" : `ipvs:\n  strictARP: ${strictARP}\n`}`;

/** entry is a managedFields entry as the API server writes one; `conf` says whether it owns data.config.conf. */
const entry = (manager: string, time: string, ownsConf = true, operation = "Update"): ManagedFieldsEntry => ({
  manager,
  operation,
  apiVersion: "v1",
  time,
  fieldsType: "FieldsV1",
  fieldsV1: ownsConf ? { "f:data": { ".": {}, "f:config.conf": {} } } : { "f:metadata": { "f:labels": { "f:app": {} } } },
});

const cm = (
  strictARP: boolean | null,
  fields: readonly ManagedFieldsEntry[] = [],
  more: Partial<KubeProxyConfigMap> = {},
): KubeProxyConfigMap => ({
  configConf: conf(strictARP),
  labels: {},
  annotations: {},
  managedFields: fields,
  ...more,
});

const CREATED = entry("kubeadm", "2026-01-01T00:00:00Z");
const FIXED = entry("whohas", "2026-02-01T00:00:00Z");

/** after runs the watch over the looks in order, from a hub that has just started. */
const after = (...looks: (KubeProxyConfigMap | null)[]): RevertWatch => looks.reduce((w, c) => watchStrictArp(w, c), REVERT_WATCH_START);

describe("lastWriter", () => {
  it("is the entry owning data.config.conf with the latest time, not one that owns other fields later", () => {
    const w = lastWriter([CREATED, entry("kubermatic-operator", "2026-03-01T10:00:00Z"), entry("labeller", "2026-04-01T00:00:00Z", false)]);
    expect(w?.manager).toBe("kubermatic-operator");
  });

  it("leaves out a subresource's entries and answers null without any owner", () => {
    expect(lastWriter([{ ...entry("x", "2026-05-01T00:00:00Z"), subresource: "status" }, CREATED])?.manager).toBe("kubeadm");
    expect(lastWriter([])).toBeNull();
  });
});

describe("recogniseInstaller", () => {
  it.each([
    {
      case: "KKP by its operator's field manager",
      writer: "kubermatic-operator",
      more: {},
      installer: "kkp",
      by: "field manager kubermatic-operator",
    },
    { case: "KKP by a kubermatic manager", writer: "kubermatic", more: {}, installer: "kkp", by: "field manager kubermatic" },
    { case: "KubeOne by its field manager", writer: "kubeone", more: {}, installer: "kubeone", by: "field manager kubeone" },
    { case: "kubespray by its field manager", writer: "kubespray", more: {}, installer: "kubespray", by: "field manager kubespray" },
    { case: "kubeadm by its field manager", writer: "kubeadm", more: {}, installer: "kubeadm", by: "field manager kubeadm" },
    {
      case: "KubeOne by another manager of the ConfigMap, before kubeadm",
      writer: "kubectl-patch",
      more: { managedFields: [CREATED, entry("kubeone", "2026-01-02T00:00:00Z", false)] },
      installer: "kubeone",
      by: "the ConfigMap's other field manager kubeone",
    },
    {
      case: "kubeadm as the ConfigMap's creator when a person wrote the change",
      writer: "kubectl-edit",
      more: { managedFields: [CREATED] },
      installer: "kubeadm",
      by: "the ConfigMap's other field manager kubeadm",
    },
    {
      case: "KKP by an annotation on the ConfigMap",
      writer: "kubectl-patch",
      more: { annotations: { "kubermatic.k8c.io/cluster": "abc" } },
      installer: "kkp",
      by: "label or annotation on ConfigMap kube-system/kube-proxy kubermatic.k8c.io/cluster",
    },
    {
      case: "kubespray by a Node label",
      writer: null,
      more: {},
      nodes: [{ "kubespray.io/managed": "true" }],
      installer: "kubespray",
      by: "Node label kubespray.io/managed",
    },
    { case: "nothing: unknown", writer: "kubectl-patch", more: {}, installer: "unknown", by: null },
    { case: "no managedFields at all: unknown", writer: null, more: {}, installer: "unknown", by: null },
  ])("recognises $case", ({ writer, more, installer, by, ...rest }) => {
    const nodes = "nodes" in rest ? rest.nodes : [];
    expect(recogniseInstaller(writer, cm(false, [], more), nodes)).toEqual({ installer, recognisedBy: by });
  });

  it("does not take kubeadm from a Node label (every installer here runs kubeadm)", () => {
    expect(recogniseInstaller(null, cm(false), [{ "node-role.kubernetes.io/control-plane": "", kubeadm: "x" }]).installer).toBe("unknown");
  });
});

describe("persistenceStep", () => {
  it.each([
    { installer: "kkp", says: "spec.clusterNetwork.ipvs.strictArp" },
    { installer: "kubeone", says: "clusterNetwork:\n  kubeProxy:\n    ipvs:\n      strictARP: true" },
    { installer: "kubespray", says: "kube_proxy_strict_arp: true" },
    { installer: "kubeadm", says: "kind: KubeProxyConfiguration" },
  ] as const)("names where $installer keeps strictARP", ({ installer, says }) => {
    const s = persistenceStep(installer);
    expect(`${s.title}\n${s.commands.join("\n")}`).toContain(says);
  });

  it("lists every installer's place when the installer is unknown", () => {
    const s = persistenceStep("unknown");
    const all = s.commands.join("\n");
    for (const place of ["strictArp", "kubeProxy", "kube_proxy_strict_arp", "KubeProxyConfiguration"]) expect(all).toContain(place);
    expect(s.why).toContain("could not tell");
  });
});

describe("watchStrictArp", () => {
  const reverted = cm(false, [CREATED, entry("kubermatic-operator", "2026-03-01T10:00:00Z")]);

  it("opens a revert when strictARP goes from true to false, naming the writer, the time and KKP's step", () => {
    const w = after(cm(true, [CREATED, FIXED]), reverted);
    expect(w.reverted).toMatchObject({
      manager: "kubermatic-operator",
      operation: "Update",
      at: Date.parse("2026-03-01T10:00:00Z"),
      installer: "kkp",
      recognisedBy: "field manager kubermatic-operator",
      step: { installer: "kkp" },
    });
    expect(w.reverted?.detail).toBe(
      "strictARP was turned off in ConfigMap kube-system/kube-proxy by field manager kubermatic-operator at 2026-03-01T10:00:00.000Z; " +
        "Kubermatic KKP (recognised by field manager kubermatic-operator): Set spec.clusterNetwork.ipvs.strictArp: true in the KKP Cluster object",
    );
    expect(revertFindings(w)).toEqual([
      { type: "strictarp-reverted", macs: [], detail: w.reverted?.detail, at: Date.parse("2026-03-01T10:00:00Z") },
    ]);
  });

  it("leaves whohas's own rollback alone (audited where it was asked for), and catches the next real revert", () => {
    const rolledBack = cm(false, [CREATED, entry("whohas", "2026-03-02T00:00:00Z")]);
    const w = after(cm(true, [CREATED, FIXED]), rolledBack);
    expect(w).toEqual({ strictArp: false, reverted: null });
    expect(revertFindings(w)).toEqual([]);
    expect(watchStrictArp(watchStrictArp(w, cm(true, [CREATED, FIXED])), reverted).reverted?.manager).toBe("kubermatic-operator");
  });

  it("says a kubectl writer is a person or a script, and names the installer behind the ConfigMap as such", () => {
    const w = after(cm(true, [CREATED, FIXED]), cm(false, [CREATED, entry("kubectl-edit", "2026-03-01T10:00:00Z")]));
    expect(w.reverted?.detail).toContain("by field manager kubectl-edit (a person or a script using kubectl) at 2026-03-01T10:00:00.000Z");
    expect(w.reverted?.detail).toContain("kubeadm (recognised by the ConfigMap's other field manager kubeadm)");
  });

  it("says so honestly when the installer is unknown and nobody is named", () => {
    const w = after(cm(true), cm(false));
    expect(w.reverted).toMatchObject({ manager: null, at: null, installer: "unknown", step: { installer: "unknown" } });
    expect(w.reverted?.detail).toContain(
      "by an unknown writer (the ConfigMap carries no managedFields); whohas does not recognise the installer",
    );
    expect(revertFindings(w)[0]).not.toHaveProperty("at");
  });

  it.each([
    { case: "false -> false", looks: [cm(false), cm(false)] },
    { case: "true -> true", looks: [cm(true), cm(true)] },
    { case: "a first look at false (a hub that starts after the revert)", looks: [reverted] },
    { case: "strictARP absent (false) from the start", looks: [cm(null), cm(false)] },
    { case: "true, then kube-proxy leaves IPVS mode", looks: [cm(true), { ...cm(false), configConf: conf(false, "iptables") }] },
    { case: "true in iptables mode, then IPVS with false", looks: [{ ...cm(true), configConf: conf(true, "iptables") }, cm(false)] },
  ])("opens nothing on $case", ({ looks }) => {
    expect(after(...looks).reverted).toBeNull();
  });

  it("holds through relists of the same ConfigMap and through an absent or unreadable one, and resolves on true", () => {
    const open = after(cm(true), reverted, reverted, null, { ...reverted, configConf: "{not yaml" }, reverted);
    expect(open.reverted?.manager).toBe("kubermatic-operator");
    expect(watchStrictArp(open, reverted)).toBe(open);
    const fixed = watchStrictArp(open, cm(true, [entry("whohas", "2026-03-02T00:00:00Z")]));
    expect(fixed).toEqual({ strictArp: true, reverted: null });
    expect(revertFindings(fixed)).toEqual([]);
  });

  it("catches a ConfigMap deleted and recreated with false as a revert by its creator", () => {
    expect(after(cm(true), null, cm(false, [entry("kubeone", "2026-03-03T00:00:00Z")])).reverted?.installer).toBe("kubeone");
  });

  it("opens again on a second revert after a fix", () => {
    const w = after(cm(true), reverted, cm(true), cm(false, [entry("kubeone", "2026-04-01T00:00:00Z")]));
    expect(w.reverted?.manager).toBe("kubeone");
  });

  it("keeps the revert a restarted hub read back from its store until strictARP is true again", () => {
    const held = after(cm(true), reverted).reverted;
    const resumed = resumeRevertWatch(held);
    expect(watchStrictArp(resumed, reverted).reverted).toBe(held);
    expect(watchStrictArp(resumed, cm(true)).reverted).toBeNull();
  });
});
