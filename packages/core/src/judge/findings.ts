/**
 * FindingType names what whohas found wrong with an IP (or, for the last three, a node or the cluster). The judge raises each one
 * from the same evidence live (the hub) and offline (`whohas analyze`); the cluster-only ones need what only the hub
 * knows (EndpointSlices, its agents).
 * - `multi-responder`: one request was answered by two or more MACs (the IPVS strictARP=false symptom).
 * - `no-responder`: the IP is asked for and nobody has answered for NO_RESPONDER_MS.
 * - `changed`: the answers moved to another MAC that sent no gratuitous announcement: switches and clients that
 *   cached the old MAC keep sending there until they ask again (arpwatch's "changed ethernet address", made specific
 *   to the failure MetalLB's announcements exist to prevent).
 * - `flip-flop`: the answers went back and forth between two MACs FLIP_FLOP_MOVES times within FLIP_FLOP_MS.
 * - `split-brain`: two MACs announced the IP within SPLIT_BRAIN_MS and their claims overlapped (the first one did
 *   not stop when the second one started).
 * - `stale-announcer`: the last gratuitous announcement came from a MAC that is not the expected owner's, and the
 *   owner has not announced since: clients and switches that took it keep sending to the wrong node.
 * - `ethernet-mismatch`: a frame's Ethernet source is not its ARP sender MAC (Microsoft NLB does it on purpose).
 * - `wrong-owner`: a node that is not the expected owner answers.
 * - `wrong-interface`: the owner answers from an interface its announcer does not name (MetalLB's or Cilium's
 *   `interfaces`).
 * - `silent-drop`: under externalTrafficPolicy Local, a node with no local endpoint answers: clients that cache its
 *   MAC send traffic kube-proxy drops without a word (the hub only: it needs the cluster's EndpointSlices).
 * - `capture-lost`: every agent that captured this IP is down, so whohas is blind to it (the hub only).
 * - `agent-down`: a node's agent has been silent for AGENT_DOWN_MS (the hub only; the subject is the node).
 * - `strictarp-drift`: a node's kernel does not do what kube-proxy's ConfigMap says (the hub only; the node).
 * - `strictarp-reverted`: kube-proxy's ConfigMap went from strictARP true to false (an installer regenerating it, or
 *   a person): every IPVS node answers for every VIP again once kube-proxy restarts (the hub only; the subject is
 *   the ConfigMap, cluster/kube-proxy).
 */
export type FindingType =
  | "multi-responder"
  | "address-conflict"
  | "no-responder"
  | "changed"
  | "flip-flop"
  | "split-brain"
  | "stale-announcer"
  | "ethernet-mismatch"
  | "wrong-owner"
  | "wrong-interface"
  | "silent-drop"
  | "capture-lost"
  | "agent-down"
  | "strictarp-drift"
  | "strictarp-reverted";

/**
 * FINDING_ORDER ranks findings worst first: what an incident that holds several is named after. Clients sent to the
 * wrong node come first (several answering, split brain, a node that drops them), then an IP nobody or the wrong
 * owner answers, then how it moved, then what only suggests a problem, then what is about the watching itself.
 */
export const FINDING_ORDER: readonly FindingType[] = [
  "split-brain",
  "multi-responder",
  "address-conflict",
  "silent-drop",
  "wrong-owner",
  "no-responder",
  "stale-announcer",
  "flip-flop",
  "changed",
  "wrong-interface",
  "ethernet-mismatch",
  "agent-down",
  "strictarp-reverted",
  "strictarp-drift",
  "capture-lost",
];

/** worstFinding is the worst of `types` by FINDING_ORDER (undefined for none). */
export function worstFinding(types: Iterable<FindingType>): FindingType | undefined {
  let worst: FindingType | undefined;
  for (const t of types) if (worst === undefined || FINDING_ORDER.indexOf(t) < FINDING_ORDER.indexOf(worst)) worst = t;
  return worst;
}

/**
 * REPLY_WINDOW_MS: a reply answers its asker's latest request seen at most this long before it. Kernels answer ARP in
 * microseconds and MetalLB's speaker from user space in milliseconds; Linux asks again after retrans_time (1 s)
 * without an answer, so a reply later than that would answer the next request anyway.
 */
export const REPLY_WINDOW_MS = 1000;
/**
 * JOIN_MS: two capture points' sightings of one asker's request for one IP are the same request when their times,
 * each on its own node's clock, differ by at most this. A broadcast reaches every node of a segment within a
 * millisecond; the rest is clock skew, which NTP keeps to a few milliseconds on a LAN. Requests of one asker closer
 * together than this cannot be told apart across nodes: they count as asked, never as evidence of who answered.
 */
export const JOIN_MS = 50;
/**
 * FINAL_MS: a request is final this long after it was asked: no capture point will add a reply to it any more (the
 * reply window, an agent's send interval (100 ms, up to MAX_FLUSH_MS when the hub paces it) and the join tolerance,
 * with room for a busy hub).
 */
export const FINAL_MS = 2000;
/** MAX_REQUEST_TIMES bounds the requests one report of a capture point lists for one asker and IP. */
export const MAX_REQUEST_TIMES = 1000;
/**
 * ANSWER_WINDOW_MS is how recent an answer must be to count as answering now. Clients in the field re-ARP every few
 * seconds at most (Linux's base_reachable_time is 30 s, routers poll more often), so 5 s shows a change within one
 * refresh without flapping between requests.
 */
export const ANSWER_WINDOW_MS = 5000;

/**
 * isNews: a MAC last heard answering or announcing an IP at `lastMs` (0 or -Infinity: never) and heard again at `atMs`
 * answers it anew: a new responder, one back, a takeover. Agents send such frames at once, and the hub asks the other
 * agents for their reports of the same requests.
 */
export const isNews = (lastMs: number, atMs: number): boolean => atMs - lastMs > ANSWER_WINDOW_MS;
export const NO_RESPONDER_MS = 3000;
export const SPLIT_BRAIN_MS = 10_000;
/**
 * ANNOUNCE_GRACE_MS: a new owner's gratuitous announcement counts for its takeover when sent between the old owner's
 * last reply and this long after the new owner's first reply. MetalLB sends its first burst at once when it takes an
 * IP, and again every 1.1 s for 5 s (DESIGN 2.2).
 */
export const ANNOUNCE_GRACE_MS = 2000;
/**
 * FLIP_FLOP_MS / FLIP_FLOP_MOVES: the answers moving between the same two MACs this many times within this long is a
 * flip-flop. One move back is not: MetalLB hands an IP back to the node first in its election order when that node's
 * speaker returns (a rolling restart moves every IP away and back once).
 */
export const FLIP_FLOP_MS = 10 * 60_000;
export const FLIP_FLOP_MOVES = 3;
/**
 * OWNER_GRACE_MS: how long another node may answer before it is the wrong owner. MetalLB writes the new owner's
 * status (ServiceL2Status, the nodeAssigned Event) after that node starts answering, and the hub learns it a moment
 * later from its watch: a failover must not page for that moment.
 */
export const OWNER_GRACE_MS = 5000;
/**
 * STRANGER_GRACE_MS: how long a MAC no agent reports must keep answering before it is called a stranger. Agents
 * report a node's other interfaces with their facts every 10 s: a node's MAC that appears is known within that.
 */
export const STRANGER_GRACE_MS = 20_000;
/**
 * PROBE_ANSWER_MS: answers to whohas's own probes count as answering for this long, and a MAC that answered probes
 * with no gap longer than this has answered them throughout. The hub probes each LoadBalancer IP every 60 s at the
 * slowest: this spans two probes and the jitter between them.
 */
export const PROBE_ANSWER_MS = 150_000;
/** STALE_ANNOUNCER_MS: how long the expected owner has to announce after another node's announcement. */
export const STALE_ANNOUNCER_MS = 10_000;
/**
 * CLEAR_AFTER_MS is the hysteresis: a finding clears only after this long without new evidence, so an IP whose race
 * flips every few seconds does not open and close an incident each time.
 */
export const CLEAR_AFTER_MS = 60_000;
/** MAX_EVIDENCE_TIMES bounds the sample times kept per finding. */
export const MAX_EVIDENCE_TIMES = 10;
/** MAX_HANDOVERS bounds the handovers kept per IP (newest first). */
export const MAX_HANDOVERS = 50;

/** A LiveFinding is one problem present on an IP at one judgement, with when its evidence was seen. */
export interface LiveFinding {
  readonly type: FindingType;
  readonly macs: readonly string[];
  readonly detail: string;
  /** When the evidence was seen (a request's time); absent: at the judgement. */
  readonly at?: number;
}

/** An OpenFinding is a finding the tracker holds open (an incident while it lasts). */
export interface OpenFinding {
  readonly ip: string;
  readonly type: FindingType;
  readonly macs: readonly string[];
  readonly detail: string;
  readonly firstSeen: number;
  readonly lastSeen: number;
  /** How many judgements saw it present. */
  readonly count: number;
  /** Times it was seen, the first MAX_EVIDENCE_TIMES of them. */
  readonly samples: readonly number[];
}

/** A Transition is what one judgement changed: a finding opened, its evidence grew (new MACs), or it cleared. */
export type Transition =
  | { readonly kind: "opened"; readonly finding: OpenFinding }
  | { readonly kind: "updated"; readonly finding: OpenFinding }
  | { readonly kind: "cleared"; readonly finding: OpenFinding; readonly at: number };

/** A Party is one side of a handover: the MAC, and its node when known. */
export interface Party {
  readonly mac: string;
  readonly node: string | null;
}

/**
 * A Handover is the answering MAC moving from one node to another with no request answered by both: a failover or
 * a planned move, not an incident. `gapMs` runs from the old owner's last reply to the new owner's first reply or
 * gratuitous announcement; `unanswered` counts the requests asked in between that nobody answered.
 */
export interface Handover {
  readonly from: Party;
  readonly to: Party;
  readonly at: number;
  readonly gapMs: number;
  readonly unanswered: number;
  /** Whether the new owner sent a gratuitous announcement for its takeover (null until ANNOUNCE_GRACE_MS passed). */
  readonly announced: boolean | null;
}
