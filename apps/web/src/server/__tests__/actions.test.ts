import { describe, expect, it } from "vitest";
import { silentLogger, type AgentMessage, type HubMessage } from "@whohas/core";
import { Actions } from "../actions/actions.js";
import { ActionRefused, type CommandSender } from "../actions/command.js";
import { Hub } from "../hub/hub.js";
import { ASKER, aggregate, hello, observations, until } from "./helpers.js";

type Result = Extract<AgentMessage, { type: "probe-result" | "command-done" }>;

/** Agents records what each node was sent and lets the test answer as that node's agent would. */
class Agents implements CommandSender {
  readonly sent: { node: string; msg: Extract<HubMessage, { type: "announce" | "probe" }> }[] = [];
  readonly #listeners = new Map<string, (m: Result) => void>();
  constructor(readonly connected: Set<string>) {}
  command(node: string, msg: Extract<HubMessage, { type: "announce" | "probe" }>, onResult: (m: Result) => void): boolean {
    if (!this.connected.has(node)) return false;
    this.sent.push({ node, msg });
    this.#listeners.set(msg.id, onResult);
    return true;
  }
  answer(id: string, m: Result): void {
    this.#listeners.get(id)?.(m);
  }
}

async function setup(nodes: string[]) {
  const hub = await Hub.open();
  nodes.forEach((n, i) => hub.connect(hello(n, `02:00:00:00:00:0${i + 1}`)));
  const agents = new Agents(new Set(nodes));
  const actions = new Actions({ hub, agents, logger: silentLogger, probeMs: 3000, announceMs: 1000, random: () => 0 });
  return { hub, agents, actions };
}

describe("Actions", () => {
  it("refuses to re-announce an IP whose owner is unknown, and audits the refusal", async () => {
    const { hub, actions, agents } = await setup(["node-a"]);
    await expect(actions.reannounce("192.0.2.10", "olga")).rejects.toThrow(ActionRefused);
    expect(agents.sent).toHaveLength(0);
    expect(await hub.store.audit.list()).toEqual([
      expect.objectContaining({
        actor: "olga",
        action: "ip.reannounce",
        outcome: "refused",
        detail: expect.stringContaining("does not know which node should own"),
      }),
    ]);
  });

  it("probes from two nodes and joins their rounds: each node's answer is heard by the other", async () => {
    const { hub, actions, agents } = await setup(["node-a", "node-b", "node-c"]);
    const id = await actions.probe("192.0.2.10", "olga");
    expect(agents.sent.map((s) => [s.node, s.msg.type, s.msg.ip])).toEqual([
      ["node-a", "probe", "192.0.2.10"],
      ["node-b", "probe", "192.0.2.10"],
    ]);
    // A second operator probing the same IP joins the run instead of doubling the broadcasts.
    expect(await actions.probe("192.0.2.10", "vic")).toBe(id);
    const [a, b] = agents.sent.map((s) => s.msg.id);
    agents.answer(a ?? "", {
      v: 2,
      type: "probe-result",
      id: a ?? "",
      seq: 1,
      sentAt: 1000,
      replies: [
        { mac: "02:00:00:00:00:02", latencyMs: 0.3 },
        { mac: "02:00:00:00:00:03", latencyMs: 0.5 },
      ],
    });
    agents.answer(b ?? "", {
      v: 2,
      type: "probe-result",
      id: b ?? "",
      seq: 1,
      sentAt: 1001,
      replies: [{ mac: "02:00:00:00:00:01", latencyMs: 0.2 }],
    });
    const running = actions.view(id);
    expect(running?.state).toBe("running");
    expect(running?.rounds[0]?.replies.map((r) => r.node)).toEqual(["node-a", "node-b", "node-c"]);
    agents.answer(a ?? "", { v: 2, type: "command-done", id: a ?? "", ok: true, message: "probed from eth0" });
    agents.answer(b ?? "", { v: 2, type: "command-done", id: b ?? "", ok: true, message: "probed from eth0" });
    const done = actions.view(id);
    expect(done?.state).toBe("done");
    expect(done?.summary).toMatchObject({ requests: 1, multiAnswered: 1, unanswered: 0 });
    expect((await hub.store.audit.list()).map((e) => `${e.actor} ${e.action} ${e.outcome}`)).toEqual([
      "olga ip.probe.result ok",
      "olga ip.probe ok",
    ]);
  });

  it("probes from a node that captured the IP first, whatever the names of the others", async () => {
    const { hub, actions, agents } = await setup(["a-first", "node-b", "node-c"]);
    hub.observe("node-c", observations([aggregate("192.0.2.10", "request", ASKER.mac, Date.now())]));
    await actions.probe("192.0.2.10", "olga");
    expect(agents.sent.map((s) => s.node)).toEqual(["node-c", "a-first"]);
  });

  it("says so when no agent can probe", async () => {
    const { actions } = await setup([]);
    await expect(actions.probe("192.0.2.10", "olga")).rejects.toThrow("no agent is connected: deploy the whohas agent DaemonSet");
  });

  it("audits the fix's verification probe as it starts, and as it ends", async () => {
    const { hub, actions, agents } = await setup(["node-a", "node-b"]);
    const result = actions.probeAll(
      ["192.0.2.10", "2001:db8::10"],
      "fix",
      1,
      () => undefined,
      () => undefined,
    );
    const log = async () => (await hub.store.audit.list()).map((e) => `${e.actor} ${e.action} ${e.outcome}`);
    // Its requests are out: a hub that stops now still shows so.
    await until(() => agents.sent.length === 4);
    expect(await log()).toEqual(["fix ips.probe ok"]);
    for (const id of agents.sent.map((s) => s.msg.id)) {
      agents.answer(id, { v: 2, type: "probe-result", id, seq: 1, sentAt: 1000, replies: [] });
      agents.answer(id, { v: 2, type: "command-done", id, ok: true, message: "probed" });
      await Promise.resolve();
    }
    await result;
    expect(await log()).toEqual(["fix ips.probe.result ok", "fix ips.probe ok"]);
  });

  it("refuses a probe of an IP the fix's verification asks, and counts that verification as one probe running", async () => {
    const { actions, agents } = await setup(["node-a", "node-b"]);
    const result = actions.probeAll(
      ["192.0.2.10", "2001:db8::10"],
      "fix",
      1,
      () => undefined,
      () => undefined,
    );
    // Its requests go out once its start is audited.
    await until(() => agents.sent.length === 4);
    const verifying = agents.sent.map((s) => s.msg.id);
    expect(verifying).toHaveLength(4);
    for (const ip of ["192.0.2.10", "2001:db8:0::10"])
      await expect(actions.probe(ip, "olga")).rejects.toThrow(`${ip} is being verified by the strictARP fix's run; try again when it ends`);
    // Seven probes of other IPs beside it; the eighth is one too many.
    for (let i = 1; i <= 7; i++) await actions.probe(`192.0.2.${i}`, "olga");
    await expect(actions.probe("192.0.2.8", "olga")).rejects.toThrow("8 probes are running already (at most 8)");
    for (const id of verifying) {
      agents.answer(id, { v: 2, type: "probe-result", id, seq: 1, sentAt: 1000, replies: [] });
      agents.answer(id, { v: 2, type: "command-done", id, ok: true, message: "probed" });
      await Promise.resolve();
    }
    await result;
    expect(typeof (await actions.probe("192.0.2.10", "olga"))).toBe("string");
  });
});
