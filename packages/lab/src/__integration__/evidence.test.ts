// "Show me the packets": with every node's kernel answering for a VIP, the hub keeps the frames each node's agent
// captured around the incident's first evidence, and hands them over as one pcapng that Wireshark's tools read and
// `whohas analyze` judges as the hub did. The agents, their rings, the hub and its database are the real ones.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { AGENT_MAIN } from "../hub-process.js";
import { startStack, type Stack } from "../stack.js";
import { api, eventually, signIn, type IncidentView as Incident } from "./hub-client.js";

const exec = promisify(execFile);

interface Audit {
  actor: string;
  action: string;
  outcome: string;
  input: Record<string, unknown>;
  detail: string;
}
interface Captured {
  t: number;
  iface: string;
  op: number;
  sender: string;
  senderIp: string;
  targetIp: string;
}

describe("evidence: an incident's frames from every node, as one pcapng", () => {
  let stack: Stack;
  const vip = () => stack.lab.vips[0] ?? "";
  const macs = () => stack.lab.nodes.map((n) => n.mac).sort();
  const names = () => stack.lab.nodes.map((n) => n.name).sort();

  beforeAll(async () => {
    // strictARP false: every node's kernel answers for every VIP on its kube-ipvs0.
    stack = await startStack({ nodes: 3, vips: 2, requestIntervalMs: 200 });
  });
  afterAll(async () => {
    await stack.stop();
  });

  /** download GETs a capture with the read API's token and saves it; returns the file and the response. */
  const download = async (path: string, name: string) => {
    const res = await fetch(`${stack.url}/api/v1/${path}`, { headers: { authorization: `Bearer ${stack.viewerToken}` } });
    const body = Buffer.from(await res.arrayBuffer());
    const file = `${stack.logDir}/${name}`;
    writeFileSync(file, body);
    return { res, body, file };
  };
  /** tshark reads the file as a person would: each ARP frame's time, the interface ("node-2/eth0") and its addresses. */
  const tshark = async (file: string): Promise<Captured[]> => {
    const fields = ["frame.time_epoch", "frame.interface_name", "arp.opcode", "arp.src.hw_mac", "arp.src.proto_ipv4", "arp.dst.proto_ipv4"];
    const read = await exec("tshark", ["-r", file, "-Y", "arp", "-T", "fields", "-E", "separator=|", ...fields.flatMap((f) => ["-e", f])]);
    return read.stdout
      .trim()
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => {
        const [t, iface, op, sender, senderIp, targetIp] = l.split("|");
        return {
          t: Number(t) * 1000,
          iface: iface ?? "",
          op: Number(op),
          sender: sender ?? "",
          senderIp: senderIp ?? "",
          targetIp: targetIp ?? "",
        };
      });
  };
  /** multi is the VIP's incident once its multi-responder finding names all three nodes' MACs. */
  const multiMacs = (i: Incident | undefined) => i?.facets.find((f) => f.type === "multi-responder" && f.resolvedAt === null)?.macs;
  const multi = () =>
    eventually(
      async () => (await api<Incident[]>(stack.url, stack.viewerToken, `incidents?state=open&ip=${vip()}`))[0],
      (i) => multiMacs(i)?.length === 3,
      30_000,
    );

  it("stores the frames when the window after the first evidence ends, without anyone asking", async () => {
    const inc = await multi();
    const viewer = await signIn(stack, "viewer");
    // Thirty seconds after the first evidence the hub asks every agent; the incident page shows what it stored.
    const stored = await eventually(
      () =>
        viewer.query<{ capture: { nodes: { node: string; frames: number; missing: string | null }[] } | null }>("incidents.byId", {
          id: inc?.id,
        }),
      (i) => i.capture !== null,
      60_000,
    );
    expect(stored.capture?.nodes.map((n) => n.node)).toEqual(names());
    for (const n of stored.capture?.nodes ?? []) {
      expect(n.missing).toBeNull();
      expect(n.frames).toBeGreaterThan(0);
    }
  }, 90_000);

  it("serves the incident's capture: every node's replies and the requests, read by tshark, judged the same by analyze", async () => {
    const inc = await multi();
    const { res, file } = await download(`incidents/${inc?.id}/capture`, "incident.pcapng");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/vnd.tcpdump.pcap");
    expect(res.headers.get("content-disposition")).toContain(`filename="whohas-${vip()}-`);
    const frames = await tshark(file);
    const replies = frames.filter((f) => f.op === 2 && f.senderIp === vip());
    const requests = frames.filter((f) => f.op === 1 && f.targetIp === vip());
    expect([...new Set(replies.map((r) => r.sender))].sort()).toEqual(macs());
    // Each node's own capture: its interface is named after it.
    expect([...new Set(frames.map((f) => f.iface.split("/")[0]))].sort()).toEqual(names());

    // One request reaches the three nodes over the lab's bridge: each node's agent holds every request of the
    // window (the first and last may fall on its edge for one node and not another), and the three copies of a
    // request are dated alike by one machine's clock. Agents date a frame when libpcap hands it over, so under load
    // a copy can come late: the typical round, the median, is what shows the clock.
    const perNode = names().map((n) => requests.filter((r) => r.iface.startsWith(`${n}/`)).length);
    expect(Math.min(...perNode)).toBeGreaterThan(100);
    expect(Math.max(...perNode) - Math.min(...perNode)).toBeLessThanOrEqual(2);
    const rounds: Captured[][] = [];
    for (const r of requests) {
      const last = rounds.at(-1);
      if (last !== undefined && r.t - (last[0]?.t ?? 0) < 100) last.push(r);
      else rounds.push([r]);
    }
    const spreads = rounds
      .filter((one) => new Set(one.map((r) => r.iface)).size === 3)
      .map((one) => Math.max(...one.map((r) => r.t)) - Math.min(...one.map((r) => r.t)))
      .sort((x, y) => x - y);
    expect(spreads.length).toBeGreaterThan(Math.min(...perNode) / 2);
    expect(spreads[Math.floor(spreads.length / 2)]).toBeLessThanOrEqual(5);

    const analyzed = await exec(process.execPath, [AGENT_MAIN, "analyze", "--json", file]).catch((e: { stdout: string }) => e);
    const judged = (JSON.parse(analyzed.stdout) as { ips: { ip: string; findings: { type: string; macs: string[] }[] }[] }).ips.find(
      (x) => x.ip === vip(),
    );
    expect(judged?.findings.find((f) => f.type === "multi-responder")?.macs).toEqual(multiMacs(inc));

    // The download is in the audit log, with who and what.
    const admin = await signIn(stack, "admin");
    const audit = await admin.query<Audit[]>("settings.audit");
    expect(audit.find((a) => a.action === "capture.download" && a.input.incident === inc?.id)).toMatchObject({
      actor: "viewer-token",
      outcome: "ok",
    });
  });

  it("keeps the incident's frames across a hub restart, and names a node whose agent is down", async () => {
    const inc = await multi();
    const before = await tshark((await download(`incidents/${inc?.id}/capture`, "before.pcapng")).file);
    const down = stack.lab.nodes[2]?.name ?? "";
    await stack.stopAgent(down);
    await stack.restartHub();
    const connected = async () =>
      (await api<{ node: string; agent: { connected: boolean } }[]>(stack.url, stack.viewerToken, "nodes"))
        .filter((n) => n.agent.connected)
        .map((n) => n.node);
    await eventually(connected, (up) => up.length === 2 && !up.includes(down), 30_000);
    // The stopped agent's frames come from the database now; the others' are asked for again and merged.
    const after = await tshark((await download(`incidents/${inc?.id}/capture`, "after.pcapng")).file);
    const key = (f: Captured) => `${f.t}|${f.iface}|${f.op}|${f.sender}`;
    const kept = new Set(after.map(key));
    expect(before.filter((f) => !kept.has(key(f)))).toEqual([]);
    expect(after.some((f) => f.iface === `${down}/eth0`)).toBe(true);

    // An ad hoc window of the last minute: the down node has nothing to give, and the file says so.
    const adhoc = await download(`ips/${vip()}/capture`, "adhoc.pcapng");
    expect(adhoc.res.status).toBe(200);
    expect(adhoc.body.toString("latin1")).toMatch(new RegExp(`missing: ${down}: agent down since`));
    const recent = await tshark(adhoc.file);
    expect(recent.some((f) => f.iface.startsWith(`${down}/`))).toBe(false);
    expect(new Set(recent.map((f) => f.iface.split("/")[0])).size).toBe(2);
    stack.startAgent(down);
  });
});
