// One judge, on real topologies: MetalLB-like speakers in real node namespaces hand an IP over, split their brain,
// forget to announce; the hub judges it live from its agents, and `whohas analyze` judges the client's own capture
// of the same minutes. Both must say the same.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { execFile, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { promisify } from "node:util";
import { ARP_OP_REPLY, CaptureReader, decodeArp, newGratuitousArp } from "@whohas/core";
import { AGENT_MAIN, INJECT } from "../hub-process.js";
import { resourceNamed } from "../kube/resources.js";
import { startStack, type Stack } from "../stack.js";
import { listening, startTcpdump } from "../tcpdump.js";
import { api, eventually, findingsIn, signIn, type IncidentView as Incident } from "./hub-client.js";
import { webhookReceiver, type WebhookReceiver } from "./webhook-receiver.js";

const exec = promisify(execFile);

interface Party {
  mac: string;
  node: string | null;
}
interface Handover {
  from: Party;
  to: Party;
  at: number;
  gapMs: number;
  unanswered: number;
  announced: boolean | null;
}
interface Asker {
  mac: string | null;
  ip: string;
  requests: number;
  firstAnswerChanges: number;
  changesPerHour: number;
  lastChange: number | null;
}
interface IpJson {
  state: string;
  askers: Asker[];
  handovers: Handover[];
  findings: { type: string; macs: string[] }[];
  responders: { mac: string; node: string | null; answering: boolean; lastAnnouncement: { kind: string } | null }[];
}
interface AnalyzedIp {
  ip: string;
  findings: { type: string; macs: string[]; firstSeen: string }[];
  handovers: Handover[];
}
/** An ARP frame as the client's capture holds it. */
interface Captured {
  t: number;
  op: number;
  mac: string;
  ip: string;
  target: string;
}

describe("one judge: verdicts the same live and offline", () => {
  let stack: Stack;
  let receiver: WebhookReceiver;
  /** Every notification received: its IP, and each alert's type, status and when its finding was first seen. */
  const webhooks: { ip: string | null; alerts: { type: string; status: string; firstSeen: number }[] }[] = [];
  /** Which VIPs each node's speaker owns now. */
  const owned = new Map<string, Set<string>>();
  const nodeOfMac = (mac: string) => stack.lab.nodes.find((n) => n.mac === mac)?.name ?? null;
  const macOf = (node: string) => stack.lab.nodes.find((n) => n.name === node)?.mac ?? "";

  beforeAll(async () => {
    receiver = await webhookReceiver((body) => {
      const n = JSON.parse(body) as { ip: string | null; alerts: { type: string; status: string; firstSeen: string }[] };
      webhooks.push({ ip: n.ip, alerts: n.alerts.map((a) => ({ type: a.type, status: a.status, firstSeen: Date.parse(a.firstSeen) })) });
      return 200;
    });
    const { url } = receiver;
    // Six VIPs: the even ones have an externalTrafficPolicy Cluster Service (no silent drop to mix in).
    stack = await startStack({
      nodes: 3,
      vips: 6,
      kube: true,
      cluster: true,
      requestIntervalMs: 100,
      hubConfig: { alerting: { groupWait: 0, allowHosts: ["127.0.0.1"] }, webhooks: [{ name: "count", url, format: "generic" }] },
    });
    // strictARP's sysctls on every node: only the speakers answer, as in a fixed cluster.
    for (const n of stack.lab.nodes) await stack.lab.setStrictArp(n, true);
    for (const n of stack.lab.nodes) owned.set(n.name, new Set(stack.lab.vips.filter((v) => stack.owners.get(v) === n.name)));
    await eventually(
      () => api<IpJson>(stack.url, stack.viewerToken, `ips/${vip(0)}`),
      (v) => v.state === "single",
      20_000,
    );
  });
  afterAll(async () => {
    await stack.stop();
    receiver.close();
  });

  const vip = (i: number) => stack.lab.vips[i] ?? "";
  const ownerOf = (ip: string) => [...owned].find(([, s]) => s.has(ip))?.[0] ?? null;
  const give = (ip: string, to: string | null, opts?: { quiet?: boolean; keep?: boolean }) => {
    for (const [node, s] of owned) {
      if (node === to || opts?.keep === true || !s.has(ip)) continue;
      s.delete(ip);
      stack.own(node, [...s]);
    }
    if (to === null) return;
    owned.get(to)?.add(ip);
    stack.own(to, [...(owned.get(to) ?? [])], opts);
  };
  /** status says, as MetalLB's ServiceL2Status does, which node announces the Service of VIP `i` now. */
  const status = (i: number, node: string) => {
    const kube = stack.api;
    if (kube === null) throw new Error("no API server");
    const r = resourceNamed("servicel2statuses");
    const name = `l2-web-${i}`;
    const body = {
      metadata: { name, labels: { "metallb.io/node": node } },
      status: { node, serviceName: `web-${i}`, serviceNamespace: "demo" },
    };
    if (kube.store.list(r, "metallb-system").some((o) => o.metadata.name === name))
      kube.store.update(r, "metallb-system", name, body, { status: true });
    else kube.store.create(r, "metallb-system", body);
  };
  /** The captures still running (a failed test leaves its own: afterEach stops them). */
  const running = new Set<ChildProcess>();
  afterEach(() => {
    for (const c of running) c.kill("SIGKILL");
    running.clear();
  });
  /** arpIn reads the ARP frames a capture file holds so far (tcpdump -U writes each as it comes; a half-written last one waits). */
  const arpIn = (file: string): Captured[] => {
    const out: Captured[] = [];
    const reader = new CaptureReader((b, s, _e, _l, t) => {
      const a = decodeArp(b, s + 14);
      if (a.ok) out.push({ t, op: a.value.op, mac: a.value.senderMac, ip: a.value.senderIp, target: a.value.targetIp });
    });
    if (existsSync(file)) reader.push(readFileSync(file));
    return out;
  };
  /** captured waits until the capture file holds what `ok` looks for. */
  const captured = (file: string, ok: (frames: Captured[]) => boolean) => eventually(async () => arpIn(file), ok, 15_000);
  const repliesFor = (frames: Captured[], ip: string) => frames.filter((f) => f.op === ARP_OP_REPLY && f.ip === ip);
  /**
   * capture records the client's link with tcpdump, as a person would on a client, from the moment the file holds an
   * answer for `ip` (the steady state before the scenario is in it); stop() returns the file once `until` holds of its
   * frames. Immediate mode: without it the kernel hands tcpdump a block of frames at a time, and the last block is lost
   * when tcpdump is stopped.
   */
  const capture = async (name: string, ip: string) => {
    const file = `${stack.logDir}/${name}.pcap`;
    const child = startTcpdump(stack.lab.client.ns, ["--immediate-mode", "-i", "eth0", "-U", "-w", file, "arp"]);
    running.add(child);
    await listening(child);
    await captured(file, (f) => repliesFor(f, ip).length > 0);
    const stop = async (until: (frames: Captured[]) => boolean) => {
      await captured(file, until);
      running.delete(child);
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGINT");
      await exited;
      return file;
    };
    return { file, stop };
  };
  /**
   * Two seconds of capture past `t`, a moment by which the hub had judged: `whohas analyze` judges once a second of
   * capture time (as the hub does of its clock), so the file then holds at least one judgement after `t`.
   */
  const pastBy = (t: number) => (frames: Captured[]) => frames.some((f) => f.t >= t + 2000);
  const analyze = async (file: string, owners: Record<string, string> = {}): Promise<AnalyzedIp[]> => {
    const args = [AGENT_MAIN, "analyze", "--json", ...Object.entries(owners).flatMap(([ip, mac]) => ["--owner", `${ip}=${mac}`]), file];
    const out = await exec(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 }).catch((e: { stdout: string }) => e);
    return (JSON.parse(out.stdout) as { ips: AnalyzedIp[] }).ips;
  };
  /**
   * firstAnsweredTwice finds the first request two MACs answered: its time, the time of its second answer, and the
   * time of the next request (the end of its round).
   */
  const firstAnsweredTwice = (frames: Captured[], ip: string) => {
    const requests = frames.filter((f) => f.op !== ARP_OP_REPLY && f.target === ip);
    for (const [i, asked] of requests.entries()) {
      const next = requests[i + 1]?.t ?? Infinity;
      const answers = frames.filter((f) => f.op === ARP_OP_REPLY && f.ip === ip && f.t >= asked.t && f.t < next);
      const second = answers.find((f) => f.mac !== answers[0]?.mac);
      if (second !== undefined) return { asked: asked.t, second: second.t, next };
    }
    return { asked: NaN, second: NaN, next: NaN };
  };
  /** findingsSince lists the findings of the IP's incidents that started at `t` or later. */
  const findingsSince = async (ip: string, t: number) =>
    findingsIn(await api<Incident[]>(stack.url, stack.viewerToken, `incidents?ip=${ip}`)).filter((f) => f.firstSeen >= t);
  /** Scenario time: how long a speaker holds or leaves an IP (never used to wait for the system under test). */
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("records 20 clean handovers with their gaps, and raises no finding, incident or notification; analyze agrees", async () => {
    const ip = vip(0);
    const t0 = Date.now();
    const { stop } = await capture("handovers", ip);
    const order = stack.lab.nodes.map((n) => n.name);
    for (let k = 0; k < 20; k++) {
      const from = ownerOf(ip) ?? order[0] ?? "";
      const to = order[(order.indexOf(from) + 1) % order.length] ?? "";
      // MetalLB: the owner's speaker goes (its node failed or left), a few requests go unanswered, the next node in
      // the election order takes the IP with its gratuitous burst, then the status follows.
      give(ip, null);
      await sleep(300);
      give(ip, to);
      await sleep(150);
      status(0, to);
      await sleep(2500);
    }
    const v = await eventually(
      () => api<IpJson>(stack.url, stack.viewerToken, `ips/${ip}`),
      // A handover's `announced` is known once the new owner's grace to announce has passed.
      (x) => x.handovers.length >= 20 && x.handovers.every((h) => h.announced !== null),
      10_000,
    );
    const last = v.handovers[v.handovers.length - 1];
    if (last === undefined) throw new Error("no handover");
    const file = await stop((f) => repliesFor(f, ip).some((r) => r.mac === last.to.mac && pastBy(last.at)([r])));
    expect(v.handovers).toHaveLength(20);
    for (const h of v.handovers) {
      expect(h.from.node).not.toBe(h.to.node);
      expect(h.announced).toBe(true);
      expect(h.gapMs).toBeGreaterThan(200);
      expect(h.gapMs).toBeLessThan(1000);
      expect(h.unanswered).toBeGreaterThanOrEqual(1);
    }
    expect(await findingsSince(ip, t0)).toEqual([]);
    // The stack starts with strictARP false (every node answers until beforeAll sets it): that finding is notified,
    // and may resolve during the scenario. The scenario itself must page for nothing.
    const paged = webhooks.filter((w) => w.ip === ip).flatMap((w) => w.alerts.filter((a) => a.status === "firing" && a.firstSeen >= t0));
    expect(paged).toEqual([]);
    // And the receiver does get what is paged: the start's several responders reached it.
    expect(webhooks.some((w) => w.ip === ip && w.alerts.some((x) => x.type === "multi-responder" && x.status === "firing"))).toBe(true);
    // The client's capture of the same minutes, judged offline: the same handovers (no nodes offline), no findings.
    const offline = (await analyze(file)).find((x) => x.ip === ip);
    expect(offline?.findings).toEqual([]);
    const live = v.handovers.map((h) => [h.from.mac, h.to.mac, h.unanswered]);
    // The capture starts after the first owner answered: every handover the hub saw is in the file.
    expect(offline?.handovers.map((h) => [h.from.mac, h.to.mac, h.unanswered])).toEqual(live);
    for (const [i, h] of (offline?.handovers ?? []).entries()) expect(Math.abs(h.gapMs - (v.handovers[i]?.gapMs ?? 0))).toBeLessThan(20);
  });

  it("raises split-brain (and several responders) when two speakers both own an IP; analyze agrees", async () => {
    const ip = vip(2);
    const t0 = Date.now();
    const { stop } = await capture("split-brain", ip);
    const owner = ownerOf(ip) ?? "";
    const other = stack.lab.nodes.map((n) => n.name).find((n) => n !== owner) ?? "";
    // Both speakers take the IP afresh, each with its gratuitous burst, and both keep it until the hub says so.
    give(ip, null);
    await sleep(300);
    give(ip, owner);
    give(ip, other, { keep: true });
    const types = async () => [...new Set((await findingsSince(ip, t0)).map((i) => i.type))].sort();
    await eventually(types, (t) => t.includes("split-brain") && t.includes("multi-responder"), 15_000);
    const file = await stop(pastBy(Date.now()));
    give(ip, owner);
    const offline = (await analyze(file)).find((x) => x.ip === ip);
    expect([...new Set(offline?.findings.map((f) => f.type))].sort()).toEqual(expect.arrayContaining(["multi-responder", "split-brain"]));
    const liveMacs = (await findingsSince(ip, t0)).find((i) => i.type === "multi-responder")?.macs;
    expect(offline?.findings.find((f) => f.type === "multi-responder")?.macs).toEqual(liveMacs);
  });

  it("raises stale-announcer and changed when the new owner takes over without announcing, until Force re-announce", async () => {
    const ip = vip(4);
    const t0 = Date.now();
    const { file: capturing, stop } = await capture("stale", ip);
    const from = ownerOf(ip) ?? "";
    const to = stack.lab.nodes.map((n) => n.name).find((n) => n !== from) ?? "";
    // The old owner announces as it takes the IP; later the new one takes it without a word (MetalLB before its
    // gratuitous-ARP rework), and its status follows.
    give(ip, null);
    await sleep(300);
    give(ip, from);
    await sleep(2000);
    give(ip, null);
    await sleep(300);
    give(ip, to, { quiet: true });
    status(4, to);
    const types = async () => [...new Set((await findingsSince(ip, t0)).map((i) => i.type))].sort();
    expect(await eventually(types, (t) => t.includes("stale-announcer"), 25_000)).toEqual(["changed", "stale-announcer"]);
    const shown = Date.now();
    const stale = (await findingsSince(ip, t0)).find((i) => i.type === "stale-announcer");
    // Both sides: the node clients were told about and the owner (an incident keeps its MACs sorted).
    expect(stale?.macs).toEqual([macOf(from), macOf(to)].sort());
    // The operator acts once the capture holds two seconds past the moment the hub showed it, so `whohas analyze` has
    // judged it too. (Not past its firstSeen: a stale announcer is dated by the announcement it is about.)
    await captured(capturing, pastBy(shown));
    // The suggested action: Force re-announce from the owner; its announcement is the last one now.
    const operator = await signIn(stack, "operator");
    await operator.mutate("actions.reannounce", { ip });
    await eventually(
      () => api<IpJson>(stack.url, stack.viewerToken, `ips/${ip}`),
      (v) => v.responders.find((r) => r.node === to)?.lastAnnouncement !== null,
      15_000,
    );
    // Its announcement reached the client.
    const file = await stop((f) => f.some((x) => x.mac === macOf(to) && x.ip === ip && x.target === ip && x.t > (stale?.firstSeen ?? 0)));
    const offline = (await analyze(file, { [ip]: macOf(to) })).find((x) => x.ip === ip);
    expect([...new Set(offline?.findings.map((f) => f.type))].sort()).toEqual(["changed", "stale-announcer"]);
  });

  it("raises ethernet-mismatch for a frame whose Ethernet source is not its ARP sender; analyze agrees", async () => {
    const ip = "198.18.0.99";
    const t0 = Date.now();
    const { stop } = await capture("mismatch", vip(0));
    const frame = newGratuitousArp(ARP_OP_REPLY, "02:00:5e:00:99:01", ip);
    frame.set([0x02, 0x00, 0x5e, 0x00, 0x99, 0x02], 6); // the Ethernet source lies (Microsoft NLB's way)
    await exec("ip", ["netns", "exec", stack.lab.client.ns, process.execPath, INJECT, "eth0", Buffer.from(frame).toString("hex")]);
    const found = await eventually(
      () => findingsSince(ip, t0),
      (list) => list.some((i) => i.type === "ethernet-mismatch"),
      10_000,
    );
    expect(found.find((i) => i.type === "ethernet-mismatch")?.macs).toEqual(["02:00:5e:00:99:01", "02:00:5e:00:99:02"]);
    const file = await stop((f) => {
      const sent = f.find((x) => x.ip === ip);
      return sent !== undefined && pastBy(sent.t)(f);
    });
    const offline = (await analyze(file)).find((x) => x.ip === ip);
    expect(offline?.findings.map((f) => [f.type, f.macs])).toEqual([["ethernet-mismatch", ["02:00:5e:00:99:01", "02:00:5e:00:99:02"]]]);
  });

  // Last: with strictARP's sysctls gone, every node's kernel answers for every VIP on its kube-ipvs0.
  it("raises several responders from the first request the kernels answer (strictARP false); analyze agrees", async () => {
    const ip = vip(0);
    const t0 = Date.now();
    const { stop } = await capture("strictarp-false", ip);
    for (const n of stack.lab.nodes) await stack.lab.setStrictArp(n, false);
    // The nodes turn loose one after the other: the first request answered twice may have two of the three, and
    // the incident gains the third with the next requests.
    const seen = await eventually(
      () => findingsSince(ip, t0),
      (list) => list.some((i) => i.type === "multi-responder" && i.macs.length === stack.lab.nodes.length),
      10_000,
    );
    const opened = seen.find((i) => i.type === "multi-responder");
    expect(opened?.macs.map(nodeOfMac).sort()).toEqual(stack.lab.nodes.map((n) => n.name).sort());
    const file = await stop(pastBy(Date.now()));
    const offline = (await analyze(file)).find((x) => x.ip === ip);
    const found = offline?.findings.find((f) => f.type === "multi-responder");
    expect(found?.macs).toEqual(opened?.macs);
    // Both judges date the finding by the first request two nodes answered: analyze by the client's capture of that
    // request (to the millisecond; its answers may come milliseconds later on a busy machine), the hub by its agents'
    // copy of it, within the same request's round (agents date a frame when libpcap hands it over, so a little later
    // than the client's kernel).
    const round = firstAnsweredTwice(arpIn(file), ip);
    expect(Math.abs(Date.parse(found?.firstSeen ?? "") - round.asked)).toBeLessThanOrEqual(1);
    expect(round.second).toBeGreaterThanOrEqual(round.asked);
    // The hub keeps whole milliseconds; the client's capture has microseconds.
    expect(opened?.firstSeen).toBeGreaterThanOrEqual(Math.floor(round.asked));
    expect(opened?.firstSeen).toBeLessThan(round.next);
  });

  // The harm as the client feels it: each time its request is first answered by another node, it re-learns the
  // VIP's MAC and its connections through the old node drop. The kernels race for every request while strictARP is
  // false; with it true again only the owner's speaker answers, and the first answer stays put.
  it("counts the client's first-answer changes while the kernels race (strictARP false), and none once strictARP is back", async () => {
    const ip = vip(0);
    const { ip: clientIp, mac: clientMac } = stack.lab.client;
    const client = async () => (await api<IpJson>(stack.url, stack.viewerToken, `ips/${ip}`)).askers.find((a) => a.ip === clientIp);
    for (const n of stack.lab.nodes) await stack.lab.setStrictArp(n, false);
    const before = (await client())?.firstAnswerChanges ?? 0;
    // Ten requests a second, three kernels answering each: the first answer changes node within seconds.
    const racing = await eventually(client, (a) => a !== undefined && a.firstAnswerChanges > before, 15_000);
    expect(racing).toMatchObject({ mac: clientMac, ip: clientIp });
    expect(racing?.changesPerHour).toBeGreaterThan(0);
    const metrics = await (await fetch(stack.metricsUrl)).text();
    const series = new RegExp(`whohas_first_answer_changes_total\\{ip="${ip.replace(/\./g, "\\.")}",[^}]*\\} (\\d+)`).exec(metrics);
    expect(Number(series?.[1])).toBeGreaterThan(0);

    for (const n of stack.lab.nodes) await stack.lab.setStrictArp(n, true);
    // A request is counted once final, FINAL_MS (2 s) after it was asked: those counted by now were asked before the
    // last node turned strict, and 25 more take every request asked in the race (one may still be a change).
    const strict = await client();
    const settled = await eventually(client, (a) => a !== undefined && a.requests >= (strict?.requests ?? 0) + 25, 10_000);
    // Sixty more requests (six seconds), each answered by the owner's speaker alone: not one change more.
    const after = await eventually(client, (a) => a !== undefined && a.requests >= (settled?.requests ?? 0) + 60, 15_000);
    expect(after?.firstAnswerChanges).toBe(settled?.firstAnswerChanges);
    expect((await api<IpJson>(stack.url, stack.viewerToken, `ips/${ip}`)).state).not.toBe("multi-responder");
  });
});
