import { randomUUID } from "node:crypto";
import {
  EVIDENCE_MESSAGE_BYTES,
  WIRE_VERSION,
  capturedBytes,
  mergeFrames,
  splitIpKey,
  type EvidenceFrame,
  type MissingNode,
  type NodeEvidence,
} from "@whohas/core";
import type { EvidenceAnswer, EvidenceRequest } from "../gateway/agent-gateway.js";

/** ANSWER_TIMEOUT_MS: an agent answers an evidence-request at once from memory; one that takes longer is missing. */
export const ANSWER_TIMEOUT_MS = 5000;
/** MAX_PAGES: evidence-requests one node is sent for one window at most (each answer carries up to 768 KiB). */
const MAX_PAGES = 64;

/** What the collector needs of the gateway: a way to ask one node's agent. */
export interface EvidenceAsker {
  askEvidence(node: string, msg: EvidenceRequest, onAnswer: (m: EvidenceAnswer | null) => void): (() => void) | null;
}

/** A KnownAgent is a node whose agent the hub knows, connected or not. */
export interface KnownAgent {
  readonly node: string;
  readonly connected: boolean;
  readonly lastSeen: number | null;
}

/** A Collection is what the agents sent for one IP and window, and who is missing. */
export interface Collection {
  readonly nodes: NodeEvidence[];
  readonly missing: MissingNode[];
  /** The frames came to more than the byte budget: the collection stopped there. */
  readonly overBudget: boolean;
  readonly bytes: number;
}

/**
 * collect asks every connected agent for the frames it holds about `ipKey` captured in [fromMs, toMs], page by page
 * (an answer is cut at one message; the next asks from its last frame's millisecond), within `budget` captured bytes
 * in all. Agents that are not connected, do not answer within ANSWER_TIMEOUT_MS or go away are named as missing.
 */
export async function collect(
  asker: EvidenceAsker,
  agents: readonly KnownAgent[],
  ipKey: string,
  fromMs: number,
  toMs: number,
  budget: number,
  timeoutMs = ANSWER_TIMEOUT_MS,
): Promise<Collection> {
  const { ip: address, vlan } = splitIpKey(ipKey);
  const missing: MissingNode[] = [];
  const live: string[] = [];
  for (const a of [...agents].sort((x, y) => x.node.localeCompare(y.node))) {
    if (a.connected) live.push(a.node);
    else
      missing.push({
        node: a.node,
        why: a.lastSeen === null ? "agent never connected" : `agent down since ${new Date(a.lastSeen).toISOString()}`,
      });
  }
  let left = budget;
  let overBudget = false;
  // Concurrently per node: the budget is shared, so each page asks for at most what is left of it.
  const results = await Promise.all(
    live.map(async (node): Promise<NodeEvidence | MissingNode> => {
      let frames: EvidenceFrame[] = [];
      let heldFromMs: number | null = null;
      let from = fromMs;
      for (let page = 0; page < MAX_PAGES; page++) {
        if (left <= 0) {
          overBudget = true;
          return { node, frames, truncated: true, heldFromMs };
        }
        const maxBytes = Math.min(EVIDENCE_MESSAGE_BYTES, left);
        const msg: EvidenceRequest = {
          v: WIRE_VERSION,
          type: "evidence-request",
          id: randomUUID(),
          ip: address,
          vlan,
          fromMs: from,
          toMs,
          maxBytes,
        };
        const answer = await ask(asker, node, msg, timeoutMs);
        if (typeof answer === "string") return frames.length === 0 ? { node, why: answer } : { node, frames, truncated: true, heldFromMs };
        if (page === 0) heldFromMs = answer.heldFromMs;
        const before = frames.length;
        const merged = mergeFrames(frames, answer.frames);
        left -= capturedBytes(merged) - capturedBytes(frames);
        frames = merged;
        const last = answer.frames.at(-1);
        // Done: the agent sent all it holds, or a page brought nothing new (one millisecond holds more than a page).
        if (!answer.truncated) return { node, frames, truncated: false, heldFromMs };
        if (last === undefined || frames.length === before) return { node, frames, truncated: true, heldFromMs };
        from = Number(BigInt(last.tNs) / 1_000_000n);
      }
      return { node, frames, truncated: true, heldFromMs };
    }),
  );
  const nodes: NodeEvidence[] = [];
  for (const r of results)
    if ("why" in r) missing.push(r);
    else nodes.push(r);
  if (left < 0) overBudget = true;
  return { nodes, missing, overBudget, bytes: budget - left };
}

/** ask sends one evidence-request and waits for its answer, or says why there is none. */
function ask(asker: EvidenceAsker, node: string, msg: EvidenceRequest, timeoutMs: number): Promise<EvidenceAnswer | string> {
  return new Promise((resolve) => {
    // The answer never comes before askEvidence returns: it arrives on a later message.
    const stop = asker.askEvidence(node, msg, (m) => {
      clearTimeout(timer);
      resolve(m ?? "agent disconnected while asked");
    });
    if (stop === null) return resolve("agent not connected");
    const timer = setTimeout(() => {
      stop();
      resolve(`no answer within ${timeoutMs / 1000} s`);
    }, timeoutMs);
  });
}
