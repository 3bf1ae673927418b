// Reading the wire: each text frame is checked against the contract in wire.ts before either end acts on it, and a
// frame that fails says why in one line. The agents' observations, ten a second from each, take a hand-written path
// with the same rules.
import type { z } from "zod";
import { isIP, isMac } from "./packet/addr.js";
import { MAX_REQUEST_TIMES, REPLY_WINDOW_MS } from "./judge/findings.js";
import {
  AgentMessageSchema,
  HubMessageSchema,
  MAX_ENTRIES_PER_MESSAGE,
  ObservationKindSchema,
  WIRE_VERSION,
  type AgentMessage,
  type HubMessage,
} from "./wire.js";

/** A ParseFailure explains, in one line a person can act on, why a message was refused, and what kind of fault it is. */
export interface ParseFailure {
  readonly ok: false;
  readonly reason: "not-json" | "version" | "invalid";
  readonly message: string;
}

function parseWith<T>(schema: z.ZodType<T>, text: string, fast?: (json: unknown) => T | null): { ok: true; value: T } | ParseFailure {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { ok: false, reason: "not-json", message: `wire: not JSON (${(e as Error).message})` };
  }
  const v = typeof json === "object" && json !== null ? (json as { v?: unknown }).v : undefined;
  if (typeof v === "number" && v !== WIRE_VERSION) {
    return {
      ok: false,
      reason: "version",
      message: `wire: version ${v}, this end speaks ${WIRE_VERSION}: run the agent and the hub of the same release`,
    };
  }
  const quick = fast?.(json) ?? null;
  if (quick !== null) return { ok: true, value: quick };
  const r = schema.safeParse(json);
  if (r.success) return { ok: true, value: r.data };
  const first = r.error.issues[0];
  const where = first?.path.length ? first.path.join(".") : "message";
  return { ok: false, reason: "invalid", message: `wire: ${where}: ${first?.message ?? "invalid"}` };
}

/** parseAgentMessage validates one text frame from an agent. */
export function parseAgentMessage(text: string): { ok: true; value: AgentMessage } | ParseFailure {
  return parseWith(AgentMessageSchema, text, fastObservations);
}

const KINDS: ReadonlySet<unknown> = new Set(ObservationKindSchema.options);
const isMillis = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
const isCount = (x: unknown, min: number): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= min;
const isIface = (x: unknown): x is string => typeof x === "string" && x.length >= 1 && x.length <= 15;
const isMacText = (x: unknown): x is string => typeof x === "string" && isMac(x);
const isIpText = (x: unknown): x is string => typeof x === "string" && x.length <= 45 && isIP(x);
/**
 * The keys of each, without `vlan` (agents before VLANs leave it out) and, for a report, without `askerMac` (agents
 * before it leave it out), so that a message with more is left to the schema (which strips what it does not know).
 */
const AGGREGATE_KEYS = 10;
const REPORT_KEYS = 5;
/**
 * hasKeys: exactly the `base` keys, and a valid `vlan` (null, or 1 to 4094) when present, and (`withMac`: a report)
 * a valid `askerMac` when present.
 */
function hasKeys(o: Record<string, unknown>, base: number, withMac: boolean): boolean {
  let n = base;
  if ("vlan" in o) {
    if (!(o.vlan === null || (typeof o.vlan === "number" && Number.isInteger(o.vlan) && o.vlan >= 1 && o.vlan <= 4094))) return false;
    n++;
  }
  if (withMac && "askerMac" in o) {
    if (!isMacText(o.askerMac)) return false;
    n++;
  }
  return keyCount(o) === n;
}

/** keyCount counts the own keys of a parsed JSON object without making the array Object.keys would. */
function keyCount(o: object): number {
  let n = 0;
  for (const k in o) if (Object.hasOwn(o, k)) n++;
  return n;
}

function fastAggregate(e: unknown): boolean {
  if (typeof e !== "object" || e === null) return false;
  const a = e as Record<string, unknown>;
  return (
    hasKeys(a, AGGREGATE_KEYS, false) &&
    isIpText(a.ip) &&
    isMacText(a.mac) &&
    KINDS.has(a.kind) &&
    isIface(a.iface) &&
    isCount(a.count, 1) &&
    isMillis(a.firstSeen) &&
    isMillis(a.lastSeen) &&
    (a.targetMac === null || isMacText(a.targetMac)) &&
    isCount(a.ethernetMismatch, 0) &&
    (a.ethSrc === null || isMacText(a.ethSrc))
  );
}

function fastReport(e: unknown): boolean {
  if (typeof e !== "object" || e === null) return false;
  const r = e as Record<string, unknown>;
  if (!hasKeys(r, REPORT_KEYS, true) || !isIpText(r.ip) || !isIpText(r.asker) || !isIface(r.iface)) return false;
  const times = r.times;
  const replies = r.replies;
  if (!Array.isArray(times) || times.length < 1 || times.length > MAX_REQUEST_TIMES || !times.every(isMillis)) return false;
  if (!Array.isArray(replies) || replies.length > 4 * MAX_REQUEST_TIMES) return false;
  return replies.every(
    (x: unknown) =>
      Array.isArray(x) &&
      x.length === 3 &&
      isCount(x[0], 0) &&
      isMacText(x[1]) &&
      typeof x[2] === "number" &&
      x[2] >= 0 &&
      x[2] <= REPLY_WINDOW_MS,
  );
}

/**
 * fastObservations checks an observations message, the one agents send ten times a second, by hand: the same rules
 * as AgentMessageSchema, without copying it. Anything it does not take (another type, a field it does not know, a
 * bad value) goes to the schema, which says what is wrong.
 */
export function fastObservations(json: unknown): AgentMessage | null {
  if (typeof json !== "object" || json === null) return null;
  const m = json as Record<string, unknown>;
  if (m.type !== "observations" || m.v !== WIRE_VERSION || keyCount(m) !== 5 || !isCount(m.dropped, 0)) return null;
  const { entries, requests } = m;
  if (!Array.isArray(entries) || entries.length > MAX_ENTRIES_PER_MESSAGE || !entries.every(fastAggregate)) return null;
  if (!Array.isArray(requests) || requests.length > MAX_ENTRIES_PER_MESSAGE || !requests.every(fastReport)) return null;
  return json as AgentMessage;
}

/** parseHubMessage validates one text frame from the hub. */
export function parseHubMessage(text: string): { ok: true; value: HubMessage } | ParseFailure {
  return parseWith(HubMessageSchema, text);
}
