import { randomUUID } from "node:crypto";
import { splitIpKey, type AgentMessage, type CommandResult, type HubCommand } from "@whohas/core";

/** A CommandSender reaches one node's agent (the AgentGateway). */
export interface CommandSender {
  command(node: string, msg: HubCommand, onResult: (m: CommandResult) => void): boolean;
  /** abandon forgets a command whose agent never said it was done (absent: nothing is held per command). */
  abandon?(id: string): void;
}

/** An ActionRefused is an action that could not start, with the reason a person can act on (nothing was changed). */
export class ActionRefused extends Error {}

/** onLink is what a command names of an IP key: the address, and the VLAN to act in (null: untagged). */
export const onLink = (key: string): { ip: string; vlan: number | null } => {
  const { ip, vlan } = splitIpKey(key);
  return { ip, vlan };
};

type CommandDone = Extract<AgentMessage, { type: "command-done" }>;

/**
 * commandDone sends `node`'s agent one command (made for its id) and resolves with the agent's report that it is
 * done. Rejects with an Error when no report comes within `limitMs`, and with an ActionRefused saying
 * `notConnected` when no agent of the node is connected (nothing was sent).
 */
export function commandDone(
  agents: CommandSender,
  node: string,
  make: (id: string) => HubCommand,
  limitMs: number,
  notConnected: string,
): Promise<CommandDone> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the agent on ${node} did not report back within ${Math.round(limitMs / 1000)} s`)),
      limitMs,
    );
    const sent = agents.command(node, make(randomUUID()), (r) => {
      if (r.type !== "command-done") return;
      clearTimeout(timer);
      resolve(r);
    });
    if (!sent) {
      clearTimeout(timer);
      reject(new ActionRefused(notConnected));
    }
  });
}
