import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../stack.js";
import { eventually, query, signIn } from "./hub-client.js";
import { record } from "./reliability.js";

interface AgentRow {
  node: string;
  up: boolean;
  connected: boolean;
}

// Probes open and close a capture of their own on the agent. Before the cap patch made the binding end its async
// resource in Close(), V8 collected closed captures in a GC callback that dereferenced a missing Environment: every
// agent died with SIGSEGV within about ten rounds of two probes at once (the remediation's verification does this).
describe("captures opened and closed by actions", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ nodes: 3, vips: 2, kube: true, requestIntervalMs: 200, hubConfig: { actions: { probeDuration: "2s" } } });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("agents survive 25 rounds of two probes at once, every node opening and closing captures", async () => {
    const agents = () => query<AgentRow[]>(stack, "agents.list");
    await eventually(agents, (a) => a.filter((x) => x.up).length === 3, 20_000);
    const op = await signIn(stack, "operator");
    const rounds = 25;
    // How many probe captures each node opened, ran and closed: the hub picks the probers (the owner and another node).
    const captures = new Map<string, number>(stack.lab.nodes.map((n) => [n.name, 0]));
    for (let round = 0; round < rounds; round++) {
      const answers = await Promise.all(stack.lab.vips.map((ip) => op.mutate("actions.probe", { ip })));
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      // Each probe has ended (its captures closed) before the agents are checked.
      for (const ip of stack.lab.vips) {
        const run = await eventually(
          () =>
            op.query<{ state: string; probers: string[]; failedProbers: string[]; rounds: unknown[] } | null>("actions.latestProbe", {
              ip,
            }),
          (r) => r !== null && r.state !== "running",
          15_000,
        );
        // A prober that failed opened no capture (or lost it): only a probe every prober ran to the end counts.
        expect([run?.state, run?.failedProbers], `round ${round}, ${ip}`).toEqual(["done", []]);
        expect(run?.rounds.length ?? 0).toBeGreaterThan(0);
        for (const n of run?.probers ?? []) captures.set(n, (captures.get(n) ?? 0) + 1);
      }
      expect(
        (await agents()).every((a) => a.connected),
        `round ${round}`,
      ).toBe(true);
    }
    // Every node opened and closed captures, and the crash took about ten rounds on each: none was left out.
    for (const [node, n] of captures) expect(n, node).toBeGreaterThanOrEqual(5);
    const perNode = [...captures].map(([node, n]) => `${node} ${n}`).join(", ");
    record({
      fault: "Captures opened and closed in quick succession",
      checked: `${rounds} rounds of two 2 s probes at once, each on two nodes the hub chose (captures opened and closed per node: ${perNode}), the agents' connections after each round`,
      result: `every probe ran to the end on both its probers, and all 3 agents stayed connected throughout`,
    });
  }, 180_000);
});
