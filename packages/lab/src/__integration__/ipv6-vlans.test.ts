import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { GRATUITOUS_TICK_MS, GRATUITOUS_WINDOW_MS } from "@whohas/core";
import { AGENT_MAIN, startStack, type Stack } from "../stack.js";
import type { LabNode } from "../lab.js";
import { api, eventually, signIn, type IncidentView } from "./hub-client.js";
import { watchWire, type WireFrame, type WireWatch } from "./wire-watch.js";

// IPv6 and VLANs through the whole product: agents capture NDP and tagged frames, the hub judges each (VLAN,
// address) on its own, the read API names the VLAN and family, and probe and announce speak NDP on the wire (read
// back by tshark in the client namespace, no whohas code in between).

const exec = promisify(execFile);

/** The same IPv4 address on two VLANs: one owner on 30, two on 40. */
const ON_30 = "198.18.0.230@30";
const ON_40 = "198.18.0.230@40";

interface ApiIp {
  ip: string;
  vlan: number | null;
  family: 4 | 6;
  key: string;
  state: string;
  expectedOwner: { node: string } | null;
  responders: { mac: string; node: string | null; answering: boolean }[];
  findings: { type: string; macs: string[]; firstSeen: number }[];
}

/** whohas runs the agent's CLI in `ns`; the event loop keeps turning meanwhile, so tshark's lines are read as they come. */
function whohas(ns: string, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("ip", ["netns", "exec", ns, process.execPath, AGENT_MAIN, ...args], (e, stdout, stderr) =>
      resolve({ status: e === null ? 0 : typeof e.code === "number" ? e.code : null, stdout, stderr }),
    );
  });
}

describe("IPv6 and VLANs from the wire to the read API", () => {
  let stack: Stack;
  let wire: WireWatch;
  let vip6 = "";
  let owner6: LabNode;
  let other6: LabNode;
  /** When the stack was up: the speakers had just taken their IPs over. */
  let startedAt = 0;

  const ips = () => api<ApiIp[]>(stack.url, stack.viewerToken, "ips");
  const one = (key: string) => ips().then((all) => all.find((x) => x.key === key) ?? null);
  const node = (name: string | undefined): LabNode => {
    const n = stack.lab.nodes.find((x) => x.name === name);
    if (n === undefined) throw new Error(`no node ${name}`);
    return n;
  };

  beforeAll(async () => {
    stack = await startStack({
      nodes: 3,
      vips: 1,
      ipv6: true,
      vlanVips: [ON_30, ON_40],
      kube: true,
      cluster: true,
      requestIntervalMs: 500,
      probeDuration: "3s",
    });
    vip6 = stack.lab.vips6[0] ?? "";
    owner6 = node(stack.owners.get(vip6));
    other6 = stack.lab.nodes.find((n) => n !== owner6) ?? owner6;
    // VLAN 30: node-1 alone; VLAN 40: node-1 and node-2. Each keeps the Service IPs it was elected for.
    const elected = (n: string) => [...stack.owners].filter(([, o]) => o === n).map(([ip]) => ip);
    stack.own("node-1", [...elected("node-1"), ON_30, ON_40]);
    stack.own("node-2", [...elected("node-2"), ON_40]);
    startedAt = Date.now();
    wire = await watchWire(stack.lab.client.ns);
  });
  afterAll(async () => {
    await wire.stop();
    await stack.stop();
  });

  it("judges an IPv6 Service IP answered by its owner alone as one clean row, with its family and Service", async () => {
    const v = await eventually(
      () => one(vip6),
      (x) => x?.responders.some((r) => r.answering) === true,
      20_000,
    );
    expect(v).toMatchObject({ ip: vip6, vlan: null, family: 6, key: vip6, state: "single", expectedOwner: { node: owner6.name } });
    expect(v?.responders.filter((r) => r.answering).map((r) => r.node)).toEqual([owner6.name]);
    expect(v?.findings).toEqual([]);
  });

  it("raises several responders for the IPv6 IP once a second node holds it", async () => {
    const t0 = Date.now();
    await stack.lab.holdOnLink(other6, vip6);
    try {
      const v = await eventually(
        () => one(vip6),
        (x) => x?.findings.some((f) => f.type === "multi-responder") === true,
        10_000,
      );
      // Dated by the second node's answers, which began when it took the address (how fast is alert-bench's part).
      expect(v?.findings.find((f) => f.type === "multi-responder")?.firstSeen).toBeGreaterThanOrEqual(t0);
      expect(
        v?.responders
          .filter((r) => r.answering)
          .map((r) => r.node)
          .sort(),
      ).toEqual([owner6.name, other6.name].sort());
    } finally {
      await stack.lab.releaseFromLink(other6, vip6);
    }
  });

  it("keeps the same address on VLAN 30 and VLAN 40 apart: two rows, two verdicts, each with its VLAN", async () => {
    const rows = await eventually(
      ips,
      (all) => all.find((x) => x.key === ON_40)?.state === "multi-responder" && all.find((x) => x.key === ON_30)?.state === "single",
      20_000,
    );
    const tagged = rows.filter((x) => x.ip === "198.18.0.230");
    expect(tagged.map((x) => [x.key, x.vlan, x.family, x.state])).toEqual([
      [ON_30, 30, 4, "single"],
      [ON_40, 40, 4, "multi-responder"],
    ]);
    expect(tagged[0]?.responders.map((r) => r.node)).toEqual(["node-1"]);
    expect(tagged[1]?.responders.map((r) => r.node).sort()).toEqual(["node-1", "node-2"]);
    // No untagged row for it: nobody asked for it outside the VLANs.
    expect(rows.some((x) => x.key === "198.18.0.230")).toBe(false);
    const incidents = await api<IncidentView[]>(stack.url, stack.viewerToken, "incidents?state=open");
    // VLAN 40's two speakers both took it over (each announced it): one incident, named split brain, with several
    // responders too; VLAN 30 none.
    const onVlans = incidents.filter((i) => i.ip === "198.18.0.230");
    expect(onVlans.map((i) => [i.vlan, i.type])).toEqual([[40, "split-brain"]]);
    expect(onVlans[0]?.facets.map((f) => f.type).sort()).toEqual(["multi-responder", "split-brain"]);
  });

  it("hands over the frames of an address on a VLAN, tagged, and of the IPv6 IP, as NDP, each as tshark reads them", async () => {
    const download = async (key: string, name: string) => {
      const res = await fetch(`${stack.url}/api/v1/ips/${encodeURIComponent(key)}/capture?last=1m`, {
        headers: { authorization: `Bearer ${stack.viewerToken}` },
      });
      expect(res.status).toBe(200);
      const file = `${stack.logDir}/${name}`;
      writeFileSync(file, Buffer.from(await res.arrayBuffer()));
      return file;
    };
    const fields = async (file: string, filter: string, names: string[]) =>
      (await exec("tshark", ["-r", file, "-Y", filter, "-T", "fields", "-E", "separator=|", ...names.flatMap((f) => ["-e", f])])).stdout
        .trim()
        .split("\n")
        .filter((l) => l !== "");
    // VLAN 40: both speakers' replies, every frame in VLAN 40's tag, none from VLAN 30.
    const v40 = await download(ON_40, "vlan40.pcapng");
    const tags = await fields(v40, "arp", ["vlan.id"]);
    expect(tags.length).toBeGreaterThan(0);
    expect(new Set(tags)).toEqual(new Set(["40"]));
    const repliers = await fields(v40, "arp.opcode == 2 && arp.src.proto_ipv4 == 198.18.0.230", ["arp.src.hw_mac"]);
    expect([...new Set(repliers)].sort()).toEqual([node("node-1").mac, node("node-2").mac].sort());
    // The IPv6 IP: the client's solicitations and the owner's advertisements for it.
    const v6 = await download(vip6, "ipv6.pcapng");
    const nd = await fields(v6, "icmpv6.type == 135 || icmpv6.type == 136", [
      "icmpv6.type",
      "icmpv6.nd.ns.target_address",
      "icmpv6.nd.na.target_address",
    ]);
    expect(nd.some((l) => l.startsWith("135|"))).toBe(true);
    expect(nd.some((l) => l.startsWith("136|"))).toBe(true);
    for (const l of nd)
      expect(
        l
          .split("|")
          .slice(1)
          .filter((x) => x !== ""),
      ).toEqual([vip6]);
  });

  it("whohas probe asks by Neighbor Solicitation to the solicited-node group and counts the owner's answers", async () => {
    // The lab's client asks for the same IP from the same MAC: it keeps quiet meanwhile, so every NS seen is the probe's.
    stack.pauseRequests();
    try {
      const from = wire.frames.length;
      // A request the client sent just before it paused may still be on its way to tshark: only later frames count.
      const t0 = Date.now();
      const r = await whohas(stack.lab.client.ns, ["probe", vip6, "--duration", "2s", "--interval", "500ms"]);
      expect(r.status, r.stderr).toBe(0);
      const requests = Number(/^(\d+) requests, 0 unanswered, 0 answered by more than one MAC$/m.exec(r.stdout)?.[1] ?? NaN);
      expect(requests).toBeGreaterThanOrEqual(4);
      const isProbe = (f: WireFrame) => f.time >= t0 && f.kind === "ns" && f.ip === vip6 && f.src === stack.lab.client.mac;
      await wire.nth(from, isProbe, requests);
      const sent = wire.frames.slice(from).filter(isProbe);
      expect(sent).toHaveLength(requests);
      // Each to the solicited-node group of the target (33:33:ff and its last 24 bits), untagged.
      for (const f of sent) expect([f.dst, f.vlan]).toEqual(["33:33:ff:00:02:00", null]);
      expect(r.stdout).toContain(`${owner6.mac}  ${requests} replies`);
    } finally {
      stack.resumeRequests();
    }
  });

  it("whohas announce sends MetalLB's unsolicited Neighbor Advertisements from the owner", async () => {
    // The owner's speaker announced the IP when it took it over at start, for MetalLB's window: let that end first,
    // so every announcement on the wire is the command's.
    await new Promise((r) => setTimeout(r, Math.max(0, startedAt + GRATUITOUS_WINDOW_MS + GRATUITOUS_TICK_MS - Date.now())));
    stack.pauseRequests();
    try {
      const from = wire.frames.length;
      const r = await whohas(owner6.ns, ["announce", vip6, "--force", "--duration", "1s"]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/: 5 bursts/);
      // Answers to the client's last requests are solicited: the announcements are the unsolicited ones.
      const fromOwner = (f: WireFrame) => f.kind === "na" && !f.solicited && f.ip === vip6 && f.src === owner6.mac;
      // Five bursts of one NA each, 1.1 s apart, to all nodes, from the owner's link-local address.
      await wire.nth(from, fromOwner, 5);
      const nas = wire.frames.slice(from).filter(fromOwner);
      expect(nas.map((f) => [f.dst, f.peer, f.ipSrc, f.vlan])).toEqual(
        Array.from({ length: 5 }, () => ["33:33:00:00:00:01", "ff02::1", owner6.linkLocal, null]),
      );
      const gaps = nas.slice(1).map((f, i) => f.time - (nas[i]?.time ?? 0));
      for (const g of gaps) expect(Math.abs(g - 1100)).toBeLessThan(150);
    } finally {
      stack.resumeRequests();
    }
  });

  it("probes the IPv6 IP from the dashboard, and says a node without a device on VLAN 30 cannot probe there", async () => {
    const op = await signIn(stack, "operator");
    const latest = (ip: string) =>
      eventually(
        () =>
          op.query<{ state: string; messages: string[]; rounds: { replies: { node: string | null }[] }[] } | null>("actions.latestProbe", {
            ip,
          }),
        (x) => x !== null && x.state !== "running",
        30_000,
      );
    expect((await op.mutate("actions.probe", { ip: vip6 })).status).toBe(200);
    const v6 = await latest(vip6);
    expect(v6?.rounds.length).toBeGreaterThan(0);
    for (const round of v6?.rounds ?? []) expect(round.replies.map((x) => x.node)).toEqual([owner6.name]);
    // Force re-announce from the dashboard: the owner's agent sends the unsolicited NAs.
    const from = wire.frames.length;
    const again = await op.mutate("actions.reannounce", { ip: vip6 });
    expect([again.status, again.body.result?.data]).toEqual([
      200,
      expect.objectContaining({ node: owner6.name, bursts: expect.any(Number) }),
    ]);
    await wire.nth(from, (f) => f.kind === "na" && !f.solicited && f.ip === vip6 && f.src === owner6.mac, 1);
    expect((await op.mutate("actions.probe", { ip: ON_30 })).status).toBe(200);
    const tagged = await latest(ON_30);
    expect(tagged?.state).toBe("failed");
    expect(tagged?.messages.join("\n")).toMatch(/has no interface on VLAN 30 \(no VLAN device with id 30 in \/proc\/net\/vlan\/config\)/);
  });
});
