// The one contract between agent and hub. Both ends import these schemas; the hub validates every frame it receives
// and the agent every frame it gets back. Bump WIRE_VERSION on any incompatible change.
import { z } from "zod";
import { CLUSTER_NAME } from "./fleet/cluster-name.js";
import { isIP, isMac } from "./packet/addr.js";
import { OBSERVATION_KINDS } from "./packet/frame.js";
import { MAX_REQUEST_TIMES, REPLY_WINDOW_MS } from "./judge/findings.js";

/**
 * WIRE_VERSION is the `v` field of every message. Version 2 carries each request a capture point saw with the replies
 * it saw to it (RequestReport), so the hub can tell one request answered by two MACs from a clean handover; a hub
 * refuses an agent of another version with a message that says to upgrade.
 */
export const WIRE_VERSION = 2;

/** HEARTBEAT_MS: each side speaks at least this often (a heartbeat when it has nothing else to say). */
export const HEARTBEAT_MS = 10_000;
/** SILENCE_MS: a peer silent this long is gone: the agent reconnects, the hub shows the agent down. */
export const SILENCE_MS = 30_000;
/**
 * FLUSH_MS: an agent sends what it aggregated at most this often (and at once past MAX_ENTRIES_PER_MESSAGE), unless
 * its hub sets a slower pace (a pace message).
 */
export const FLUSH_MS = 100;
/**
 * MAX_FLUSH_MS: the slowest pace a hub may set. A request nobody answered is reported once its reply window (1 s) is
 * over, at the agent's next send: at this pace within 1.5 s of the request, half a second before FINAL_MS (2 s), when
 * the judge takes requests in order (0.9 s at FLUSH_MS).
 */
export const MAX_FLUSH_MS = 500;

const mac = z.string().refine(isMac, "not a MAC address");
const ip = z.string().max(45).refine(isIP, "not an IP address");
/**
 * The 802.1Q VLAN the frames were tagged with, on the capturing interface (absent or null: untagged, or a priority
 * tag on the native VLAN). Agents before VLANs leave it out.
 */
const vlan = z.number().int().min(1).max(4094).nullable().optional();
/**
 * isNodeName: a Kubernetes Node name, an RFC 1123 subdomain (lowercase letters, digits, '-' and '.', at most 253
 * characters, each label starting and ending with a letter or digit). Nothing else reaches logs, pages and alerts.
 */
export function isNodeName(s: string): boolean {
  return s.length <= 253 && /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/.test(s);
}
const nodeName = z
  .string()
  .min(1)
  .max(253)
  .refine(isNodeName, "not a node name (an RFC 1123 subdomain: lowercase letters, digits, '-' and '.')");

/**
 * Bounds on what one agent can make the hub hold. A node captures on a handful of links; its facts list every link
 * (a pod's veth included: 1,024 covers the densest nodes) with at most MAX_ADDRESSES_PER_LINK addresses each
 * (kube-ipvs0 holds every Service IP: its count is sent apart).
 */
export const MAX_HELLO_INTERFACES = 256;
export const MAX_FACT_INTERFACES = 1024;
export const MAX_ADDRESSES_PER_LINK = 64;
const millis = z.number().int().nonnegative();

/** ObservationKindSchema: the frame kinds an agent reports, the very list the decoder and capture point use. */
export const ObservationKindSchema = z.enum(OBSERVATION_KINDS);

/** An ObservationAggregate sums the frames one agent saw for one (ip, mac, kind, interface, VLAN) since its last send. */
export const ObservationAggregateSchema = z.object({
  ip,
  mac,
  kind: ObservationKindSchema,
  iface: z.string().min(1).max(15),
  vlan,
  count: z.number().int().positive(),
  firstSeen: millis,
  lastSeen: millis,
  /** Last THA seen (ARP only): whether Linux accepts a gratuitous reply depends on it (DESIGN 2.5). */
  targetMac: mac.nullable(),
  /** How many of `count` had an Ethernet source different from the ARP sender MAC. */
  ethernetMismatch: z.number().int().nonnegative(),
  /** The last such Ethernet source (null when none differed). */
  ethSrc: mac.nullable(),
});
export type ObservationAggregate = z.infer<typeof ObservationAggregateSchema>;

/**
 * A RequestReport is what one capture point saw of one asker's requests for one IP since its last send: each request
 * (its time on the agent's clock) and every reply it saw to it within REPLY_WINDOW_MS. A node sees every broadcast
 * request and its own replies (the others' are unicast to the asker), so the hub joins the reports of all nodes to
 * learn who answered each request. A request is reported once it has a reply, or once its window has passed without
 * one; a reply seen later for a request already reported comes in a later report with the same time.
 */
export const RequestReportSchema = z.object({
  ip,
  asker: ip,
  /**
   * The asker's MAC: the ARP sender hardware address, or the NS's source link-layer option (its Ethernet source
   * without one). Agents before it leave it out (the hub then knows the asker by its IP alone); a hub before it
   * drops it, so neither end needs a new version.
   */
  askerMac: mac.optional(),
  iface: z.string().min(1).max(15),
  vlan,
  /** Request times, milliseconds since the epoch. */
  times: z.array(millis).min(1).max(MAX_REQUEST_TIMES),
  /** Replies seen: [index into times, the MAC that answered, milliseconds from the request]. */
  replies: z
    .array(z.tuple([z.number().int().nonnegative(), mac, z.number().nonnegative().max(REPLY_WINDOW_MS)]))
    .max(4 * MAX_REQUEST_TIMES),
});
export type RequestReport = z.infer<typeof RequestReportSchema>;

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
  /** The link's first MAX_ADDRESSES_PER_LINK addresses. */
  addresses: z.array(z.string().max(50)).max(MAX_ADDRESSES_PER_LINK),
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
  interfaces: z.array(NodeInterfaceSchema).max(MAX_FACT_INTERFACES),
  sysctl: z.object({ all: SysctlPairSchema, default: SysctlPairSchema }),
  kubeIpvs0: z.object({ present: z.boolean(), addresses: z.number().int().nonnegative() }),
  kubeProxyMode: z.enum(["ipvs", "not-ipvs"]),
  capture: z.object({
    frames: z.number().int().nonnegative(),
    dropped: z.record(z.string().max(32), z.number().int().nonnegative()).refine((o) => Object.keys(o).length <= 16, "at most 16 reasons"),
    /** libpcap's counters, summed over interfaces: packets the kernel received for us and dropped for lack of room. */
    kernelReceived: z.number().int().nonnegative(),
    kernelDropped: z.number().int().nonnegative(),
  }),
});
export type NodeFacts = z.infer<typeof NodeFactsSchema>;

const commandId = z.string().min(1).max(64);
const durationMs = z.number().int().positive().max(600_000);

/**
 * MAX_PROBE_TARGETS: the IPs one probe-many may ask at most. One round's results of that many, each with
 * MAX_PROBE_REPLIES replies at their longest, fit one message well under the hub's 1 MiB limit (wire-probe-many.test.ts
 * builds the worst case); an agent of this release says so in its hello and refuses more, and the hub splits.
 */
export const MAX_PROBE_TARGETS = 512;
/**
 * PROBE_MANY_WIRE_MAX bounds what a probe-many message may carry at all: more than any agent takes, so that an agent
 * asked for more than its own limit refuses in words (command-done) instead of dropping the command as malformed.
 */
export const PROBE_MANY_WIRE_MAX = 8 * MAX_PROBE_TARGETS;
/**
 * MAX_PROBE_REPLIES: the replies one request of a probe-many reports at most (the fastest). Two already make the
 * request answered by several MACs; the rest only lengthen the message.
 */
export const MAX_PROBE_REPLIES = 16;
/** MAX_PROBE_ROUNDS: the requests per IP of one probe-many at most (a minute at one a second). */
export const MAX_PROBE_ROUNDS = 60;
/** MIN_PROBE_MANY_INTERVAL_MS: a probe-many never asks one IP more often than once a second, as a client re-asking would. */
export const MIN_PROBE_MANY_INTERVAL_MS = 1000;
/** A ProbeTarget names one IP of a probe-many and the VLAN to ask it in (null: untagged). */
const ProbeTargetSchema = z.object({ ip, vlan: z.number().int().min(1).max(4094).nullable() });

/** ProbeReplySchema / ProbeSummarySchema mirror node/probe.ts. */
const ProbeReplySchema = z.object({ mac, latencyMs: z.number().nonnegative() });
export const ProbeSummarySchema = z.object({
  ip,
  requests: z.number().int().nonnegative(),
  unanswered: z.number().int().nonnegative(),
  multiAnswered: z.number().int().nonnegative(),
  macs: z.array(z.object({ mac, replies: z.number().int().nonnegative(), first: z.number().int().nonnegative() })).max(1024),
});

/** MAX_ENTRIES_PER_MESSAGE bounds one observations message: at most 1,000 aggregates and 1,000 request reports. */
export const MAX_ENTRIES_PER_MESSAGE = 1000;

/**
 * EVIDENCE_MESSAGE_BYTES bounds one evidence message as JSON. The hub refuses any agent message past 1 MiB (its
 * WebSocket maxPayload); a quarter of that is left for the envelope and for a hub that lowers its limit a little.
 */
export const EVIDENCE_MESSAGE_BYTES = 768 * 1024;
/** MAX_EVIDENCE_FRAME_BYTES bounds one frame of evidence: an agent keeps frames of at most 64 KiB. */
export const MAX_EVIDENCE_FRAME_BYTES = 65_535;
/** EVIDENCE_FRAME_JSON is the JSON of one evidence frame without its values: `{"tNs":"","iface":"","vlan":,"data":""},`. */
const EVIDENCE_FRAME_JSON = 40;
/** The most digits a time in nanoseconds takes (2^64 - 1 has 20), and a VLAN ("null" or up to 4094). */
const TNS_DIGITS = 20;
const VLAN_CHARS = 4;
/** MIN_EVIDENCE_DATA is the base64 of the smallest frame: an Ethernet header, 14 bytes. */
const MIN_EVIDENCE_DATA = 20;
/** MAX_EVIDENCE_FRAMES: how many of the smallest frames fit EVIDENCE_MESSAGE_BYTES (one-character values elsewhere). */
export const MAX_EVIDENCE_FRAMES = Math.floor(EVIDENCE_MESSAGE_BYTES / (EVIDENCE_FRAME_JSON + 3 + MIN_EVIDENCE_DATA));

/**
 * evidenceFrameBytes is the most JSON one frame of `dataLen` captured bytes from `iface` takes in an evidence message
 * (base64 data, a 20-digit time, a 4-character VLAN): an agent sums it to keep the message under EVIDENCE_MESSAGE_BYTES.
 */
export function evidenceFrameBytes(dataLen: number, iface: string): number {
  return EVIDENCE_FRAME_JSON + TNS_DIGITS + JSON.stringify(iface).length - 2 + VLAN_CHARS + 4 * Math.ceil(dataLen / 3);
}

const MAX_U64 = (1n << 64n) - 1n;
/**
 * An EvidenceFrame is one raw frame an agent captured: its time in nanoseconds since the epoch (decimal text: JSON
 * numbers stop being exact at 2^53), the capturing interface, its outer 802.1Q VLAN, and the bytes in base64.
 */
export const EvidenceFrameSchema = z.object({
  tNs: z
    .string()
    .regex(/^(0|[1-9][0-9]{0,19})$/, "not a time in nanoseconds (decimal digits)")
    .refine((s) => BigInt(s) <= MAX_U64, "not a time in nanoseconds (past 64 bits)"),
  iface: z.string().min(1).max(15),
  vlan: z.number().int().min(1).max(4094).nullable(),
  data: z
    .string()
    .min(MIN_EVIDENCE_DATA)
    .max(4 * Math.ceil(MAX_EVIDENCE_FRAME_BYTES / 3))
    .regex(/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/, "not base64"),
});
export type EvidenceFrame = z.infer<typeof EvidenceFrameSchema>;

/** AgentMessageSchema is every message an agent may send to the hub. */
export const AgentMessageSchema = z.discriminatedUnion("type", [
  z.object({
    v: z.literal(WIRE_VERSION),
    type: z.literal("hello"),
    node: nodeName,
    agentVersion: z.string().max(64),
    interfaces: z.array(InterfaceInfoSchema).max(MAX_HELLO_INTERFACES),
    /**
     * The agent takes probe-many commands of at most `maxTargets` IPs. Agents before it leave it out (the hub then
     * probes their IPs one probe command each); a hub before it drops it, so neither end needs a new version.
     */
    probeMany: z.object({ maxTargets: z.number().int().min(1).max(PROBE_MANY_WIRE_MAX) }).optional(),
    /** The agent sends what it holds at once when the hub asks (a flush message). Left out before it, as probeMany. */
    flush: z.literal(true).optional(),
    /** The agent sends as often as the hub's pace message says. Left out before it, as probeMany. */
    pace: z.literal(true).optional(),
    /**
     * The cluster the agent watches (its --cluster): a hub of another cluster refuses it. Left out by agents that
     * name none, and before it; any hub takes those.
     */
    cluster: z.string().regex(CLUSTER_NAME).optional(),
  }),
  z.object({
    v: z.literal(WIRE_VERSION),
    type: z.literal("observations"),
    entries: z.array(ObservationAggregateSchema).max(MAX_ENTRIES_PER_MESSAGE),
    requests: z.array(RequestReportSchema).max(MAX_ENTRIES_PER_MESSAGE),
    /** Frames the agent had to drop since its last message (buffer full while disconnected). */
    dropped: z.number().int().nonnegative(),
  }),
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("heartbeat"), t: millis }),
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("facts"), facts: NodeFactsSchema }),
  /** One probe request's replies, streamed while the probe runs. */
  z.object({
    v: z.literal(WIRE_VERSION),
    type: z.literal("probe-result"),
    id: commandId,
    seq: z.number().int().positive(),
    sentAt: millis,
    replies: z.array(ProbeReplySchema).max(1024),
  }),
  /**
   * One round of a probe-many, once every reply window of it has passed: for each IP asked, when its request went
   * out and the MACs that answered it (at most MAX_PROBE_REPLIES, the fastest first).
   */
  z.object({
    v: z.literal(WIRE_VERSION),
    type: z.literal("probe-many-result"),
    id: commandId,
    seq: z.number().int().positive().max(MAX_PROBE_ROUNDS),
    results: z
      .array(ProbeTargetSchema.extend({ sentAt: millis, replies: z.array(ProbeReplySchema).max(MAX_PROBE_REPLIES) }))
      .max(PROBE_MANY_WIRE_MAX),
  }),
  /** The end of a command: its summary, or why it was refused or failed. */
  z.object({
    v: z.literal(WIRE_VERSION),
    type: z.literal("command-done"),
    id: commandId,
    ok: z.boolean(),
    message: z.string().max(1000),
    probe: ProbeSummarySchema.optional(),
    bursts: z.number().int().nonnegative().optional(),
    /** The IPs of a probe-many this node could not ask (no interface on their network), each with why. */
    unprobed: z
      .array(ProbeTargetSchema.extend({ message: z.string().max(300) }))
      .max(PROBE_MANY_WIRE_MAX)
      .optional(),
  }),
  /**
   * evidence answers an evidence-request at once, from the frames the agent still holds: those about the IP in the
   * VLAN and window, in time order, the earliest first. `truncated`: more matched than maxBytes or one message allows
   * (ask again from the last frame's time). `heldFromMs`: the time of the oldest frame held, null when none is; a
   * window that starts before it may have lost frames to the agent's bounds.
   */
  z.object({
    v: z.literal(WIRE_VERSION),
    type: z.literal("evidence"),
    id: commandId,
    frames: z.array(EvidenceFrameSchema).max(MAX_EVIDENCE_FRAMES),
    truncated: z.boolean(),
    heldFromMs: millis.nullable(),
  }),
]);
export type AgentMessage = z.infer<typeof AgentMessageSchema>;

/** HubMessageSchema is every message the hub may send to an agent. */
export const HubMessageSchema = z.discriminatedUnion("type", [
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("welcome"), hubVersion: z.string().max(64) }),
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("heartbeat"), t: millis }),
  /**
   * flush: send what you hold now. Another node's report brought news of an IP (a MAC answering it anew); the same
   * requests as this agent saw them complete it, and waiting for its next flush would delay the verdict by up to
   * FLUSH_MS. Sent only to agents whose hello says flush.
   */
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("flush") }),
  /**
   * pace: send what you aggregated every `flushMs` (news still goes out at once). A hub with many agents slows them
   * so that it reads fewer, larger messages. Sent after welcome, and when it changes, only to agents whose hello
   * says pace; an agent goes back to FLUSH_MS on each new connection.
   */
  z.object({ v: z.literal(WIRE_VERSION), type: z.literal("pace"), flushMs: z.number().int().min(FLUSH_MS).max(MAX_FLUSH_MS) }),
  /**
   * announce: gratuitous announcements for `ip` for `durationMs`, with MetalLB's frames and timing. The agent refuses
   * unless `expectedOwner` names its node or `force` is set, so whohas never creates the conflict it looks for.
   */
  z.object({
    v: z.literal(WIRE_VERSION),
    type: z.literal("announce"),
    id: commandId,
    ip,
    /** Announce inside this VLAN: from the node's interface on it (absent or null: untagged). */
    vlan,
    durationMs,
    expectedOwner: nodeName.nullable(),
    force: z.boolean(),
  }),
  /** probe: a broadcast request for `ip` every `intervalMs` for `durationMs`, every reply MAC counted per request. */
  z.object({
    v: z.literal(WIRE_VERSION),
    type: z.literal("probe"),
    id: commandId,
    ip,
    /** Ask inside this VLAN: from the node's interface on it (absent or null: untagged). */
    vlan,
    durationMs,
    intervalMs: z.number().int().min(100).max(60_000),
  }),
  /**
   * probe-many: `rounds` broadcast requests for each of `targets` (ARP, or NS to the solicited-node group for IPv6),
   * one round every `intervalMs`, the targets' requests spread over the interval, from one capture per interface;
   * every reply MAC counted per request. Each round is reported once its replies are in (probe-many-result), then
   * command-done. Sent only to agents whose hello names probeMany, with at most its maxTargets.
   */
  z.object({
    v: z.literal(WIRE_VERSION),
    type: z.literal("probe-many"),
    id: commandId,
    targets: z.array(ProbeTargetSchema).min(1).max(PROBE_MANY_WIRE_MAX),
    rounds: z.number().int().min(1).max(MAX_PROBE_ROUNDS),
    intervalMs: z.number().int().min(MIN_PROBE_MANY_INTERVAL_MS).max(60_000),
  }),
  /**
   * evidence-request: the raw frames the agent holds about `ip` in `vlan` (null: untagged) captured in [fromMs, toMs],
   * at most `maxBytes` of them (captured bytes, summed). ARP frames count when the IP is their sender or target, NDP
   * ones when it is their target or IPv6 source. Answered at once with an evidence message.
   */
  z
    .object({
      v: z.literal(WIRE_VERSION),
      type: z.literal("evidence-request"),
      id: commandId,
      ip,
      vlan: z.number().int().min(1).max(4094).nullable(),
      fromMs: millis,
      toMs: millis,
      maxBytes: z.number().int().positive().max(EVIDENCE_MESSAGE_BYTES),
    })
    .refine((m) => m.fromMs <= m.toMs, { message: "fromMs is after toMs", path: ["toMs"] }),
]);
export type HubMessage = z.infer<typeof HubMessageSchema>;

/** A HubCommand is what the hub asks an agent to run; its results come back as CommandResults, command-done last. */
export type HubCommand = Extract<HubMessage, { type: "announce" | "probe" | "probe-many" }>;
export type CommandResult = Extract<AgentMessage, { type: "probe-result" | "probe-many-result" | "command-done" }>;
/** An EvidenceRequest asks an agent for the frames it holds about an IP; the agent answers with one EvidenceAnswer. */
export type EvidenceRequest = Extract<HubMessage, { type: "evidence-request" }>;
export type EvidenceAnswer = Extract<AgentMessage, { type: "evidence" }>;
