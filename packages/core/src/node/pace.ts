import { FLUSH_MS, MAX_FLUSH_MS } from "../wire.js";

/**
 * PACE_MESSAGES_PER_SECOND: the agents' periodic messages a hub reads a second, all told, that their pace aims at
 * (limits.agentMessagesPerSecond). Reading a message costs the hub much more than reading one more aggregate in it.
 */
export const PACE_MESSAGES_PER_SECOND = 10_000;
/** PACE_STEP_MS: a pace is a multiple of this (agents coming and going move it in steps, not at every connection). */
const PACE_STEP_MS = 50;
/** PACE_SLACK: a pace gets faster only once the agents are this much fewer than its step needs. */
const PACE_SLACK = 1.1;

/** paceFor is how often each of `agents` sends so that they send `perSecond` messages a second, in bounds and steps. */
const paceFor = (agents: number, perSecond: number): number =>
  Math.min(MAX_FLUSH_MS, Math.max(FLUSH_MS, Math.ceil((agents * 1000) / perSecond / PACE_STEP_MS) * PACE_STEP_MS));

/**
 * flushPace is how often the hub has each of its `agents` send what it aggregated: FLUSH_MS while they send at most
 * `perSecond` messages a second together at that pace (1,000 agents by default), slower past it, up to MAX_FLUSH_MS
 * (from 4,501 agents by default; past 5,000 they send more than `perSecond` together).
 * What is news (a MAC answering an IP anew) goes out at once whatever the pace; what waits is counts and requests
 * answered as before. `current` is the pace in force: a slower one is taken at once, a faster one only once the
 * agents are PACE_SLACK fewer than it needs, so that agents reconnecting around a step do not make the hub tell
 * every agent again and again.
 */
export function flushPace(agents: number, current: number = FLUSH_MS, perSecond: number = PACE_MESSAGES_PER_SECOND): number {
  const wanted = paceFor(agents, perSecond);
  if (wanted >= current) return wanted;
  return Math.min(current, paceFor(agents * PACE_SLACK, perSecond));
}
