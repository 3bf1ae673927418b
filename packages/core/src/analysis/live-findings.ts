import { SPLIT_BRAIN_MS, CLEAR_AFTER_MS, MAX_EVIDENCE_TIMES, NO_RESPONDER_MS, type FindingType } from "./findings.js";
import type { IpView } from "./ip-table.js";

/** LiveContext is what the hub knows of one IP besides its traffic. */
export interface LiveContext {
  /** The node that should answer (MetalLB's status, its Event, or the computed election); null when unknown. */
  readonly expectedOwner: string | null;
  /** Answering nodes with no local endpoint of an ETP Local Service. */
  readonly silentDropNodes: readonly string[];
  /** Nodes whose agent is down now. */
  readonly downAgents: ReadonlySet<string>;
}

/** A LiveFinding is one problem present on an IP right now, as the hub sees it from aggregates. */
export interface LiveFinding {
  readonly type: FindingType;
  readonly macs: readonly string[];
  readonly detail: string;
}

const nodeOrMac = (r: { node: string | null; mac: string }) => r.node ?? r.mac;

/**
 * liveFindings judges one IP at `now` from the hub's view (aggregates of every capture point) and the cluster's
 * context. It complements the frame-level Analyzer, which needs each frame and runs where frames are (offline
 * analysis): the hub has counts per minute, so it judges what is true now and leaves hysteresis to a FindingTracker.
 */
export function liveFindings(v: IpView, ctx: LiveContext, now: number): LiveFinding[] {
  const out: LiveFinding[] = [];
  const answering = v.responders.filter((r) => r.answering);
  if (v.state === "multi-responder") {
    out.push({
      type: "multi-responder",
      macs: answering.map((r) => r.mac),
      detail: `${answering.length} nodes answer for ${v.ip} (${answering.map(nodeOrMac).join(", ")}): clients cache whichever wins the race`,
    });
  }
  // A first request waits NO_RESPONDER_MS for its answer before the IP counts as unanswered (as in the Analyzer).
  if (v.state === "no-responder" && v.unansweredSince !== null && now - v.unansweredSince >= NO_RESPONDER_MS) {
    out.push({ type: "no-responder", macs: [], detail: `${v.ip} is asked for and nobody has answered for ${Math.round((now - v.unansweredSince) / 1000)} s` });
  }
  if (ctx.expectedOwner !== null) {
    const wrong = answering.filter((r) => r.node !== null && r.node !== ctx.expectedOwner);
    if (wrong.length > 0) {
      out.push({
        type: "wrong-owner",
        macs: wrong.map((r) => r.mac),
        detail: `${wrong.map(nodeOrMac).join(", ")} answer${wrong.length === 1 ? "s" : ""} for ${v.ip}; the owner should be ${ctx.expectedOwner}`,
      });
    }
  }
  if (ctx.silentDropNodes.length > 0) {
    const macs = answering.filter((r) => r.node !== null && ctx.silentDropNodes.includes(r.node)).map((r) => r.mac);
    out.push({
      type: "silent-drop",
      macs,
      detail: `${ctx.silentDropNodes.join(", ")} answer${ctx.silentDropNodes.length === 1 ? "s" : ""} for ${v.ip} with no local endpoint (externalTrafficPolicy Local): traffic sent there is dropped`,
    });
  }
  // Split brain: two MACs announced the IP within SPLIT_BRAIN_MS of each other, recently.
  const announcers = v.responders.filter((r) => r.lastGratuitous !== null && now - r.lastGratuitous <= SPLIT_BRAIN_MS);
  if (announcers.length >= 2) {
    out.push({
      type: "split-brain",
      macs: announcers.map((r) => r.mac),
      detail: `${announcers.map(nodeOrMac).join(" and ")} both announced ${v.ip} within ${SPLIT_BRAIN_MS / 1000} s`,
    });
  }
  if (v.capturedBy.length > 0 && v.capturedBy.every((n) => ctx.downAgents.has(n))) {
    out.push({
      type: "capture-lost",
      macs: [],
      detail: `the only agent${v.capturedBy.length === 1 ? "" : "s"} that captured ${v.ip} (${v.capturedBy.join(", ")}) ${v.capturedBy.length === 1 ? "is" : "are"} down: whohas cannot see it`,
    });
  }
  return out;
}

/** An OpenFinding is a finding the tracker holds open (an incident while it lasts). */
export interface OpenFinding {
  readonly ip: string;
  readonly type: FindingType;
  readonly macs: readonly string[];
  readonly detail: string;
  readonly firstSeen: number;
  readonly lastSeen: number;
  /** How many evaluations saw it present. */
  readonly count: number;
  /** Times it was seen, the first MAX_EVIDENCE_TIMES of them. */
  readonly samples: readonly number[];
}

/** A Transition is what one evaluation changed: a finding opened, its evidence grew (new MACs), or it cleared. */
export type Transition =
  | { readonly kind: "opened"; readonly finding: OpenFinding }
  | { readonly kind: "updated"; readonly finding: OpenFinding }
  | { readonly kind: "cleared"; readonly finding: OpenFinding; readonly at: number };

interface Held {
  ip: string;
  type: FindingType;
  macs: string[];
  detail: string;
  firstSeen: number;
  lastSeen: number;
  count: number;
  samples: number[];
}

const freeze = (h: Held): OpenFinding => ({ ...h, macs: [...h.macs], samples: [...h.samples] });

/**
 * A FindingTracker turns "present now" judgements into incidents with hysteresis: a finding opens the first time
 * it is present and clears only after `clearAfterMs` without being present, so a race that flips every few seconds
 * is one incident, not dozens. Pure: time is what `update` is given.
 */
export class FindingTracker {
  readonly #held = new Map<string, Map<FindingType, Held>>();

  constructor(readonly clearAfterMs = CLEAR_AFTER_MS) {}

  /** restore re-opens findings read back from storage after a restart. */
  restore(open: readonly OpenFinding[]): void {
    for (const f of open) this.#slot(f.ip).set(f.type, { ...f, macs: [...f.macs], samples: [...f.samples] });
  }

  /** update records what is present on `ip` at `now` and returns what changed. */
  update(ip: string, now: number, present: readonly LiveFinding[]): Transition[] {
    const out: Transition[] = [];
    let held = this.#held.get(ip);
    for (const f of present) {
      held ??= this.#slot(ip);
      const h = held.get(f.type);
      if (h === undefined) {
        const n: Held = { ip, type: f.type, macs: [...f.macs].sort(), detail: f.detail, firstSeen: now, lastSeen: now, count: 1, samples: [now] };
        held.set(f.type, n);
        out.push({ kind: "opened", finding: freeze(n) });
        continue;
      }
      h.lastSeen = now;
      h.count++;
      if (h.samples.length < MAX_EVIDENCE_TIMES) h.samples.push(now);
      const added = f.macs.filter((m) => !h.macs.includes(m));
      if (added.length > 0) {
        h.macs = [...h.macs, ...added].sort();
        h.detail = f.detail;
        out.push({ kind: "updated", finding: freeze(h) });
      }
    }
    if (held === undefined) return out;
    for (const [type, h] of held) {
      if (present.some((f) => f.type === type)) continue;
      if (now - h.lastSeen >= this.clearAfterMs) {
        held.delete(type);
        out.push({ kind: "cleared", finding: freeze(h), at: now });
      }
    }
    if (held.size === 0) this.#held.delete(ip);
    return out;
  }

  /** has tells whether `ip` holds an open finding. */
  has(ip: string): boolean {
    return this.#held.has(ip);
  }

  /** ips lists the IPs holding an open finding (to re-evaluate them when their traffic has gone quiet). */
  ips(): string[] {
    return [...this.#held.keys()];
  }

  /** open lists the open findings of `ip`, or of every IP. */
  open(ip?: string): OpenFinding[] {
    const slots = ip === undefined ? [...this.#held.values()] : [this.#held.get(ip) ?? new Map<FindingType, Held>()];
    return slots.flatMap((m) => [...m.values()].map(freeze));
  }

  #slot(ip: string): Map<FindingType, Held> {
    let m = this.#held.get(ip);
    if (m === undefined) {
      m = new Map();
      this.#held.set(ip, m);
    }
    return m;
  }
}
