import { describe, expect, it } from "vitest";
import { WIRE_VERSION, type CommandResult, type HubCommand } from "@whohas/core";
import { ActionRefused, commandDone, type CommandSender } from "../actions/command.js";

/** An agent link that records what it sent and lets the test answer (null: no agent connected). */
function link(connected: boolean): CommandSender & { sent: HubCommand[]; answer(m: CommandResult): void } {
  let onResult: ((m: CommandResult) => void) | null = null;
  const sent: HubCommand[] = [];
  return {
    sent,
    command(_node, msg, cb) {
      if (!connected) return false;
      sent.push(msg);
      onResult = cb;
      return true;
    },
    answer: (m) => onResult?.(m),
  };
}

const announce = (id: string): HubCommand => ({
  v: WIRE_VERSION,
  type: "announce",
  id,
  ip: "192.0.2.10",
  vlan: null,
  durationMs: 1000,
  expectedOwner: "node-a",
  force: false,
});

describe("commandDone", () => {
  it("sends the command with a fresh id and resolves with the agent's command-done, not its progress", async () => {
    const agents = link(true);
    const done = commandDone(agents, "node-a", announce, 5000, "not connected");
    const id = agents.sent[0]?.id ?? "";
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    agents.answer({ v: WIRE_VERSION, type: "probe-result", id, t: 1, requestSeq: 1, replies: [] } as unknown as CommandResult);
    agents.answer({ v: WIRE_VERSION, type: "command-done", id, ok: true, message: "announced", bursts: 3 });
    await expect(done).resolves.toMatchObject({ type: "command-done", ok: true, bursts: 3 });
  });

  it("is refused with the caller's reason, sending nothing, when the node has no agent connected", async () => {
    const agents = link(false);
    const done = commandDone(agents, "node-a", announce, 5000, "no agent is connected on node-a");
    await expect(done).rejects.toThrow(ActionRefused);
    await expect(done).rejects.toThrow("no agent is connected on node-a");
  });

  it("fails, not refused, when the agent does not report back in time", async () => {
    const agents = link(true);
    const done = commandDone(agents, "node-a", announce, 30, "not connected");
    const e: unknown = await done.catch((x: unknown) => x);
    expect(e).toBeInstanceOf(Error);
    expect(e).not.toBeInstanceOf(ActionRefused);
    expect((e as Error).message).toBe("the agent on node-a did not report back within 0 s");
  });
});
