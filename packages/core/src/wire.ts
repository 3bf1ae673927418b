// The one contract between agent and hub (STYLE 18). Both ends import these schemas; the hub validates every frame
// it receives and the agent every frame it gets back. Bump WIRE_VERSION on any incompatible change.
import { z } from "zod";
import { isIP, isMac } from "./packet/addr.js";

/** WIRE_VERSION is the `v` field of every message. */
export const WIRE_VERSION = 1;

const mac = z.string().refine(isMac, "not a MAC address");
const ip = z.string().max(45).refine(isIP, "not an IP address");
const nodeName = z.string().min(1).max(253);
const millis = z.number().int().nonnegative();

/** ObservationKindSchema lists the frame kinds an agent reports (see packet/frame.ts). */
export const ObservationKindSchema = z.enum([
  "request", "reply", "gratuitous-request", "gratuitous-reply", "probe", "ns", "ns-dad", "na-solicited", "na-unsolicited",
]);

/** An ObservationAggregate sums the frames one agent saw for one (ip, mac, kind, interface) since its last send. */
export const ObservationAggregateSchema = z.object({
  ip,
  mac,
  kind: ObservationKindSchema,
  iface: z.string().min(1).max(15),
  count: z.number().int().positive(),
  firstSeen: millis,
  lastSeen: millis,
  /** Last peer IP (the asker of a request, the destination of a reply). */
  peerIp: ip,
  /** Last THA seen (ARP only). */
  targetMac: mac.nullable(),
  /** How many of `count` had an Ethernet source different from the ARP sender MAC. */
  ethernetMismatch: z.number().int().nonnegative(),
});
export type ObservationAggregate = z.infer<typeof ObservationAggregateSchema>;

export const InterfaceInfoSchema = z.object({
  name: z.string().min(1).max(15),
  mac,
  up: z.boolean(),
});
export type InterfaceInfo = z.infer<typeof InterfaceInfoSchema>;

/** MAX_ENTRIES_PER_MESSAGE bounds one observations message (issue 4: at most 1,000 entries per send). */
export const MAX_ENTRIES_PER_MESSAGE = 1000;

/** AgentMessageSchema is every message an agent may send to the hub. */
export const AgentMessageSchema = z.discriminatedUnion("type", [
  z.object({
    v: z.literal(WIRE_VERSION),
    type: z.literal("hello"),
    node: nodeName,
    agentVersion: z.string().max(64),
    interfaces: z.array(InterfaceInfoSchema).max(4096),
  }),
  z.object({
    v: z.literal(WIRE_VERSION),
    type: z.literal("observations"),
    entries: z.array(ObservationAggregateSchema).max(MAX_ENTRIES_PER_MESSAGE),
    /** Aggregates the agent had to drop since its last message (buffer full while disconnected). */
    dropped: z.number().int().nonnegative(),
  }),
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("heartbeat"), t: millis }),
]);
export type AgentMessage = z.infer<typeof AgentMessageSchema>;

/** HubMessageSchema is every message the hub may send to an agent. */
export const HubMessageSchema = z.discriminatedUnion("type", [
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("welcome"), hubVersion: z.string().max(64) }),
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("heartbeat"), t: millis }),
]);
export type HubMessage = z.infer<typeof HubMessageSchema>;

/** A ParseFailure explains, in one line a person can act on, why a message was refused. */
export interface ParseFailure {
  readonly ok: false;
  readonly message: string;
}

function parseWith<T>(schema: z.ZodType<T>, text: string): { ok: true; value: T } | ParseFailure {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { ok: false, message: `wire: not JSON (${(e as Error).message})` };
  }
  const r = schema.safeParse(json);
  if (r.success) return { ok: true, value: r.data };
  const first = r.error.issues[0];
  const where = first?.path.length ? first.path.join(".") : "message";
  return { ok: false, message: `wire: ${where}: ${first?.message ?? "invalid"}` };
}

/** parseAgentMessage validates one text frame from an agent. */
export function parseAgentMessage(text: string): { ok: true; value: AgentMessage } | ParseFailure {
  return parseWith(AgentMessageSchema, text);
}

/** parseHubMessage validates one text frame from the hub. */
export function parseHubMessage(text: string): { ok: true; value: HubMessage } | ParseFailure {
  return parseWith(HubMessageSchema, text);
}
