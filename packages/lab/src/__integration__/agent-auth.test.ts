import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startStack, type Stack } from "../stack.js";
import { eventually, query } from "./hub-client.js";
import { unixWsUrl } from "../naming.js";
import type { Attempt } from "../agent-attempt.js";
import { AGENT_ATTEMPT } from "../hub-process.js";
import { inNs } from "../sh.js";

interface AgentRow {
  node: string;
  up: boolean;
}

/** upgrade tries the agent endpoint with a token and returns the HTTP status the hub answered (101: accepted). */
function upgrade(stack: Stack, token: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(unixWsUrl(stack.lab.names.hubSocket, "/agent"), { headers: { authorization: `Bearer ${token}` } });
    ws.once("open", () => {
      ws.close();
      resolve(101);
    });
    ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    ws.once("error", () => undefined);
  });
}

/**
 * hello connects with a token, says hello as `node` and returns what the hub did: "welcome", or the close code and
 * reason, or the HTTP status of a refused upgrade.
 */
function hello(stack: Stack, token: string, node: string): Promise<string> {
  return new Promise((resolve) => {
    const ws = new WebSocket(unixWsUrl(stack.lab.names.hubSocket, "/agent"), { headers: { authorization: `Bearer ${token}` } });
    ws.once("open", () => ws.send(JSON.stringify({ v: 2, type: "hello", node, agentVersion: "test", interfaces: [] })));
    ws.on("message", (data: Buffer) => {
      if ((JSON.parse(data.toString()) as { type: string }).type !== "welcome") return;
      ws.close();
      resolve("welcome");
    });
    ws.once("close", (code, reason) => resolve(`${code} ${reason.toString()}`));
    ws.once("unexpected-response", (_req, res) => resolve(`http ${res.statusCode ?? 0}`));
    ws.once("error", () => undefined);
  });
}

// Agents as a DaemonSet runs them in-cluster: a projected ServiceAccount token (audience whohas), checked by the hub
// with a TokenReview against the test API server.
describe("agents authenticate with their ServiceAccount", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ nodes: 2, vips: 1, kube: true, serviceAccountAgents: true });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("binds each agent to the node its token is bound to: another node's name is refused, its own replaces the old connection", async () => {
    const t = stack.saTokens;
    if (t === null) throw new Error("no ServiceAccount tokens");
    const [a = "", b = ""] = stack.lab.nodes.map((n) => n.name);
    expect(await hello(stack, t.agents.get(a) ?? "", b)).toBe(`1008 hello names ${b} but the token is bound to a Pod on ${a}`);
    // On API servers before 1.30 the review names the Pod only: the hub reads the Pod to learn its node.
    expect(await hello(stack, t.podOnly.token, b)).toBe(`1008 hello names ${b} but the token is bound to a Pod on ${t.podOnly.node}`);
    // The same node's token takes the place of the live connection (the agent's Pod was replaced); the real agent
    // then reconnects and takes it back.
    expect(await hello(stack, t.agents.get(b) ?? "", b)).toBe("welcome");
    await eventually(
      () => query<AgentRow[]>(stack, "agents.list"),
      (rows) => rows.filter((x) => x.up).length === 2,
      30_000,
    );
  });

  it("accepts the agents' token by TokenReview, refuses another audience or account, and throttles guessing", async () => {
    const agents = await eventually(
      () => query<AgentRow[]>(stack, "agents.list"),
      (a) => a.filter((x) => x.up).length === 2,
      20_000,
    );
    expect(agents.map((a) => a.node).sort()).toEqual(stack.lab.nodes.map((n) => n.name).sort());
    const t = stack.saTokens;
    if (t === null) throw new Error("no ServiceAccount tokens");
    const [a = ""] = stack.lab.nodes.map((n) => n.name);
    const tokenOf = (node: string) => t.agents.get(node) ?? "";
    expect(await upgrade(stack, tokenOf(a))).toBe(101);
    expect(await upgrade(stack, t.wrongAudience)).toBe(401);
    expect(await upgrade(stack, t.otherAccount)).toBe(401);
    // A token bound to nothing proves no node: refused before the upgrade.
    expect(await upgrade(stack, t.unbound)).toBe(401);
    // Failed attempts are limited per address: after a burst of them, 429 before any TokenReview.
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) statuses.push(await upgrade(stack, `guess-${i}-0123456789abcdef`));
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.slice(0, 15).every((s) => s === 401)).toBe(true);
  });
});

/** fromNode makes connection attempts to the hub over TCP from inside `node`'s namespace, in order. */
async function fromNode(stack: Stack, node: string, attempts: readonly Attempt[]): Promise<string[]> {
  const n = stack.lab.nodes.find((x) => x.name === node);
  if (n === undefined || stack.lab.hub === null) throw new Error(`no node ${node} or no hub on the link`);
  const out = await inNs(n.ns, process.execPath, AGENT_ATTEMPT, `ws://${stack.lab.hub.ip}:${stack.port}/agent`, JSON.stringify(attempts));
  return JSON.parse(out) as string[];
}

// As in a cluster: the hub on the cluster network, each agent connecting over TCP from its node's address, so the
// hub's per-address limits meet real, distinct peers.
describe("agents over TCP from their nodes' addresses", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ nodes: 2, vips: 1, kube: true, serviceAccountAgents: true, hubOnLink: true });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("connects every agent over TCP, and refuses a missing, wrong or foreign token from a node", async () => {
    await eventually(
      () => query<AgentRow[]>(stack, "agents.list"),
      (rows) => rows.filter((x) => x.up).length === 2,
      30_000,
    );
    const t = stack.saTokens;
    if (t === null) throw new Error("no ServiceAccount tokens");
    const [a = "", b = ""] = stack.lab.nodes.map((n) => n.name);
    expect(
      await fromNode(stack, a, [
        { token: "" },
        { token: t.wrongAudience },
        { token: t.otherAccount },
        { token: t.agents.get(a) ?? "", then: { hello: b } },
        { token: t.agents.get(a) ?? "" },
      ]),
    ).toEqual(["http 401", "http 401", "http 401", `close 1008 hello names ${b} but the token is bound to a Pod on ${a}`, "open"]);
  });

  it("closes malformed and oversized messages from a node and keeps the agents' data flowing", async () => {
    const t = stack.saTokens;
    if (t === null) throw new Error("no ServiceAccount tokens");
    const [a = ""] = stack.lab.nodes.map((n) => n.name);
    const token = t.agents.get(a) ?? "";
    expect(
      await fromNode(stack, a, [
        { token, then: { raw: "{not json" } },
        { token, then: { oversized: 2 * 1024 * 1024 } },
      ]),
    ).toEqual([expect.stringMatching(/^close 1008 /), expect.stringMatching(/^close 1009/)]);
    const vip = stack.lab.vips[0] ?? "";
    const requests = async () =>
      (await query<{ ip: string; requests: number }[]>(stack, "ips.list")).find((i) => i.ip === vip)?.requests ?? 0;
    const r0 = await requests();
    await eventually(requests, (n) => n >= r0 + 3, 20_000);
  });

  it("closes an agent that sends faster than 200 messages a second, and takes it back when it reconnects", async () => {
    const t = stack.saTokens;
    if (t === null) throw new Error("no ServiceAccount tokens");
    const [a = ""] = stack.lab.nodes.map((n) => n.name);
    // A burst past the allowance (400 at once) from the node's own address and token: the hub closes it.
    expect(await fromNode(stack, a, [{ token: t.agents.get(a) ?? "", then: { burst: { node: a, count: 600 } } }])).toEqual([
      "close 1008 rate limit: more than 200 messages/s",
    ]);
    // The real agent (its connection was taken over by the burst's hello) comes back.
    await eventually(
      () => query<AgentRow[]>(stack, "agents.list"),
      (rows) => rows.filter((x) => x.up).length === 2,
      30_000,
    );
  });

  it("throttles guessing per address: the guessing node is refused, the other node's agent is not", async () => {
    const t = stack.saTokens;
    if (t === null) throw new Error("no ServiceAccount tokens");
    const [a = "", b = ""] = stack.lab.nodes.map((n) => n.name);
    const guesses = await fromNode(
      stack,
      b,
      Array.from({ length: 25 }, (_, i) => ({ token: `guess-${i}-0123456789abcdef` })),
    );
    expect(guesses.slice(0, 15).every((s) => s === "http 401")).toBe(true);
    expect(guesses.filter((s) => s === "http 429").length).toBeGreaterThan(0);
    // The guessing address is refused even with a good token; another node's address is not affected.
    expect(await fromNode(stack, b, [{ token: t.agents.get(b) ?? "" }])).toEqual(["http 429"]);
    expect(await fromNode(stack, a, [{ token: t.agents.get(a) ?? "" }])).toEqual(["open"]);
  });
});
