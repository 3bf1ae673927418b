import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { BACKOFF_MAX_MS, backoffDelay } from "../hub-link.js";
import { DEFAULT_EXCLUDE, selectCaptureInterfaces, type NetInterface } from "../capture/interfaces.js";
import { parseAgentConfig } from "../config.js";
import { handleFrame } from "../agent.js";
import { CapturePoint, newArpReply, newFrameFields } from "@whohas/core";

const link = (name: string, over: Partial<NetInterface> = {}): NetInterface => ({
  name,
  mac: "02:00:5e:00:00:01",
  up: true,
  noarp: false,
  hasMaster: false,
  master: null,
  ...over,
});

describe("selectCaptureInterfaces", () => {
  const deny = new RegExp(DEFAULT_EXCLUDE);
  it.each([
    { case: "a plain uplink", i: link("eth0"), picked: true },
    { case: "kube-ipvs0 (MetalLB's deny list)", i: link("kube-ipvs0"), picked: false },
    { case: "a veth", i: link("veth12ab"), picked: false },
    { case: "loopback", i: link("lo"), picked: false },
    { case: "a down link", i: link("eth1", { up: false }), picked: false },
    { case: "a bond slave", i: link("eno1", { hasMaster: true, master: "bond0" }), picked: false },
    { case: "a NOARP link", i: link("wg0", { noarp: true }), picked: false },
  ])("$case: $picked", ({ i, picked }) => {
    expect(selectCaptureInterfaces([i], /.*/, deny)).toHaveLength(picked ? 1 : 0);
  });
  it("captures a VLAN device only when its parent is not captured: one capture per link, no frame counted twice", () => {
    const trunk = [
      link("eth0"),
      link("eth0.30", { vlan: { id: 30, parent: "eth0" } }),
      link("eth1.40", { vlan: { id: 40, parent: "eth1" } }),
    ];
    expect(selectCaptureInterfaces(trunk, /.*/, deny).map((i) => i.name)).toEqual(["eth0", "eth1.40"]);
    expect(selectCaptureInterfaces(trunk, /\./, deny).map((i) => i.name)).toEqual(["eth0.30", "eth1.40"]);
  });
  it("applies the allow regex", () => {
    expect(selectCaptureInterfaces([link("eth0"), link("bond0")], /^bond/, deny).map((i) => i.name)).toEqual(["bond0"]);
  });
});

describe("handleFrame", () => {
  it("files an untagged frame captured on a VLAN device under that VLAN, as its parent would show it tagged", () => {
    const point = new CapturePoint(100);
    const fields = newFrameFields();
    const reply = newArpReply("02:00:5e:00:00:0a", "192.0.2.10", "02:00:5e:00:00:01", "192.0.2.1");
    expect(handleFrame(point, fields, "eth0.30", reply, 1000, 30)).toBeNull();
    expect(handleFrame(point, fields, "eth0", reply, 1000)).toBeNull();
    expect(
      point
        .drain(10, 2000)
        .entries.map((e) => [e.iface, e.vlan])
        .sort(),
    ).toEqual([
      ["eth0", null],
      ["eth0.30", 30],
    ]);
  });
});

describe("backoffDelay", () => {
  it("doubles from 0.5 s with jitter and caps at 30 s", () => {
    expect(backoffDelay(0, () => 0)).toBe(250);
    expect(backoffDelay(0, () => 1)).toBe(500);
    expect(backoffDelay(3, () => 1)).toBe(4000);
    expect(backoffDelay(50, () => 1)).toBe(BACKOFF_MAX_MS);
  });
});

describe("parseAgentConfig", () => {
  const dir = mkdtempSync(join(tmpdir(), "whohas-agent-"));
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, "abc\n");
  it("reads the token and takes the node name from NODE_NAME", () => {
    const c = parseAgentConfig({ hub: "ws://h:3000/agent", "token-file": tokenFile }, { NODE_NAME: "worker-1" });
    expect(c).toMatchObject({ token: "abc", node: "worker-1", hubs: ["ws://h:3000/agent"] });
    const two = parseAgentConfig({ hub: "ws://a:3000/agent, ws://b:3000/agent", "token-file": tokenFile }, { NODE_NAME: "worker-1" });
    expect(two.hubs).toEqual(["ws://a:3000/agent", "ws://b:3000/agent"]);
    expect(() => parseAgentConfig({ hub: "ws://a/agent,http://b/agent", "token-file": tokenFile }, {})).toThrow(/--hub must start with/);
  });
  it("keeps 4 MiB of frames for evidence, 10 minutes at most, unless told otherwise", () => {
    const flags = { hub: "ws://h/agent", "token-file": tokenFile };
    expect(parseAgentConfig(flags, {})).toMatchObject({ evidenceBytes: 4 * 1024 * 1024, evidenceAgeMs: 600_000 });
    expect(parseAgentConfig({ ...flags, "evidence-bytes": "0", "evidence-age": "90s" }, {})).toMatchObject({
      evidenceBytes: 0,
      evidenceAgeMs: 90_000,
    });
  });
  it.each([
    { case: "bad hub scheme", flags: { hub: "http://h", "token-file": tokenFile }, msg: /--hub must start with ws:\/\// },
    {
      case: "missing token file",
      flags: { hub: "ws://h/agent", "token-file": join(dir, "nope") },
      msg: /--token-file: cannot read .*ENOENT/,
    },
    {
      case: "bad regex",
      flags: { hub: "ws://h/agent", "token-file": tokenFile, interfaces: "(" },
      msg: /--interfaces: not a regular expression/,
    },
    { case: "no token flag", flags: { hub: "ws://h/agent" }, msg: /--token-file/ },
    {
      case: "missing CA file",
      flags: { hub: "wss://h/agent", "token-file": tokenFile, "ca-file": join(dir, "nope.pem") },
      msg: /--ca-file: cannot read .*ENOENT/,
    },
    {
      case: "a CA file without a certificate",
      flags: { hub: "wss://h/agent", "token-file": tokenFile, "ca-file": tokenFile },
      msg: /--ca-file: .* holds no PEM certificate/,
    },
    {
      case: "a node name Kubernetes would not take",
      flags: { hub: "ws://h/agent", "token-file": tokenFile, node: "Worker_1" },
      msg: /--node "Worker_1": not a node name/,
    },
    {
      case: "a cluster name that is no DNS label",
      flags: { hub: "ws://h/agent", "token-file": tokenFile, cluster: "Prod_EU" },
      msg: /^--cluster "Prod_EU": not a cluster name \(lowercase letters, digits and inner hyphens/,
    },
    {
      case: "an evidence bound that is not a size",
      flags: { hub: "ws://h/agent", "token-file": tokenFile, "evidence-bytes": "lots" },
      msg: /^--evidence-bytes: not a size: "lots"/,
    },
    {
      case: "an evidence age of nothing",
      flags: { hub: "ws://h/agent", "token-file": tokenFile, "evidence-age": "0s" },
      msg: /^--evidence-age: 0s keeps nothing/,
    },
    {
      case: "an evidence age that is not a duration",
      flags: { hub: "ws://h/agent", "token-file": tokenFile, "evidence-age": "forever" },
      msg: /^--evidence-age: not a duration/,
    },
  ])("refuses $case", ({ flags, msg }) => {
    expect(() => parseAgentConfig(flags, {})).toThrow(msg);
  });

  it("takes the cluster from --cluster, else WHOHAS_CLUSTER, else none", () => {
    const flags = { hub: "ws://h/agent", "token-file": tokenFile };
    expect(parseAgentConfig({ ...flags, cluster: "prod-eu" }, { WHOHAS_CLUSTER: "other" }).cluster).toBe("prod-eu");
    expect(parseAgentConfig(flags, { WHOHAS_CLUSTER: "other" }).cluster).toBe("other");
    expect(parseAgentConfig(flags, {}).cluster).toBeNull();
  });
  it("takes the hostname in lowercase when no name is given, as the kubelet does", () => {
    const c = parseAgentConfig({ hub: "ws://h/agent", "token-file": tokenFile }, {});
    expect(c.node).toBe(hostname().toLowerCase());
  });
});
