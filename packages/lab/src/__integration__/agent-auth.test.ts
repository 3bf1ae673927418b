import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startStack, type Stack } from "../stack.js";
import { eventually, query } from "./hub-client.js";
import { unixWsUrl } from "../naming.js";

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
