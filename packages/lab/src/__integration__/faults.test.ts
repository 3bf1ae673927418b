import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import WebSocket from "ws";
import { SILENCE_MS } from "@whohas/core";
import { REPO_ROOT, REQUESTER, startStack, type Stack } from "../stack.js";
import { vipAt } from "../lab.js";
import { startPostgres, type TestPostgres } from "../postgres.js";
import { resourceNamed } from "../kube/resources.js";
import { api as readApi, eventually, findingsIn, passed, signIn, type IncidentView as Incident } from "./hub-client.js";
import { record } from "./reliability.js";
import { notifying, webhookReceiver, type WebhookReceiver } from "./webhook-receiver.js";

const exec = promisify(execFile);
const FLOOD = `${REPO_ROOT}packages/lab/dist/flood.js`;

interface ApiIp {
  ip: string;
  requests: number;
  services: { name: string }[];
  responders: { mac: string; node: string | null; replies: number; answering: boolean }[];
  timeline?: { minute: number; mac: string; kind: string; count: number }[];
}
interface NodeRow {
  node: string;
  agent: { up: boolean };
  capture: { rejected: Record<string, number>; kernelDropped: number; bufferDropped: number } | null;
}
interface Cluster {
  inventoryStale: { since: number; message: string } | null;
}
interface Delivery {
  id: string;
  status: string;
  attempts: number;
  /** When a pending one is tried next. */
  nextAttemptAt: number | null;
}
interface Audit {
  t: number;
  actor: string;
  action: string;
  outcome: string;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const n = (x: number) => x.toLocaleString("en-US");
const count = (x: number, one: string, many = `${one}s`) => `${n(x)} ${x === 1 ? one : many}`;

/**
 * killedHubComesBack kills the stack's hub with SIGKILL while an incident is open and acknowledged and notifications
 * wait in the outbox (its receiver answers 503, each sending noted in `received`), restarts it, and checks that the
 * history, incidents, audit log and outbox come back, with a retry of the first pending delivery under its id.
 */
async function killedHubComesBack(stack: Stack, received: readonly { id: string; at: number }[], engine: string): Promise<void> {
  const api = <T>(path: string) => readApi<T>(stack.url, stack.viewerToken, path);
  const ip = (addr: string) => api<ApiIp>(`ips/${addr}`);
  const vip = stack.lab.vips[0] ?? "";
  const op = await signIn(stack, "operator");
  const admin = await signIn(stack, "admin");
  const open = await eventually(
    () => api<Incident[]>(`incidents?state=open&ip=${vip}`),
    (i) => i.length > 0,
    30_000,
  );
  const ack = await op.mutate("incidents.acknowledge", { id: open[0]?.id });
  expect(ack.status).toBe(200);
  const acked = (await api<Incident[]>(`incidents?state=open&ip=${vip}`)).find((x) => x.id === open[0]?.id);
  expect(acked?.acknowledgedBy).toBe(stack.users.operator.name);
  await eventually(
    () => admin.query<Delivery[]>("alerts.deliveries"),
    (d) => d.some((x) => x.status === "pending" && x.attempts >= 1),
    30_000,
  );
  const before = {
    ip: await ip(vip),
    open: await api<Incident[]>("incidents?state=open"),
    audit: await admin.query<Audit[]>("settings.audit"),
    outbox: await admin.query<Delivery[]>("alerts.deliveries"),
  };
  // Incidents, audit and outbox are written as they happen, traffic on the next write pass: what the hub showed
  // before that pass must all be there after the crash.
  await passed(stack, "write");
  await stack.killHub();
  const restarted = Date.now();
  await stack.startHub();
  const adminAfter = await signIn(stack, "admin");
  const after = {
    ip: await ip(vip),
    open: await api<Incident[]>("incidents?state=open"),
    audit: await adminAfter.query<Audit[]>("settings.audit"),
    outbox: await adminAfter.query<Delivery[]>("alerts.deliveries"),
  };
  const key = (p: { minute: number; mac: string; kind: string }) => `${p.minute}|${p.mac}|${p.kind}`;
  const later = new Map((after.ip.timeline ?? []).map((p) => [key(p), p.count]));
  const lostRows = (before.ip.timeline ?? []).filter((p) => (later.get(key(p)) ?? 0) < p.count);
  expect(before.ip.timeline?.length ?? 0).toBeGreaterThan(0);
  expect(lostRows).toEqual([]);
  // Each subject's incident goes on, with the findings it held.
  for (const i of before.open) expect(after.open.find((x) => x.ip === i.ip)?.id).toBe(i.id);
  // An incident may also hold an earlier, resolved finding of the same type (a flip-flop that ended and came back):
  // the open one is compared with the open one.
  const openFindings = (incidents: Incident[]) => findingsIn(incidents).filter((f) => f.resolvedAt === null);
  for (const f of openFindings(before.open))
    expect(openFindings(after.open).find((x) => x.incidentId === f.incidentId && x.type === f.type)?.firstSeen).toBe(f.firstSeen);
  // The acknowledgement comes back, unless something new went wrong since: a finding that joined the incident after
  // it (three nodes answering may well add a flip-flop) rightly asks for a fresh look.
  const now = after.open.find((x) => x.id === open[0]?.id);
  const joined = (now?.facets ?? []).filter((f) => !(acked?.facets ?? []).some((a) => a.type === f.type && a.firstSeen === f.firstSeen));
  if (joined.length > 0) console.log(`joined the incident after its acknowledgement: ${joined.map((f) => f.type).join(", ")}`);
  expect(now?.acknowledgedBy).toBe(joined.length === 0 ? stack.users.operator.name : null);
  const auditKey = (a: Audit) => `${a.t}|${a.actor}|${a.action}|${a.outcome}`;
  expect(after.audit.map(auditKey)).toEqual(expect.arrayContaining(before.audit.map(auditKey)));
  expect(before.audit.some((a) => a.action === "incident.acknowledge")).toBe(true);
  for (const d of before.outbox) expect(after.outbox.find((x) => x.id === d.id)?.attempts).toBeGreaterThanOrEqual(d.attempts);
  // Deliveries pending at the kill are kept with their attempts, and the new process retries them when due: the
  // one due first reaches the receiver again, with the same id, after the restart. When it is due is read from the
  // new process: the old one may have tried it again between the snapshot and the kill, which backs it off further.
  const pending = before.outbox.filter((d) => d.status === "pending");
  for (const d of pending) expect(after.outbox.find((x) => x.id === d.id)?.status).toMatch(/^(pending|failed|delivered)$/);
  const stillPending = after.outbox.filter((d) => d.status === "pending" && pending.some((p) => p.id === d.id));
  const first = [...stillPending].sort((a, b) => (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0))[0];
  if (first === undefined) throw new Error("no delivery pending at the kill was still pending after the restart");
  await eventually(
    async () => received.filter((r) => r.id === first.id && r.at >= restarted),
    (sent) => sent.length > 0,
    Math.max(0, (first.nextAttemptAt ?? 0) - Date.now()) + 20_000,
  );
  const retried = await eventually(
    async () => (await adminAfter.query<Delivery[]>("alerts.deliveries")).find((x) => x.id === first.id),
    (d) => (d?.attempts ?? 0) > first.attempts,
    10_000,
  );
  expect(retried?.status).toBe("pending"); // the receiver still answers 503
  record({
    fault: engine === "SQLite" ? "Hub killed with SIGKILL" : `Hub on ${engine} killed with SIGKILL`,
    checked:
      "per-minute history of a VIP, open incidents (with an acknowledgement), audit log and webhook outbox read through the API before the kill and after the restart",
    result:
      `all there: ${count(before.ip.timeline?.length ?? 0, "history row")} (none lower), ` +
      `${count(before.open.length, "open incident")} with the same ids, ${count(before.audit.length, "audit entry", "audit entries")}, ` +
      `${count(before.outbox.length, "outbox delivery", "outbox deliveries")} (the ${count(pending.length, "pending one")} kept, ` +
      "with their attempts; the first due sent again by the new process)",
  });
}

// Faults in the lab, each asserting that nothing is lost: the hub stopped and killed, an agent killed, the API server
// down, floods of malformed frames and messages. Each passing test records its row for docs/reliability.md.
describe("faults: nothing is lost", () => {
  let stack: Stack;
  let receiver: WebhookReceiver;
  /** Each notification the receiver was sent: its webhook-id (the outbox row's id) and when. */
  const received: { id: string; at: number }[] = [];
  const api = <T>(path: string) => readApi<T>(stack.url, stack.viewerToken, path);
  const ip = (addr: string) => api<ApiIp>(`ips/${addr}`);
  const nodes = () => api<NodeRow[]>("nodes");
  const allUp = async () => (await nodes()).filter((n) => n.agent.up).length === stack.lab.nodes.length;
  /** An IP every node answers for that nobody else asks about: its counts are exactly what a test sends. */
  const answeredByAll = async (addr: string) => {
    for (const n of stack.lab.nodes) await exec("ip", ["-n", n.ns, "addr", "add", `${addr}/32`, "dev", "kube-ipvs0"]);
  };
  const ask = async (addr: string, count: number, intervalMs: number) => {
    const { stdout } = await exec(
      "ip",
      [
        "netns",
        "exec",
        stack.lab.client.ns,
        process.execPath,
        REQUESTER,
        `--count=${count}`,
        "eth0",
        stack.lab.client.ip,
        String(intervalMs),
        addr,
      ],
      { timeout: count * intervalMs + 30_000 },
    );
    return Number(/sent (\d+)/.exec(stdout)?.[1] ?? 0);
  };

  beforeAll(async () => {
    // A receiver that keeps failing, so that notifications wait in the outbox when the hub is killed.
    receiver = await webhookReceiver((_body, headers) => {
      received.push({ id: String(headers["webhook-id"]), at: Date.now() });
      return 503;
    });
    stack = await startStack({
      nodes: 3,
      vips: 2,
      kube: true,
      requestIntervalMs: 500,
      hubConfig: notifying(receiver, "down"),
    });
    await eventually(allUp, (ok) => ok, 20_000);
  });
  afterAll(async () => {
    await stack.stop();
    receiver.close();
  });

  it("hub stopped for 2 minutes while traffic flows: the agents buffer and deliver every frame", async () => {
    const fresh = vipAt(40);
    await answeredByAll(fresh);
    await stack.stopHub();
    const t0 = Date.now();
    // 240 requests, one every 500 ms: the 2 minutes of the outage. Every node answers each.
    const sent = await ask(fresh, 240, 500);
    const outage = Date.now() - t0;
    await stack.startHub();
    await eventually(allUp, (ok) => ok, 30_000);
    const v = await eventually(
      () => ip(fresh),
      (x) => x.requests >= sent && x.responders.length === 3 && x.responders.every((r) => r.replies >= sent),
      30_000,
    );
    expect(sent).toBe(240);
    expect(outage).toBeGreaterThanOrEqual(119_000);
    expect(v.requests).toBe(sent);
    expect(v.responders.map((r) => r.replies)).toEqual([sent, sent, sent]);
    const dropped = (await nodes()).reduce((a, n) => a + (n.capture?.bufferDropped ?? 0), 0);
    expect(dropped).toBe(0);
    record({
      fault: "Hub stopped for 2 minutes while traffic flows",
      checked: `${sent} ARP requests for a fresh IP sent during a ${seconds(outage)} outage, each answered by 3 nodes; counts in the hub after the agents reconnect`,
      result: `the hub shows ${v.requests} requests and ${v.responders.map((r) => r.replies).join(" / ")} replies (sent: ${sent} each); agents' buffer drops: ${dropped}`,
    });
  }, 300_000);

  it(
    "hub killed with SIGKILL: history, incidents, audit log and outbox come back",
    () => killedHubComesBack(stack, received, "SQLite"),
    360_000,
  );

  it("agent killed: down within 30 s, and the restarted agent resumes", async () => {
    await eventually(allUp, (ok) => ok, 30_000);
    const vip = stack.lab.vips[0] ?? "";
    const node = "node-3";
    const t0 = Date.now();
    await stack.stopAgent(node);
    let downAfter: number;
    let downIncident: Incident[];
    let incidentAfter: number;
    try {
      await eventually(nodes, (n) => n.find((x) => x.node === node)?.agent.up === false, 35_000);
      downAfter = Date.now() - t0;
      expect(downAfter).toBeLessThan(30_000);
      // The incident opens after 30 s of silence (AGENT_SILENCE_MS), not at the first missed heartbeat.
      downIncident = await eventually(
        () => api<Incident[]>("incidents?state=open"),
        (i) => findingsIn(i).some((x) => x.ip === `node/${node}` && x.type === "agent-down" && x.resolvedAt === null),
        45_000,
      );
      incidentAfter = Date.now() - t0;
    } catch (e) {
      stack.startAgent(node);
      throw e;
    }
    const incident = downIncident.find((x) => x.ip === `node/${node}`);
    const replies = async () => (await ip(vip)).responders.find((r) => r.node === node)?.replies ?? 0;
    const r0 = await replies();
    const t1 = Date.now();
    stack.startAgent(node);
    await eventually(nodes, (n) => n.find((x) => x.node === node)?.agent.up === true, 20_000);
    const upAfter = Date.now() - t1;
    await eventually(replies, (r) => r >= r0 + 4, 15_000);
    record({
      fault: "Agent killed (SIGKILL)",
      checked: "the node's agent state and incidents through the read API; its replies for a VIP after the restart",
      result: `shown down after ${seconds(downAfter)} (the kernel closed its socket), an agent-down incident (#${incident?.id ?? "?"}) seen open ${seconds(incidentAfter)} after the kill (the read API polled every 0.25 s); up again ${seconds(upAfter)} after the restart, its replies counted again`,
    });
  }, 180_000);

  it("agent frozen: its open connection is down within two pings, with an agent-down incident; thawed, it is back", async () => {
    await eventually(allUp, (ok) => ok, 30_000);
    const node = "node-2";
    const t0 = Date.now();
    stack.freezeAgent(node);
    let downAfter: number;
    try {
      await eventually(nodes, (n) => n.find((x) => x.node === node)?.agent.up === false, 45_000);
      downAfter = Date.now() - t0;
      // Nothing closed the connection: the hub's pings went unanswered (one every PING_MS; the second missed pong
      // drops it), before the 30 s of silence would have.
      expect(downAfter).toBeLessThanOrEqual(SILENCE_MS);
      await eventually(
        () => api<Incident[]>("incidents?state=open"),
        (i) => findingsIn(i).some((x) => x.ip === `node/${node}` && x.type === "agent-down" && x.resolvedAt === null),
        45_000,
      );
    } finally {
      stack.thawAgent(node);
    }
    await eventually(nodes, (n) => n.find((x) => x.node === node)?.agent.up === true, 45_000);
    record({
      fault: "Agent frozen (SIGSTOP), its connection open and silent",
      checked: "the node's agent state and incidents through the read API, polled every 0.25 s",
      result: `shown down ${seconds(downAfter)} after the freeze (its socket stayed open: unanswered pings, every 10 s, dropped it), with an agent-down incident; up again once thawed`,
    });
  }, 150_000);

  it("API server down for a minute: inventory shown stale with its age, informers relist, incidents neither lost nor doubled", async () => {
    const kube = stack.api;
    if (kube === null) throw new Error("the stack has no test API server");
    const vips = stack.lab.vips;
    await eventually(
      () => api<Cluster>("cluster"),
      (c) => c.inventoryStale === null,
      20_000,
    );
    const openOf = async () => (await api<Incident[]>("incidents?state=open")).filter((i) => vips.includes(i.ip));
    const allOf = async () => (await api<Incident[]>("incidents?limit=500")).filter((i) => vips.includes(i.ip));
    const openBefore = await openOf();
    const allBefore = await allOf();
    expect(openBefore.length).toBeGreaterThan(0);
    const listsBefore = kube.lists.get("services") ?? 0;
    const t0 = Date.now();
    await kube.down();
    const stale = await eventually(
      () => api<Cluster>("cluster"),
      (c) => c.inventoryStale !== null,
      30_000,
    );
    const noticed = Date.now() - t0;
    // While it is down: a new LoadBalancer Service, and the history a watch could resume from is compacted away.
    const added = vipAt(41);
    kube.store.create(resourceNamed("services"), "demo", {
      metadata: { name: "added-while-down" },
      spec: { type: "LoadBalancer", externalTrafficPolicy: "Cluster", ports: [{ port: 443, protocol: "TCP" }] },
      status: { loadBalancer: { ingress: [{ ip: added }] } },
    });
    kube.store.compact();
    await new Promise((r) => setTimeout(r, Math.max(0, 60_000 - (Date.now() - t0))));
    const during = await api<Cluster>("cluster");
    const ageAtMinute = Date.now() - (during.inventoryStale?.since ?? Date.now());
    expect(during.inventoryStale).not.toBeNull();
    expect(ageAtMinute).toBeGreaterThan(50_000);
    // Services and owners stay as they were: the VIPs keep their Services.
    expect((await ip(vips[0] ?? "")).services.length).toBeGreaterThan(0);
    expect((await openOf()).map((i) => i.id).sort()).toEqual(openBefore.map((i) => i.id).sort());
    await kube.up();
    const t1 = Date.now();
    await eventually(
      () => api<Cluster>("cluster"),
      (c) => c.inventoryStale === null,
      60_000,
    );
    const recovered = Date.now() - t1;
    const shown = await eventually(
      () => ip(added).catch(() => null),
      (v) => v?.services.some((s) => s.name === "added-while-down") === true,
      30_000,
    );
    expect(shown?.ip).toBe(added);
    expect((kube.lists.get("services") ?? 0) - listsBefore).toBeGreaterThanOrEqual(1);
    // Two judging passes over what the agents sent since: no incident may open or close.
    await passed(stack, "judge");
    await passed(stack, "judge");
    const openAfter = await openOf();
    expect(openAfter.map((i) => i.id).sort()).toEqual(openBefore.map((i) => i.id).sort());
    // One incident per subject.
    expect(new Set(openAfter.map((i) => i.ip)).size).toBe(openAfter.length);
    expect((await allOf()).length).toBe(allBefore.length);
    record({
      fault: "Test API server down for a minute",
      checked:
        "the read API's cluster summary and incidents of the VIPs during and after; a Service created and the watch history compacted while down",
      result:
        `stale shown ${seconds(noticed)} after the cut, with its age (${seconds(ageAtMinute)} at the minute: ` +
        `"${stale.inventoryStale?.message ?? ""}"); in sync ${seconds(recovered)} after the server returned, by relisting ` +
        `(410 Gone, ${count((kube.lists.get("services") ?? 0) - listsBefore, "new list")} of Services); the new Service shown; ` +
        `${count(openAfter.length, "open incident")} with the same ids, none opened or closed`,
    });
  }, 240_000);

  it("100,000 malformed frames on the wire: no crash, every one counted, the rest keeps working", async () => {
    await eventually(allUp, (ok) => ok, 30_000);
    const vip = stack.lab.vips[0] ?? "";
    const bad = (n: NodeRow) =>
      (n.capture?.rejected.truncated ?? 0) + (n.capture?.rejected.malformed ?? 0) + (n.capture?.rejected.unsupported ?? 0);
    const before = new Map((await nodes()).map((n) => [n.node, { bad: bad(n), kernel: n.capture?.kernelDropped ?? 0 }]));
    const r0 = (await ip(vip)).requests;
    const t0 = Date.now();
    const { stdout } = await exec("ip", ["netns", "exec", stack.lab.client.ns, process.execPath, FLOOD, "eth0", "100000", "20000"], {
      timeout: 60_000,
    });
    const took = Date.now() - t0;
    const sent = JSON.parse(stdout) as { sent: number; truncated: number; malformed: number; unsupported: number };
    expect(sent.sent).toBe(100_000);
    // Facts (with the counts) come every 10 s.
    const after = await eventually(
      nodes,
      (ns) =>
        ns.every(
          (n) => bad(n) + (n.capture?.kernelDropped ?? 0) - (before.get(n.node)?.bad ?? 0) - (before.get(n.node)?.kernel ?? 0) >= sent.sent,
        ),
      40_000,
    );
    const counted = after.map((n) => bad(n) - (before.get(n.node)?.bad ?? 0));
    const kernel = after.map((n) => (n.capture?.kernelDropped ?? 0) - (before.get(n.node)?.kernel ?? 0));
    for (let i = 0; i < after.length; i++) expect((counted[i] ?? 0) + (kernel[i] ?? 0)).toBe(sent.sent);
    expect(after.every((n) => n.agent.up)).toBe(true);
    await eventually(
      async () => (await ip(vip)).requests,
      (r) => r >= r0 + 4,
      15_000,
    );
    record({
      fault: "100,000 malformed frames on the wire",
      checked: `${n(sent.sent)} broadcast ARP frames (${n(sent.truncated)} truncated, ${n(sent.malformed)} with impossible lengths, ${n(sent.unsupported)} unknown operations) in ${seconds(took)}; each agent's counters through the hub`,
      result: `no agent crashed or disconnected; counted per agent: ${counted.map(n).join(" / ")} rejected + ${kernel.map(n).join(" / ")} dropped by the kernel = ${n(sent.sent)} each; the VIPs' requests kept counting`,
    });
  });

  it("10,000 malformed WebSocket messages: no crash, every one counted, the real agents carry on", async () => {
    const metric = async () => {
      const text = await (await fetch(stack.metricsUrl)).text();
      return [...text.matchAll(/^whohas_hub_agent_bad_messages_total\{[^}]*\} (\d+)$/gm)].reduce((a, m) => a + Number(m[1]), 0);
    };
    const m0 = await metric();
    const vip = stack.lab.vips[0] ?? "";
    const r0 = (await ip(vip)).requests;
    const junk: (string | Buffer)[] = [
      "{",
      "null",
      JSON.stringify({ v: 2, type: "observations", entries: [{ ip: "x" }], dropped: 0 }),
      JSON.stringify({ v: 9, type: "telemetry" }),
      Buffer.from([0xde, 0xad, 0xbe, 0xef]),
    ];
    const t0 = Date.now();
    // Five fuzzing clients with the agents' token, 2,000 bad messages each, under the per-agent rate (200/s). The hub
    // lets in only agents of the cluster's Nodes: the fuzzers get Nodes of their own.
    for (let c = 0; c < 5; c++) stack.api?.store.create(resourceNamed("nodes"), null, { metadata: { name: `lab-fuzzer-${c}` } });
    /** welcomed connects as `node` and resolves once the hub welcomed it (it may not have seen the new Node yet). */
    const welcomed = async (node: string): Promise<WebSocket> => {
      for (;;) {
        const ws = new WebSocket(`ws://127.0.0.1:${stack.port}/agent`, { headers: { authorization: `Bearer ${stack.token}` } });
        await new Promise((r) => ws.once("open", r));
        ws.send(JSON.stringify({ v: 2, type: "hello", node, agentVersion: "fuzz", interfaces: [] }));
        const ok = await new Promise<boolean>((resolve) => {
          ws.once("message", () => resolve(true));
          ws.once("close", () => resolve(false));
        });
        if (ok) return ws;
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    const closed: number[] = [];
    await Promise.all(
      Array.from({ length: 5 }, async (_, c) => {
        const ws = await welcomed(`lab-fuzzer-${c}`);
        ws.on("close", (code) => closed.push(code));
        for (let i = 0; i < 2000; i++) {
          const j = junk[i % junk.length] ?? "{";
          ws.send(j, { binary: typeof j !== "string" });
          if (i % 19 === 18) await new Promise((r) => setTimeout(r, 100));
        }
        // The hub reads a connection's frames in order: its pong comes after it has handled every message above.
        const pong = once(ws, "pong");
        ws.ping();
        await pong;
        expect(ws.readyState).toBe(WebSocket.OPEN);
        const gone = once(ws, "close");
        ws.close();
        await gone;
      }),
    );
    const took = Date.now() - t0;
    const counted = (await eventually(metric, (m) => m - m0 >= 10_000, 10_000)) - m0;
    expect(counted).toBe(10_000);
    // Every connection stayed open through its junk and closed when the client chose: normally, never by the hub.
    expect(closed).toHaveLength(5);
    expect(closed.every((c) => c === 1005 || c === 1000)).toBe(true);
    expect(await allUp()).toBe(true);
    await eventually(
      async () => (await ip(vip)).requests,
      (r) => r >= r0 + 4,
      15_000,
    );
    record({
      fault: "10,000 malformed WebSocket messages",
      checked: `5 authenticated clients sending 2,000 each (not JSON, null, a bad observation, an unknown type, binary) in ${seconds(took)}; whohas_hub_agent_bad_messages_total`,
      result: `counted ${n(counted)}; each dropped with the connection kept; the hub and the 3 real agents carried on, the VIPs' requests kept counting`,
    });
  });
});

// The same crash with the hub's store on PostgreSQL: what a process keeps in memory and writes later must be the
// same on either engine.
describe("faults on PostgreSQL: nothing is lost", () => {
  let stack: Stack;
  let receiver: WebhookReceiver;
  let pg: TestPostgres;
  let dir: string;
  const received: { id: string; at: number }[] = [];

  beforeAll(async () => {
    pg = await startPostgres();
    dir = await mkdtemp(join(tmpdir(), "whohas-faults-"));
    receiver = await webhookReceiver((_body, headers) => {
      received.push({ id: String(headers["webhook-id"]), at: Date.now() });
      return 503;
    });
    stack = await startStack({
      nodes: 3,
      vips: 2,
      kube: true,
      requestIntervalMs: 500,
      hubConfig: { ...notifying(receiver, "down"), storage: { path: join(dir, "whohas.db"), url: pg.url, retention: "1d" } },
    });
    const nodes = () => readApi<NodeRow[]>(stack.url, stack.viewerToken, "nodes");
    await eventually(
      async () => (await nodes()).filter((n) => n.agent.up).length === stack.lab.nodes.length,
      (ok) => ok,
      20_000,
    );
  }, 120_000);
  afterAll(async () => {
    await stack.stop();
    receiver.close();
    await pg.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("hub killed with SIGKILL: history, incidents, audit log and outbox come back", async () => {
    await killedHubComesBack(stack, received, "PostgreSQL");
    // What came back came from PostgreSQL: psql, an independent client, finds the incidents and the outbox there.
    const psql = async (sql: string) => Number((await exec("psql", [pg.url, "-tAc", sql])).stdout.trim());
    expect(await psql("SELECT COUNT(*) FROM incidents")).toBeGreaterThan(0);
    expect(await psql("SELECT COUNT(*) FROM outbox")).toBeGreaterThan(0);
  }, 360_000);
});
