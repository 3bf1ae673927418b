import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startStack, type Stack } from "../stack.js";
import { eventually, query } from "./hub-client.js";
import { unixWsUrl } from "../naming.js";

interface AgentRow { node: string; up: boolean }

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

  it("accepts the agents' token by TokenReview, refuses another audience or account, and throttles guessing", async () => {
    const agents = await eventually(() => query<AgentRow[]>(stack, "agents.list"), (a) => a.filter((x) => x.up).length === 2, 20_000);
    expect(agents.map((a) => a.node).sort()).toEqual(stack.lab.nodes.map((n) => n.name).sort());
    const t = stack.saTokens;
    if (t === null) throw new Error("no ServiceAccount tokens");
    expect(await upgrade(stack, t.agent)).toBe(101);
    expect(await upgrade(stack, t.wrongAudience)).toBe(401);
    expect(await upgrade(stack, t.otherAccount)).toBe(401);
    // Failed attempts are limited per address: after a burst of them, 429 before any TokenReview.
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) statuses.push(await upgrade(stack, `guess-${i}-0123456789abcdef`));
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.slice(0, 15).every((s) => s === 401)).toBe(true);
  });
});
