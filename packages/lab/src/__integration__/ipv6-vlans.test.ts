import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { GRATUITOUS_TICK_MS, GRATUITOUS_WINDOW_MS } from "@whohas/core";
import { AGENT_MAIN, startStack, type Stack } from "../stack.js";
import type { LabNode } from "../lab.js";
import { api, eventually, signIn, type IncidentView } from "./hub-client.js";
import { record } from "./reliability.js";
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
  responders: { mac: string; node: string | null; answering: boolean; gratuitous: number; lastGratuitous: number | null }[];
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

/**
 * firstAnsweredByBoth is the first request (`isRequest`) from index `from` of `wire` that frames of both `first` and
 * `second` answered before the next request. Each round is judged once tshark has the request after it.
 */
async function firstAnsweredByBoth(
  wire: WireWatch,
  from: number,
  isRequest: (f: WireFrame) => boolean,
  first: (f: WireFrame) => boolean,
  second: (f: WireFrame) => boolean,
): Promise<WireFrame> {
  for (let k = 1; ; k++) {
    const start = await wire.nth(from, isRequest, k);
    const end = await wire.nth(start + 1, isRequest, 1);
    const round = wire.frames.slice(start, end);
    const request = round[0];
    if (request !== undefined && round.some(first) && round.some(second)) return request;
  }
}

describe("IPv6 and VLANs from the wire to the read API", () => {
  let stack: Stack;
  let wire: WireWatch;
  let vip6 = "";
  let owner6: LabNode;
  let other6: LabNode;
  /** When the stack was up: the speakers had just taken their IPs over. */
  let startedAt = 0;
  /** What each node's speaker owns now (own() replaces the whole list). */
  const owned = new Map<string, string[]>();
  const own = (n: string, ips: string[]) => {
    owned.set(n, ips);
    stack.own(n, ips);
  };

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
    for (const n of stack.lab.nodes) owned.set(n.name, elected(n.name));
    own("node-1", [...elected("node-1"), ON_30, ON_40]);
    own("node-2", [...elected("node-2"), ON_40]);
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
    const client = stack.lab.client;
    const from = wire.frames.length;
    const t0 = Date.now();
    await stack.lab.holdOnLink(other6, vip6);
    try {
      // Polled every 50 ms: the time it shows up is read to within that.
      const v = await eventually(
        () => one(vip6),
        (x) => x?.findings.some((f) => f.type === "multi-responder") === true,
        10_000,
        50,
      );
      const shownAt = Date.now();
      const finding = v?.findings.find((f) => f.type === "multi-responder");
      // Dated by the second node's answers, which began when it took the address.
      expect(finding?.firstSeen).toBeGreaterThanOrEqual(t0);
      expect(
        v?.responders
          .filter((r) => r.answering)
          .map((r) => r.node)
          .sort(),
      ).toEqual([owner6.name, other6.name].sort());
      // The first of the client's solicitations both nodes answered, as tshark saw it.
      const isNs = (f: WireFrame) => f.kind === "ns" && f.ip === vip6 && f.src === client.mac;
      const answers = (f: WireFrame, mac: string) =>
        f.kind === "na" && f.solicited && f.ip === vip6 && f.src === mac && f.dst === client.mac;
      const both = await firstAnsweredByBoth(
        wire,
        from,
        isNs,
        (f) => answers(f, owner6.mac),
        (f) => answers(f, other6.mac),
      );
      const detectionMs = Math.round(shownAt - both.time);
      // The finding is that request's: its time, to well within the half interval between two of the client's.
      expect(Math.abs((finding?.firstSeen ?? 0) - both.time)).toBeLessThan(250);
      console.log(`IPv6 multi-responder shown by the hub ${detectionMs} ms after the first NS both nodes answered (polled every 50 ms)`);
      record({
        fault: "A second node holds an IPv6 VIP on its link",
        checked: "the first Neighbor Solicitation both nodes answered (tshark on the client) to multi-responder in the read API",
        result: `shown after ${detectionMs} ms (read every 50 ms); the finding is dated ${Math.round((finding?.firstSeen ?? 0) - both.time)} ms from that request`,
      });
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
      const client6 = stack.lab.client.ip6;
      expect(vip6).toBe("2001:2::200");
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
      // Each to the solicited-node group of the target (ff02::1:ff and its last 24 bits; 33:33 and the group's last 32
      // bits on Ethernet), from the client's address, untagged.
      for (const f of sent) expect([f.ipDst, f.dst, f.peer, f.vlan]).toEqual(["ff02::1:ff00:200", "33:33:ff:00:02:00", client6, null]);
      expect(r.stdout).toContain(`${owner6.mac}  ${requests} replies`);
    } finally {
      stack.resumeRequests();
    }
  });

  it("whohas announce sends MetalLB's unsolicited Neighbor Advertisements from the owner", async () => {
    // The owner's speaker announced the IP when it took it over at start, for MetalLB's window: let that end first,
    // so every announcement on the wire is the command's.
    await new Promise((r) => setTimeout(r, Math.max(0, startedAt + GRATUITOUS_WINDOW_MS + GRATUITOUS_TICK_MS - Date.now())));
    const ownerIn = (v: ApiIp | null) => v?.responders.find((x) => x.mac === owner6.mac);
    const before = ownerIn(await one(vip6))?.gratuitous ?? 0;
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
      // The hub counts them as the owner's announcements: more gratuitous frames, the last one the command's.
      const last = nas[nas.length - 1]?.time ?? 0;
      const v = await eventually(
        () => one(vip6),
        (x) => (ownerIn(x)?.gratuitous ?? 0) > before && (ownerIn(x)?.lastGratuitous ?? 0) >= last - 50,
        10_000,
      );
      expect(ownerIn(v)?.gratuitous).toBeGreaterThan(0);
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

  it("the speaker taking the IPv6 IP over sends MetalLB's unsolicited NAs from its link-local address", async () => {
    const from = wire.frames.length;
    const t0 = Date.now();
    const mine = (n: LabNode) => owned.get(n.name) ?? [];
    own(
      owner6.name,
      mine(owner6).filter((x) => x !== vip6),
    );
    own(other6.name, [...mine(other6), vip6]);
    try {
      const takeover = (f: WireFrame) => f.kind === "na" && !f.solicited && f.ip === vip6 && f.src === other6.mac;
      // A burst at once, then one every 1.1 s while MetalLB's window lasts: the first three.
      await wire.nth(from, takeover, 3);
      const nas = wire.frames.slice(from).filter(takeover);
      expect(nas[0]?.time).toBeGreaterThanOrEqual(t0);
      for (const f of nas.slice(0, 3))
        expect([f.dst, f.ipDst, f.ipSrc, f.override, f.vlan]).toEqual(["33:33:00:00:00:01", "ff02::1", other6.linkLocal, true, null]);
      // The hub counts them as the new owner's announcements.
      const v = await eventually(
        () => one(vip6),
        (x) => (x?.responders.find((r) => r.mac === other6.mac)?.lastGratuitous ?? 0) >= (nas[0]?.time ?? Infinity) - 50,
        10_000,
      );
      expect(v?.responders.find((r) => r.mac === other6.mac)?.gratuitous).toBeGreaterThan(0);
    } finally {
      own(
        other6.name,
        mine(other6).filter((x) => x !== vip6),
      );
      own(owner6.name, [...mine(owner6), vip6]);
    }
  });
});
