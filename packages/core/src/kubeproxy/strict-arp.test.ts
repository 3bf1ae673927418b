import { describe, expect, it } from "vitest";
import { strictArpStatus } from "./strict-arp.js";
import type { NodeFacts } from "../wire.js";
import type { KubeProxyConfig } from "./config.js";

function facts(node: string, arpIgnore: number, arpAnnounce: number, ipvs = true): NodeFacts {
  const pair = { arpIgnore, arpAnnounce };
  return {
    node,
    agentVersion: "test",
    interfaces: [
      {
        name: "eth0",
        mac: "02:00:5e:00:00:0a",
        up: true,
        master: null,
        addresses: ["198.18.0.11/24"],
        own: { arpIgnore: 0, arpAnnounce: 0 },
        effective: pair,
        captured: true,
      },
      {
        name: "kube-ipvs0",
        mac: "02:00:5e:00:00:0b",
        up: false,
        master: null,
        addresses: [],
        own: { arpIgnore: 0, arpAnnounce: 0 },
        effective: pair,
        captured: false,
      },
    ],
    sysctl: { all: pair, default: { arpIgnore: 0, arpAnnounce: 0 } },
    kubeIpvs0: { present: ipvs, addresses: ipvs ? 2 : 0 },
    kubeProxyMode: ipvs ? "ipvs" : "not-ipvs",
    capture: { frames: 0, dropped: {}, kernelReceived: 0, kernelDropped: 0 },
  };
}
const cfg = (strictARP: boolean, mode: KubeProxyConfig["mode"] = "ipvs"): KubeProxyConfig => ({
  mode,
  modeRaw: mode,
  strictARP,
  strictARPPresent: true,
});

describe("strictArpStatus", () => {
  it("is exposed with no drift when strictARP is off and the nodes are loose (the kubeadm default)", () => {
    const s = strictArpStatus(cfg(false), [facts("b", 0, 0), facts("a", 0, 0)]);
    expect(s).toMatchObject({ verdict: "exposed", looseIpvsNodes: ["a", "b"], drift: [], configured: { mode: "ipvs", strictARP: false } });
  });

  it("shows the nodes kube-proxy has not restarted on after the ConfigMap was patched", () => {
    const s = strictArpStatus(cfg(true), [facts("a", 1, 2), facts("b", 0, 0)]);
    expect(s.drift).toEqual([expect.objectContaining({ node: "b", reason: "not-restarted" })]);
    expect(s.verdict).toBe("exposed");
  });

  it("shows nodes left strict after a rollback, and calls the cluster ok", () => {
    const s = strictArpStatus(cfg(false), [facts("a", 1, 2)]);
    expect(s.drift).toEqual([expect.objectContaining({ node: "a", reason: "never-reset" })]);
    expect(s.drift[0]?.message).toContain("until it reboots");
    expect(s.verdict).toBe("ok");
  });

  it("does not call iptables-mode nodes exposed, and is unknown with no agent", () => {
    expect(strictArpStatus(cfg(false, "iptables"), [facts("a", 0, 0, false)]).verdict).toBe("ok");
    expect(strictArpStatus(null, []).verdict).toBe("unknown");
  });

  it("takes the weakest captured interface (arp_announce 1 is not strict)", () => {
    expect(strictArpStatus(null, [facts("a", 1, 1)]).nodes[0]).toMatchObject({ strict: false, arpIgnore: 1, arpAnnounce: 1 });
  });
});
