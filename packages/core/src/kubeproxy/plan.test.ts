import { describe, expect, it } from "vitest";
import { fixVerdict, strictArpFix } from "./plan.js";

const IPVS = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\nipvs:\n  strictARP: false\n";

describe("strictArpFix", () => {
  it("patches an IPVS config, says who answers now, and warns of kubeadm and Antrea when present", () => {
    const plan = strictArpFix({ config: IPVS, kubeadm: true, antrea: true, nodes: [] });
    expect(plan).toMatchObject({ ok: true, mode: "ipvs", strictARP: false, changed: true, disabledReason: null });
    if (!plan.ok) throw new Error(plan.message);
    expect(plan.patched).toContain("strictARP: true");
    expect(plan.warnings.map((w) => w.split(":")[0])).toEqual([
      "kubeadm",
      "If an installer manages this cluster, persist the setting there too or its next run undoes it",
      "Antrea is installed",
    ]);
  });
  it("has nothing to do in iptables mode, or when strictARP is set already", () => {
    expect(strictArpFix({ config: IPVS.replace("mode: ipvs", 'mode: ""'), kubeadm: false, antrea: false, nodes: [] })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/\(iptables\): only IPVS mode binds LoadBalancer IPs/) as string,
    });
    expect(strictArpFix({ config: IPVS.replace("false", "true"), kubeadm: false, antrea: false, nodes: [] })).toMatchObject({
      ok: true,
      changed: false,
      disabledReason: expect.stringMatching(/^strictARP is already true/) as string,
    });
  });
});

describe("fixVerdict", () => {
  it("passes a probe whose every request the owner alone answered, and says what else it saw", () => {
    const once = { replies: [{ node: "node-a" }] };
    expect(fixVerdict("192.0.2.10", "node-a", [once, once])).toBeNull();
    expect(
      fixVerdict("192.0.2.10", "node-a", [
        once,
        { replies: [{ node: "node-a" }, { node: "node-b" }] },
        { replies: [{ node: "node-b" }] },
        { replies: [] },
      ]),
    ).toBe("192.0.2.10: 1 requests answered by several MACs, 1 by a node other than node-a, 1 unanswered");
  });

  it("never passes a probe without evidence, and asks only for one answer when no owner is known", () => {
    expect(fixVerdict("192.0.2.10", "node-a", [])).toBe("192.0.2.10: the probe sent no request, so nothing shows the fix worked");
    expect(fixVerdict("192.0.2.10", null, [{ replies: [{ node: "node-b" }] }])).toBeNull();
    expect(fixVerdict("192.0.2.10", null, [{ replies: [] }])).toMatch(/1 unanswered$/);
  });
});
