// Two hub replicas on one PostgreSQL: the first leads, the second stands by. The leader is killed with SIGKILL, as a
// node lost or an OOM kill would end it: the agents (given both addresses) move to the second within 5 s, the second
// takes the judging and the webhook outbox over, and no incident or notification is doubled or lost across the
// switch, as counted at the webhook receiver. The hubs, agents, kernels and PostgreSQL are the real ones.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPostgres, type TestPostgres } from "../postgres.js";
import { startStack, type Replica, type Stack } from "../stack.js";
import { api, eventually, signIn, type IncidentView as Incident } from "./hub-client.js";
import { notifying, webhookReceiver, type WebhookReceiver } from "./webhook-receiver.js";

interface NodeRow {
  node: string;
  agent: { up: boolean };
}
interface Delivery {
  id: string;
  ip: string;
  status: string;
  attempts: number;
  createdAt: number;
}
interface Sent {
  id: string;
  at: number;
  alerts: { incidentId: number; type: string; status: string }[];
}

describe("hub replicas: the leader killed, the standby takes over", () => {
  let stack: Stack;
  let pg: TestPostgres;
  let receiver: WebhookReceiver;
  let dir: string;
  const sent: Sent[] = [];
  /** What the receiver answers: 503 holds notifications in the outbox (until the switch), 200 takes them. */
  let answer = 503;

  beforeAll(async () => {
    pg = await startPostgres();
    dir = await mkdtemp(join(tmpdir(), "whohas-replicas-"));
    receiver = await webhookReceiver((body, headers) => {
      const b = JSON.parse(body) as { alerts: Sent["alerts"] };
      sent.push({ id: String(headers["webhook-id"]), at: Date.now(), alerts: b.alerts });
      return answer;
    });
    stack = await startStack({
      nodes: 3,
      vips: 2,
      replicas: 2,
      requestIntervalMs: 500,
      hubConfig: { ...notifying(receiver, "ops"), storage: { path: join(dir, "whohas.db"), url: pg.url, retention: "1d" } },
    });
  }, 180_000);
  afterAll(async () => {
    await stack.stop();
    receiver.close();
    await pg.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const replica = (name: string): Replica => {
    const r = stack.replicas.find((x) => x.name === name);
    if (r === undefined) throw new Error(`no replica ${name}`);
    return r;
  };
  const read = <T>(r: Replica, path: string) => api<T>(r.url, stack.viewerToken, path);
  const readyz = async (r: Replica) => {
    const res = await fetch(new URL("/readyz", r.metricsUrl));
    return { status: res.status, body: await res.text() };
  };
  const leaderGauge = async (r: Replica) => /^whohas_hub_leader (\d)$/m.exec(await (await fetch(r.metricsUrl)).text())?.[1];

  it("the standby passes people's requests to the leader and names it; agents are the leader's alone", async () => {
    const [one, two] = [replica("hub-1"), replica("hub-2")];
    await eventually(
      async () => (await read<NodeRow[]>(one, "nodes")).filter((n) => n.agent.up).length,
      (n) => n === 3,
      20_000,
    );
    expect(await readyz(one)).toMatchObject({ status: 200 });
    const standby = await readyz(two);
    expect(standby.status).toBe(200);
    expect(JSON.parse(standby.body)).toMatchObject({ role: "standby", replica: "hub-2", leader: "hub-1" });
    // The read API and a signed-in dashboard session through the standby: the leader's live view.
    expect((await read<NodeRow[]>(two, "nodes")).filter((n) => n.agent.up)).toHaveLength(3);
    const viewer = await signIn({ url: two.url, users: stack.users }, "viewer");
    expect((await viewer.query<unknown[]>("ips.list")).length).toBeGreaterThan(0);
    expect(await leaderGauge(one)).toBe("1");
    expect(await leaderGauge(two)).toBe("0");
  });

  it("SIGKILL on the leader: agents on the standby within 5 s, incidents and the outbox carried over, nothing doubled", async () => {
    const [one, two] = [replica("hub-1"), replica("hub-2")];
    const vip = stack.lab.vips[0] ?? "";
    // Every node answers for the VIP: an incident, whose notification the receiver refuses: it waits in the outbox.
    const opened = await eventually(
      () => read<Incident[]>(one, `incidents?state=open&ip=${vip}`),
      (i) => i.length === 1 && sent.some((s) => s.alerts.some((a) => a.incidentId === i[0]?.id)),
      30_000,
    );
    const admin = await signIn({ url: one.url, users: stack.users }, "admin");
    const waiting = await eventually(
      () => admin.query<Delivery[]>("alerts.deliveries"),
      (d) => d.some((x) => x.status === "pending" && x.attempts >= 1),
      30_000,
    );
    const before = {
      open: await read<Incident[]>(one, "incidents?state=open"),
      deliveries: waiting,
    };

    // A dashboard session opened through the standby before the kill: its cookie is in PostgreSQL, not in a process.
    const viewer = await signIn({ url: two.url, users: stack.users }, "viewer");
    // An action through the standby reaches the leader with its CSRF token, and is audited there under its user.
    const operator = await signIn({ url: two.url, users: stack.users }, "operator");
    const ack = await operator.mutate("incidents.acknowledge", { id: opened[0]?.id });
    expect(ack.status, JSON.stringify(ack.body)).toBe(200);
    const killed = Date.now();
    await one.kill();
    // The agents move: every node's agent up on the second replica.
    await eventually(
      async () => (await read<NodeRow[]>(two, "nodes").catch(() => [])).filter((n) => n.agent.up).length,
      (n) => n === 3,
      15_000,
      100,
    );
    const moved = Date.now() - killed;
    console.log(`agents on the second replica ${moved} ms after the leader's SIGKILL`);
    expect(moved).toBeLessThan(5000);
    expect(await leaderGauge(two)).toBe("1");
    // The leader's own answer now, not a standby's.
    expect(await readyz(two)).toEqual({ status: 200, body: "ok\n" });
    // The same session goes on, on live data: the client's requests heard after the kill.
    await eventually(
      () => viewer.query<{ ip: string; lastRequest: number | null }[]>("ips.list"),
      (rows) => (rows.find((r) => r.ip === vip)?.lastRequest ?? 0) > killed,
      10_000,
    );

    // The same incidents, with the same ids: none opened again by the new leader.
    const after = await read<Incident[]>(two, "incidents?state=open");
    for (const i of before.open) expect(after.find((x) => x.ip === i.ip)?.id).toBe(i.id);
    expect(after.filter((i) => i.ip === vip)).toHaveLength(1);

    // The outbox goes on from the database: the waiting notification reaches the receiver from the new leader, under
    // its id; nothing the old leader had queued is queued again under another.
    answer = 200;
    const adminTwo = await signIn({ url: two.url, users: stack.users }, "admin");
    const pending = before.deliveries.filter((d) => d.status === "pending");
    expect(pending.length).toBeGreaterThan(0);
    const delivered = await eventually(
      () => adminTwo.query<Delivery[]>("alerts.deliveries"),
      (d) => pending.every((p) => d.find((x) => x.id === p.id)?.status === "delivered"),
      60_000,
      500,
    );
    for (const p of pending) expect(sent.some((s) => s.id === p.id && s.at > killed)).toBe(true);
    // Rows made after the switch: only for what changed after it (an incident's finding opening or ending then).
    const changedSince = new Set(
      (await read<Incident[]>(two, "incidents?limit=100"))
        .filter((i) => i.facets.some((f) => f.firstSeen > killed || (f.resolvedAt ?? 0) > killed))
        .map((i) => i.ip),
    );
    const newRows = delivered.filter((d) => d.createdAt > killed && !changedSince.has(d.ip));
    expect(newRows).toEqual([]);
    // Where something did change, no more rows than changes: a notification made again would be one too many.
    const changes = (await read<Incident[]>(two, "incidents?limit=100")).flatMap((i) =>
      i.facets.flatMap((f) => [f.firstSeen > killed ? i.ip : null, (f.resolvedAt ?? 0) > killed ? i.ip : null]).filter((x) => x !== null),
    );
    for (const ip of changedSince)
      expect(delivered.filter((d) => d.createdAt > killed && d.ip === ip).length).toBeLessThanOrEqual(
        changes.filter((x) => x === ip).length,
      );
    const audit = await adminTwo.query<{ actor: string; action: string; outcome: string }[]>("settings.audit");
    expect(audit).toContainEqual(
      expect.objectContaining({ actor: stack.users.operator.name, action: "incident.acknowledge", outcome: "ok" }) as unknown,
    );
    // Every row ever made reached the receiver, each under one id; an id seen twice is a retry of one row.
    for (const d of delivered.filter((x) => x.status === "delivered")) expect(sent.some((s) => s.id === d.id)).toBe(true);
    expect(opened[0]?.id).toBe(after.find((i) => i.ip === vip)?.id);
  }, 120_000);

  it("the killed replica comes back on standby, behind the new leader", async () => {
    const [one, two] = [replica("hub-1"), replica("hub-2")];
    await one.start();
    const r = await eventually(
      () => readyz(one),
      (x) => x.status === 200,
      10_000,
    );
    expect(JSON.parse(r.body)).toMatchObject({ role: "standby", replica: "hub-1", leader: "hub-2" });
    expect(await leaderGauge(one)).toBe("0");
    expect(await leaderGauge(two)).toBe("1");
    // The agents stay where they are: the standby refuses them, the leader keeps them.
    const nodes = await read<NodeRow[]>(two, "nodes");
    expect(nodes.filter((n) => n.agent.up)).toHaveLength(3);
  });
});
