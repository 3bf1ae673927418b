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
  /**
   * Replies only: how many of them answered a request this capture point saw within REQUEST_WINDOW_MS, and the sum
   * of those delays (request seen -> reply seen, one clock). A node sees its own replies, rarely the others' (they
   * are unicast to the asker): the hub compares these delays across nodes to tell who tends to win the race.
   */
  latencyCount: z.number().int().nonnegative().optional(),
  latencySumMs: z.number().nonnegative().optional(),
});
export type ObservationAggregate = z.infer<typeof ObservationAggregateSchema>;

export const InterfaceInfoSchema = z.object({
  name: z.string().min(1).max(15),
  mac,
  up: z.boolean(),
});
export type InterfaceInfo = z.infer<typeof InterfaceInfoSchema>;

/** SysctlPairSchema: arp_ignore and arp_announce as read from /proc/sys/net/ipv4/conf/NAME/. */
const SysctlPairSchema = z.object({ arpIgnore: z.number().int().min(0).max(8), arpAnnounce: z.number().int().min(0).max(2) });

/** NodeInterfaceSchema is one link of the node as the agent reports it in its facts. */
export const NodeInterfaceSchema = z.object({
  name: z.string().min(1).max(15),
  mac,
  up: z.boolean(),
  master: z.string().max(15).nullable(),
  addresses: z.array(z.string().max(50)).max(4096),
  own: SysctlPairSchema,
  /** What the kernel applies: max(all, own) for both. */
  effective: SysctlPairSchema,
  captured: z.boolean(),
});
export type NodeInterface = z.infer<typeof NodeInterfaceSchema>;

/** NodeFactsSchema is what an agent knows of its node: sent at start, every 10 s and on change. */
export const NodeFactsSchema = z.object({
  node: nodeName,
  agentVersion: z.string().max(64),
  interfaces: z.array(NodeInterfaceSchema).max(4096),
  sysctl: z.object({ all: SysctlPairSchema, default: SysctlPairSchema }),
  kubeIpvs0: z.object({ present: z.boolean(), addresses: z.number().int().nonnegative() }),
  kubeProxyMode: z.enum(["ipvs", "not-ipvs"]),
  capture: z.object({
    frames: z.number().int().nonnegative(),
    dropped: z.record(z.string(), z.number().int().nonnegative()),
    /** libpcap's counters, summed over interfaces: packets the kernel received for us and dropped for lack of room. */
    kernelReceived: z.number().int().nonnegative(),
    kernelDropped: z.number().int().nonnegative(),
  }),
});
export type NodeFacts = z.infer<typeof NodeFactsSchema>;

const commandId = z.string().min(1).max(64);
const durationMs = z.number().int().positive().max(600_000);

/** ProbeReplySchema / ProbeSummarySchema mirror node/probe.ts. */
const ProbeReplySchema = z.object({ mac, latencyMs: z.number().nonnegative() });
export const ProbeSummarySchema = z.object({
  ip,
  requests: z.number().int().nonnegative(),
  unanswered: z.number().int().nonnegative(),
  multiAnswered: z.number().int().nonnegative(),
  macs: z.array(z.object({ mac, replies: z.number().int().nonnegative(), first: z.number().int().nonnegative() })).max(1024),
});

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
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("facts"), facts: NodeFactsSchema }),
  /** One probe request's replies, streamed while the probe runs. */
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("probe-result"), id: commandId, seq: z.number().int().positive(), sentAt: millis, replies: z.array(ProbeReplySchema).max(1024) }),
  /** The end of a command: its summary, or why it was refused or failed. */
  z.object({
    v: z.literal(WIRE_VERSION),
    type: z.literal("command-done"),
    id: commandId,
    ok: z.boolean(),
    message: z.string().max(1000),
    probe: ProbeSummarySchema.optional(),
    bursts: z.number().int().nonnegative().optional(),
  }),
]);
export type AgentMessage = z.infer<typeof AgentMessageSchema>;

/** HubMessageSchema is every message the hub may send to an agent. */
export const HubMessageSchema = z.discriminatedUnion("type", [
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("welcome"), hubVersion: z.string().max(64) }),
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("heartbeat"), t: millis }),
  /**
   * announce: gratuitous announcements for `ip` for `durationMs`, with MetalLB's frames and timing. The agent refuses
   * unless `expectedOwner` names its node or `force` is set, so whohas never creates the conflict it looks for.
   */
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("announce"), id: commandId, ip, durationMs, expectedOwner: nodeName.nullable(), force: z.boolean() }),
  /** probe: a broadcast request for `ip` every `intervalMs` for `durationMs`, every reply MAC counted per request. */
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("probe"), id: commandId, ip, durationMs, intervalMs: z.number().int().min(100).max(60_000) }),
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
