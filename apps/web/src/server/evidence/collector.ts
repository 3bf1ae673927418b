import { randomUUID } from "node:crypto";
import {
  EVIDENCE_MESSAGE_BYTES,
  WIRE_VERSION,
  capturedBytes,
  evidenceFilter,
  mergeFrames,
  splitIpKey,
  type EvidenceFrame,
  type MissingNode,
  type NodeEvidence,
} from "@whohas/core";
import type { EvidenceAnswer, EvidenceRequest } from "@whohas/core";

/** ANSWER_TIMEOUT_MS: an agent answers an evidence-request at once from memory; one that takes longer is missing. */
export const ANSWER_TIMEOUT_MS = 5000;
/** DEADLINE_MS: one collection takes at most this long, however its agents page; what came by then is kept. */
export const DEADLINE_MS = 20_000;
/** FRAME_ROOM: a share with less than this left has no room for another ARP or NDP frame. */
const FRAME_ROOM = 90;
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
  /** Some node held more than its share of the byte budget: its frames stop there. */
  readonly overBudget: boolean;
  /** Frames agents sent that were not what was asked for (another IP, VLAN or time, past maxBytes), per node. */
  readonly refused: ReadonlyMap<string, number>;
}

export interface CollectOptions {
  readonly timeoutMs?: number;
  readonly deadlineMs?: number;
}

/**
 * collect asks every connected agent for the frames it holds about `ipKey` captured in [fromMs, toMs], page by page
 * (an answer is cut at one message; the next asks from its last frame's millisecond). Each node has an equal share
 * of `budget` captured bytes. An answer is checked, not trusted: frames of another IP, VLAN or time, and bytes past
 * what was asked for, are dropped and counted. Agents that are not connected, do not answer within the timeout or go
 * away are named as missing; the whole collection ends by its deadline.
 */
export async function collect(
  asker: EvidenceAsker,
  agents: readonly KnownAgent[],
  ipKey: string,
  fromMs: number,
  toMs: number,
  budget: number,
  o: CollectOptions = {},
): Promise<Collection> {
  const { ip, vlan } = splitIpKey(ipKey);
  const timeoutMs = o.timeoutMs ?? ANSWER_TIMEOUT_MS;
  const deadline = Date.now() + (o.deadlineMs ?? DEADLINE_MS);
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
  const share = Math.floor(budget / Math.max(1, live.length));
  const refused = new Map<string, number>();
  let overBudget = false;
  const results = await Promise.all(
    live.map(async (node): Promise<NodeEvidence | MissingNode> => {
      let frames: EvidenceFrame[] = [];
      let heldFromMs: number | null = null;
      let from = fromMs;
      const done = (truncated: boolean): NodeEvidence => ({ node, frames, truncated, heldFromMs });
      let held = 0;
      for (let page = 0; page < MAX_PAGES; page++) {
        const left = share - held;
        if (left <= 0) {
          overBudget = true;
          return done(true);
        }
        const wait = Math.min(timeoutMs, deadline - Date.now());
        if (wait <= 0) return frames.length === 0 ? { node, why: "no answer before the collection's deadline" } : done(true);
        const maxBytes = Math.min(EVIDENCE_MESSAGE_BYTES, left);
        const msg: EvidenceRequest = {
          v: WIRE_VERSION,
          type: "evidence-request",
          id: randomUUID(),
          ip,
          vlan,
          fromMs: from,
          toMs,
          maxBytes,
        };
        const answer = await ask(asker, node, msg, wait);
        if (typeof answer === "string") return frames.length === 0 ? { node, why: answer } : done(true);
        const { kept, dropped } = check(answer.frames, ip, vlan, from, toMs, maxBytes);
        if (dropped > 0) refused.set(node, (refused.get(node) ?? 0) + dropped);
        // The oldest frame held, as the first answer says it: only a time within what was asked for means anything.
        if (page === 0 && answer.heldFromMs !== null && answer.heldFromMs <= toMs) heldFromMs = answer.heldFromMs;
        const before = frames.length;
        frames = mergeFrames(frames, kept);
        held = capturedBytes(frames);
        if (!answer.truncated) return done(false);
        // The agent holds more, and the node's share has no room for another frame: the budget is what cut it.
        if (share - held < FRAME_ROOM) {
          overBudget = true;
          return done(true);
        }
        // Another page only when this one moved on in time and brought something new: an agent cannot keep the
        // hub asking for the same millisecond.
        const last = kept.at(-1);
        const lastMs = last === undefined ? from : Number(BigInt(last.tNs) / 1_000_000n);
        if (frames.length === before || lastMs <= from) return done(true);
        from = lastMs;
      }
      return done(true);
    }),
  );
  const nodes: NodeEvidence[] = [];
  for (const r of results)
    if ("why" in r) missing.push(r);
    else nodes.push(r);
  return { nodes, missing, overBudget, refused };
}

/**
 * check keeps the frames of an answer that are what was asked for: about `ip` in `vlan`, captured in [fromMs, toMs],
 * and within `maxBytes` in all; it counts the rest.
 */
function check(
  frames: readonly EvidenceFrame[],
  ip: string,
  vlan: number | null,
  fromMs: number,
  toMs: number,
  maxBytes: number,
): { kept: EvidenceFrame[]; dropped: number } {
  const about = evidenceFilter(ip, vlan);
  const kept: EvidenceFrame[] = [];
  let bytes = 0;
  for (const f of frames) {
    const ms = Number(BigInt(f.tNs) / 1_000_000n);
    if (ms < fromMs || ms > toMs || f.vlan !== vlan) continue;
    const data = Buffer.from(f.data, "base64");
    if (bytes + data.length > maxBytes || !about(data)) continue;
    bytes += data.length;
    kept.push(f);
  }
  return { kept, dropped: frames.length - kept.length };
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
      resolve(`no answer within ${Math.round(timeoutMs / 100) / 10} s`);
    }, timeoutMs);
  });
}
