import { describe, expect, it } from "vitest";
import { MAX_HELLO_INTERFACES, MAX_PROBE_TARGETS, parseAgentMessage } from "@whohas/core";
import { agentHello } from "../run-agent.js";

const eth = (k: number) => ({ name: `eth${k}`, mac: "02:00:5e:00:00:0a", up: true, noarp: false, hasMaster: false, master: null });

describe("the agent's hello", () => {
  it("passes the hub's schema and says what the agent takes: probe-many, flush and pace", () => {
    const parsed = parseAgentMessage(JSON.stringify(agentHello("node-a", [eth(0)])));
    expect(parsed.ok && parsed.value).toEqual({
      v: 2,
      type: "hello",
      node: "node-a",
      agentVersion: expect.any(String),
      interfaces: [{ name: "eth0", mac: "02:00:5e:00:00:0a", up: true }],
      probeMany: { maxTargets: MAX_PROBE_TARGETS },
      flush: true,
      pace: true,
    });
  });

  it("names the cluster when --cluster gave one, and the hub's schema takes it", () => {
    expect(agentHello("node-a", [eth(0)]).cluster).toBeUndefined();
    const parsed = parseAgentMessage(JSON.stringify(agentHello("node-a", [eth(0)], "prod-eu")));
    expect(parsed.ok && parsed.value).toMatchObject({ type: "hello", cluster: "prod-eu" });
    expect(parseAgentMessage(JSON.stringify({ ...agentHello("node-a", [eth(0)]), cluster: "Prod EU" })).ok).toBe(false);
  });

  it("names at most MAX_HELLO_INTERFACES interfaces (the hub refuses more)", () => {
    const hello = agentHello(
      "node-a",
      Array.from({ length: MAX_HELLO_INTERFACES + 10 }, (_, k) => eth(k)),
    );
    expect(hello.interfaces).toHaveLength(MAX_HELLO_INTERFACES);
    expect(parseAgentMessage(JSON.stringify(hello)).ok).toBe(true);
  });
});
