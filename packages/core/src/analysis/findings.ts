/**
 * FindingType names what whohas found wrong with an IP. The first five follow arpwatch's reports; the rest are
 * MetalLB layer 2 failure modes (DESIGN 1, 2.5).
 * - `multi-responder`: two or more MACs answered the same request (the IPVS strictARP=false symptom).
 * - `no-responder`: the IP was asked for and nobody answered within NO_RESPONDER_MS.
 * - `changed`: the IP moved to a MAC it never had ("changed ethernet address").
 * - `flip-flop`: the IP went back to its previous MAC within FLIP_FLOP_MS.
 * - `split-brain`: two MACs announced the IP (gratuitous ARP / unsolicited NA) within SPLIT_BRAIN_MS.
 * - `ethernet-mismatch`: a frame's Ethernet source is not its ARP sender MAC (Microsoft NLB does it on purpose).
 * - `wrong-owner`: a MAC that is not the expected owner's answered or announced.
 * - `silent-drop`: under externalTrafficPolicy Local, a node with no local endpoint answers: clients that cache its
 *   MAC send traffic kube-proxy drops without a word (the hub only: it needs the cluster's EndpointSlices).
 * - `capture-lost`: every agent that captured this IP is down, so whohas is blind to it (the hub only).
 * - `agent-down`: a node's agent has been silent for AGENT_DOWN_MS (the hub only; the subject is the node).
 * - `strictarp-drift`: a node's kernel does not do what kube-proxy's ConfigMap says (the hub only; the node).
 */
export type FindingType =
  | "multi-responder"
  | "no-responder"
  | "changed"
  | "flip-flop"
  | "split-brain"
  | "ethernet-mismatch"
  | "wrong-owner"
  | "silent-drop"
  | "capture-lost"
  | "agent-down"
  | "strictarp-drift";

/** The windows of the findings (issue 3). */
export const REQUEST_WINDOW_MS = 1000;
export const NO_RESPONDER_MS = 3000;
export const FLIP_FLOP_MS = 10 * 60_000;
export const SPLIT_BRAIN_MS = 10_000;
/**
 * CLEAR_AFTER_MS is the hysteresis: a finding clears only after this long without new evidence while the IP is
 * still observed, so an IP whose race flips every few seconds does not open and close an incident each time.
 */
export const CLEAR_AFTER_MS = 60_000;
/** MAX_EVIDENCE_TIMES bounds the sample times kept per finding. */
export const MAX_EVIDENCE_TIMES = 10;

/** A Finding is one problem on one IP, with its evidence. */
export interface Finding {
  readonly type: FindingType;
  readonly ip: string;
  /** The MACs involved (answering, announcing, or the old and new MAC of a change). */
  readonly macs: readonly string[];
  readonly firstSeen: number;
  readonly lastSeen: number;
  /** How many times the evidence was seen. */
  readonly count: number;
  /** Times of the first pieces of evidence (ms since the epoch). */
  readonly samples: readonly number[];
  /** One line a person can read. */
  readonly detail: string;
  readonly active: boolean;
}
