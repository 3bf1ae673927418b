import {
  ANSWER_WINDOW_MS,
  FLIP_FLOP_MS,
  FLIP_FLOP_MOVES,
  NO_RESPONDER_MS,
  OWNER_GRACE_MS,
  SPLIT_BRAIN_MS,
  STALE_ANNOUNCER_MS,
  STRANGER_GRACE_MS,
  type LiveFinding,
} from "./findings.js";
import type { IpJudgement } from "./ip-judgement.js";
import { name, names, type Lens } from "./lens.js";

/**
 * STALE_RELEVANT_MS: a stale announcement stops mattering after this long: routers and firewalls that default to the
 * longest ARP timeouts (4 h) have asked again by then.
 */
const STALE_RELEVANT_MS = 4 * 3_600_000;

/** IpContext is what the judge knows of one IP besides its frames: the cluster's view and the capture points' health. */
export interface IpContext {
  /**
   * Who should answer: the expected owner's node (null offline, where `--owner` names MACs) and its MACs; null when
   * no announcer is known (then no wrong-owner or stale-announcer verdict is made).
   */
  readonly owner: { readonly node: string | null; readonly macs: readonly string[] } | null;
  /** Under externalTrafficPolicy Local: the nodes hosting a serving endpoint; null otherwise. */
  readonly local: { readonly endpointNodes: readonly string[] } | null;
  /** Nodes whose capture point is down (their agent). */
  readonly downNodes: ReadonlySet<string>;
  /**
   * False when the IP is not announced over ARP/NDP (MetalLB BGP only): routers carry it, nodes that answer ARP for
   * it harm nobody, and nothing is judged. Absent: judged.
   */
  readonly layer2?: boolean;
  /**
   * The owner's MACs on interfaces its announcer does not allow (MetalLB's and Cilium's `interfaces`): an answer from
   * one is wrong-interface.
   */
  readonly ownerOtherMacs?: readonly string[];
  /**
   * True when a MAC no agent reports belongs to no node: the IP is one of the cluster's and every node of the
   * cluster has a live agent that reported its interfaces. A node whose agent is missing would otherwise look like a
   * stranger; absent or false, no address conflict is judged.
   */
  readonly strangers?: boolean;
}

/** The part of an IP's view the rules read. */
export interface RuleView {
  readonly responders: readonly { readonly mac: string; readonly node: string | null; readonly answering: boolean }[];
  readonly capturedBy: readonly string[];
}

/** NO_CONTEXT: offline, nothing is known beyond the frames. */
export const NO_CONTEXT: IpContext = { owner: null, local: null, downNodes: new Set() };

const nameOf = (r: { readonly mac: string; readonly node: string | null }, lens: Lens) => r.node ?? name(r.mac, lens);

/**
 * NONE: the empty list the rules share when nothing applies (never written to). They run for every IP every second:
 * a list made for nothing is most of what they allocate.
 */
const NONE: readonly never[] = [];

/** answeringOf is the responders that answer now: `responders` itself when all do (the judge passes only those). */
function answeringOf(responders: RuleView["responders"]): RuleView["responders"] {
  for (const r of responders) if (!r.answering) return responders.filter((x) => x.answering);
  return responders;
}

/**
 * findingsNow lists what is wrong with an IP at `now`: the evidence gathered since the last judgement (several
 * answers to one request, a takeover without announcement, a lying Ethernet source) and what holds true now (nobody
 * answers, the wrong node answers, overlapping claims, a flip-flop, a stale announcement, a silent drop, blindness).
 * The one place where every finding's rule is written; the hub and `whohas analyze` both judge through it.
 */
export function findingsNow(ip: string, j: IpJudgement | undefined, v: RuleView, ctx: IpContext, now: number, lens: Lens): LiveFinding[] {
  const out: LiveFinding[] = j === undefined ? [] : j.takeEvidence();
  if (ctx.layer2 === false) return [];
  const blind = v.capturedBy.length > 0 && v.capturedBy.every((n) => ctx.downNodes.has(n));
  if (blind) {
    out.push({
      type: "capture-lost",
      macs: [],
      detail: `the only agent${v.capturedBy.length === 1 ? "" : "s"} that captured ${ip} (${v.capturedBy.join(", ")}) ${v.capturedBy.length === 1 ? "is" : "are"} down: whohas cannot see it`,
    });
  }
  const answering = answeringOf(v.responders);
  if (j !== undefined && !blind) {
    const since = j.unansweredSince;
    if (since !== null && now - since >= NO_RESPONDER_MS && now - j.lastAsked <= ANSWER_WINDOW_MS && answering.length === 0) {
      out.push({
        type: "no-responder",
        macs: [],
        detail: `${ip} is asked for and nobody has answered for ${Math.round((now - since) / 1000)} s`,
      });
    }
    if (j.flip !== null && now - j.flip.at <= FLIP_FLOP_MS) {
      const [a, b] = j.flip.macs;
      out.push({
        type: "flip-flop",
        macs: [a, b],
        detail: `${ip} moved between ${name(a, lens)} and ${name(b, lens)} ${FLIP_FLOP_MOVES} times within ${FLIP_FLOP_MS / 60_000} min: clients keep switching nodes (two speakers taking turns, or a flapping failover)`,
        at: j.flip.at,
      });
    }
    const split = splitBrain(j, now);
    if (split !== null) {
      out.push({
        type: "split-brain",
        macs: split,
        detail: `${names(split, lens)} both announced ${ip} within ${SPLIT_BRAIN_MS / 1000} s and kept claiming it: two speakers think they own it`,
      });
    }
  }
  // A host that is no node of the cluster answering for one of its IPs: an address conflict, whoever else answers.
  // Only once it has answered for STRANGER_GRACE_MS: a node's MAC that just appeared is not known at once. A host
  // that answers only off-cluster clients (by unicast, which no agent sees) is known by its answers to whohas's probes.
  const stranger = (r: { readonly mac: string; readonly node: string | null; readonly answering: boolean }) => {
    if (r.node !== null || j === undefined) return false;
    const since = r.answering ? j.answeringSince(r.mac, now) : null;
    return (since !== null && now - since >= STRANGER_GRACE_MS) || j.answersProbes(r.mac, now, STRANGER_GRACE_MS);
  };
  const strangers: readonly string[] = ctx.strangers === true ? v.responders.filter(stranger).map((r) => r.mac) : NONE;
  if (strangers.length > 0) {
    const named = strangers.map((m) => `${m} (${lens.vendorOf?.(m) ?? "vendor not registered"})`).join(" and ");
    out.push({
      type: "address-conflict",
      macs: [...strangers].sort(),
      detail: `${named}, not a node of the cluster, answer${strangers.length === 1 ? "s" : ""} for ${ip}: another host holds this LoadBalancer address and clients that cache its MAC never reach the cluster. Find it by its MAC in the switch's MAC address table`,
    });
  }
  const owner = ctx.owner;
  // The owner answering from an interface its announcer does not name (it may name none the owner has).
  const otherMacs = ctx.ownerOtherMacs;
  const other =
    otherMacs === undefined
      ? NONE
      : answering.filter((r) => {
          if (!otherMacs.includes(r.mac)) return false;
          const since = j?.answeringSince(r.mac, now) ?? null;
          return since === null || now - since >= OWNER_GRACE_MS;
        });
  if (owner !== null && other.length > 0) {
    out.push({
      type: "wrong-interface",
      macs: other.map((r) => r.mac),
      detail: `${owner.node ?? "the owner"} answers for ${ip} from ${other.map((r) => r.mac).join(", ")}, an interface its announcer does not name: the announcer never said it would be reached there`,
    });
  }
  if (owner !== null && owner.macs.length > 0) {
    // A node that is not the owner answers (with a node owner, only other nodes count: a stranger is another matter),
    // for longer than the owner's status takes to follow a failover.
    // A node whose last answer came before the owner started answering is a handover ending, not a wrong owner.
    const ownerSince = Math.min(...owner.macs.map((m) => j?.answeringSince(m, now) ?? Infinity));
    const settled = (mac: string) => {
      const since = j?.answeringSince(mac, now) ?? null;
      const last = j?.macs.get(mac)?.lastReply ?? now;
      return (since === null || now - since >= OWNER_GRACE_MS) && !(ownerSince !== Infinity && last < ownerSince);
    };
    const wrong = answering.filter(
      (r) =>
        !owner.macs.includes(r.mac) &&
        ctx.ownerOtherMacs?.includes(r.mac) !== true &&
        (owner.node === null || (r.node !== null && r.node !== owner.node)) &&
        settled(r.mac),
    );
    if (wrong.length > 0) {
      out.push({
        type: "wrong-owner",
        macs: wrong.map((r) => r.mac),
        detail: `${wrong.map((r) => nameOf(r, lens)).join(", ")} answer${wrong.length === 1 ? "s" : ""} for ${ip}; the owner should be ${owner.node ?? owner.macs.join(" or ")}`,
      });
    }
    const last = j?.lastAnnouncer ?? null;
    if (
      j !== undefined &&
      last !== null &&
      !owner.macs.includes(last.mac) &&
      now - last.at >= STALE_ANNOUNCER_MS &&
      now - last.at <= STALE_RELEVANT_MS
    ) {
      const ownerSince = owner.macs.some((m) => (j.macs.get(m)?.episodes ?? []).some((e) => e.last > last.at));
      if (!ownerSince) {
        const who = name(last.mac, lens);
        // Both sides: the node clients were told about, then the owner's MACs that answer now (else all of them).
        const answeringOwner = owner.macs.filter((m) => answering.some((r) => r.mac === m));
        out.push({
          type: "stale-announcer",
          macs: [last.mac, ...(answeringOwner.length > 0 ? answeringOwner : owner.macs)],
          detail: `the last gratuitous announcement for ${ip} came from ${who}, not from its owner ${owner.node ?? owner.macs.join(" or ")}, which has not announced since: clients and switches that took it send to ${who}. Force re-announce from the owner`,
          at: last.at,
        });
      }
    }
  }
  const nodes = silentDropNodes(answering, ctx.local);
  if (nodes.length > 0) {
    out.push({
      type: "silent-drop",
      macs: answering.filter((r) => r.node !== null && nodes.includes(r.node)).map((r) => r.mac),
      detail: `${nodes.join(", ")} answer${nodes.length === 1 ? "s" : ""} for ${ip} with no local endpoint (externalTrafficPolicy Local): traffic sent there is dropped`,
    });
  }
  return out;
}

/**
 * silentDropNodes lists the answering nodes that host no serving endpoint of an externalTrafficPolicy Local Service:
 * a client whose cache holds their MAC sends traffic that kube-proxy drops without a word ("it worked for a minute,
 * then timeouts"). Empty unless the IP is under ETP Local.
 */
export function silentDropNodes(answering: RuleView["responders"], local: IpContext["local"]): readonly string[] {
  if (local === null) return NONE;
  return [
    ...new Set(answering.filter((r) => r.answering && r.node !== null && !local.endpointNodes.includes(r.node)).map((r) => r.node ?? "")),
  ].sort();
}

/**
 * splitBrain finds two MACs whose announcements came within SPLIT_BRAIN_MS of each other and whose claims overlapped:
 * each announced or answered after the other had started announcing. A clean handover is sequential (the old owner
 * stops, then the new one announces) and never overlaps.
 */
function splitBrain(j: IpJudgement, now: number): [string, string] | null {
  // Made only when two MACs announced lately: most IPs have one announcer or none.
  let claims: { mac: string; first: number; end: number; last: number }[] | null = null;
  for (const m of j.macs.values()) {
    const e = m.episodes?.[m.episodes.length - 1];
    if (e === undefined || now - e.last > SPLIT_BRAIN_MS) continue;
    (claims ??= []).push({ mac: m.mac, first: e.first, end: Math.max(e.last, m.lastReply >= e.first ? m.lastReply : 0), last: e.last });
  }
  if (claims === null || claims.length < 2) return null;
  for (let a = 0; a < claims.length; a++) {
    for (let b = a + 1; b < claims.length; b++) {
      const x = claims[a];
      const y = claims[b];
      if (x === undefined || y === undefined || Math.abs(x.first - y.first) > SPLIT_BRAIN_MS) continue;
      if (x.first < y.end && y.first < x.end) return [x.mac, y.mac].sort() as [string, string];
    }
  }
  return null;
}
