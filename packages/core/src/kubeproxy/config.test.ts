import { describe, expect, it } from "vitest";
import { parseKubeProxyConfig, patchStrictArp } from "./config.js";
import { KUBEADM_KUBE_PROXY_CONFIG as KUBEADM } from "./kubeadm.js";

/** changedLines lists [before, after] for each line that differs (same line count) or the added lines. */
function diff(a: string, b: string): { removed: string[]; added: string[] } {
  const al = a.split("\n");
  const bl = b.split("\n");
  const removed = al.filter((l, i) => bl.filter((x) => x === l).length < al.slice(0, i + 1).filter((x) => x === l).length);
  const added = bl.filter((l, i) => al.filter((x) => x === l).length < bl.slice(0, i + 1).filter((x) => x === l).length);
  return { removed, added };
}

describe("parseKubeProxyConfig", () => {
  it("reads kubeadm's config", () => {
    expect(parseKubeProxyConfig(KUBEADM)).toEqual({
      ok: true,
      value: { modeRaw: "ipvs", mode: "ipvs", strictARP: false, strictARPPresent: true },
    });
  });
  it.each([
    { case: 'mode ""', text: KUBEADM.replace("mode: ipvs", 'mode: ""'), mode: "iptables" },
    { case: "no mode", text: KUBEADM.replace("mode: ipvs\n", ""), mode: "iptables" },
    { case: "nftables", text: KUBEADM.replace("mode: ipvs", "mode: nftables"), mode: "nftables" },
  ])("reads $case as $mode", ({ text, mode }) => {
    expect(parseKubeProxyConfig(text)).toMatchObject({ ok: true, value: { mode } });
  });
  it("takes an absent strictARP as false", () => {
    expect(parseKubeProxyConfig(KUBEADM.replace("  strictARP: false\n", ""))).toMatchObject({
      ok: true,
      value: { strictARP: false, strictARPPresent: false },
    });
  });
  it.each([
    { case: "broken YAML", text: "kind: [", reason: "not-yaml", msg: /not valid YAML/ },
    {
      case: "another kind",
      text: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n",
      reason: "not-kube-proxy-config",
      msg: /not a KubeProxyConfiguration \(kind "KubeletConfiguration"/,
    },
    { case: "a list", text: "- a\n- b\n", reason: "not-kube-proxy-config", msg: /not a YAML mapping/ },
    {
      case: 'strictARP "yes"',
      text: KUBEADM.replace("strictARP: false", 'strictARP: "yes"'),
      reason: "unexpected-shape",
      msg: /ipvs.strictARP is "yes"/,
    },
  ])("refuses $case", ({ text, reason, msg }) => {
    const r = parseKubeProxyConfig(text);
    expect(r).toMatchObject({ ok: false, reason });
    if (!r.ok) expect(r.message).toMatch(msg);
  });
});

describe("patchStrictArp", () => {
  it("changes exactly one line of kubeadm's config", () => {
    const r = patchStrictArp(KUBEADM);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.changed).toBe(true);
    expect(r.text).toBe(KUBEADM.replace("  strictARP: false\n", "  strictARP: true\n"));
  });

  it("keeps comments, quoting and odd spacing byte for byte", () => {
    const text = `# managed by hand, see ticket OPS-1234
apiVersion: 'kubeproxy.config.k8s.io/v1alpha1'
kind: "KubeProxyConfiguration"
mode:   "ipvs"    # IPVS for the big services
ipvs:
    scheduler: 'rr'
    strictARP:   false   # kubeadm default
clusterCIDR: "10.244.0.0/16"
`;
    const r = patchStrictArp(text);
    expect(r.ok && r.text).toBe(text.replace("strictARP:   false   #", "strictARP:   true   #"));
  });

  it("inserts strictARP in alphabetical place with the block's indentation when it is absent", () => {
    const r = patchStrictArp(KUBEADM.replace("  strictARP: false\n", ""));
    expect(r.ok && r.text).toBe(KUBEADM.replace("  strictARP: false\n", "  strictARP: true\n"));
  });

  it("appends strictARP after the last key of ipvs when it sorts last", () => {
    const text =
      "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\nipvs:\n    scheduler: rr\nclusterCIDR: 10.0.0.0/8\n";
    const r = patchStrictArp(text);
    expect(r.ok && r.text).toBe(
      "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\nipvs:\n    scheduler: rr\n    strictARP: true\nclusterCIDR: 10.0.0.0/8\n",
    );
  });

  it("adds an ipvs block when there is none, and handles flow style and an empty ipvs", () => {
    const base = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\n";
    expect(patchStrictArp(base)).toMatchObject({ ok: true, text: `${base}ipvs:\n  strictARP: true\n` });
    expect(patchStrictArp(`${base}ipvs: {scheduler: rr}\n`)).toMatchObject({
      ok: true,
      text: `${base}ipvs: {strictARP: true, scheduler: rr}\n`,
    });
    expect(patchStrictArp(`${base}ipvs: {}\n`)).toMatchObject({ ok: true, text: `${base}ipvs: {strictARP: true}\n` });
    expect(patchStrictArp(`${base}ipvs:\nfoo: bar\n`)).toMatchObject({ ok: true, text: `${base}ipvs: {strictARP: true}\nfoo: bar\n` });
  });

  it("returns the text unchanged when strictARP is already true", () => {
    const on = KUBEADM.replace("strictARP: false", "strictARP: true");
    expect(patchStrictArp(on)).toMatchObject({ ok: true, changed: false, text: on });
  });

  it("refuses when the mode is not ipvs, saying why there is nothing to fix", () => {
    const r = patchStrictArp(KUBEADM.replace("mode: ipvs", 'mode: ""'));
    expect(r).toMatchObject({ ok: false, reason: "mode-not-ipvs" });
    if (!r.ok) expect(r.message).toMatch(/mode is "" \(iptables\): only IPVS mode binds LoadBalancer IPs/);
  });

  it("the patch is one line: nothing else moves", () => {
    const r = patchStrictArp(KUBEADM);
    if (!r.ok) throw new Error(r.message);
    expect(diff(KUBEADM, r.text)).toEqual({ removed: ["  strictARP: false"], added: ["  strictARP: true"] });
  });
});
