import { CLEAR_AFTER_MS, MAX_EVIDENCE_TIMES, type FindingType, type LiveFinding, type OpenFinding, type Transition } from "./findings.js";

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

/** NONE: nothing changed (shared, never written to). */
const NONE: readonly Transition[] = [];

const isPresent = (present: readonly LiveFinding[], type: FindingType): boolean => {
  for (const f of present) if (f.type === type) return true;
  return false;
};

const freeze = (h: Held): OpenFinding => ({ ...h, macs: [...h.macs], samples: [...h.samples] });

/**
 * A FindingTracker turns "present now" judgements into incidents with hysteresis: a finding opens the first time
 * it is present and clears only after `clearAfterMs` without being present, so a race that flips every few seconds
 * is one incident, not dozens. A finding's times are its evidence's (`at`) when it has them. Pure: time is what
 * `update` is given.
 */
export class FindingTracker {
  readonly #held = new Map<string, Map<FindingType, Held>>();

  constructor(readonly clearAfterMs = CLEAR_AFTER_MS) {}

  /** restore re-opens findings read back from storage after a restart. */
  restore(open: readonly OpenFinding[]): void {
    for (const f of open) this.#slot(f.ip).set(f.type, { ...f, macs: [...f.macs], samples: [...f.samples] });
  }

  /** update records what is present on `subject` (an IP, or node/NAME) at `now` and returns what changed. */
  update(subject: string, now: number, present: readonly LiveFinding[]): readonly Transition[] {
    let held = this.#held.get(subject);
    // Most subjects judged hold nothing and have nothing present: nothing to make.
    if (held === undefined && present.length === 0) return NONE;
    // Made when something changed: an IP with an open finding is judged every second, and mostly nothing changes.
    let out: Transition[] | null = null;
    for (const f of present) {
      held ??= this.#slot(subject);
      const h = held.get(f.type);
      const at = Math.min(f.at ?? now, now);
      if (h === undefined) {
        const n: Held = {
          ip: subject,
          type: f.type,
          macs: [...f.macs].sort(),
          detail: f.detail,
          firstSeen: at,
          lastSeen: Math.max(at, now),
          count: 1,
          samples: [at],
        };
        held.set(f.type, n);
        (out ??= []).push({ kind: "opened", finding: freeze(n) });
        continue;
      }
      h.lastSeen = now;
      h.count++;
      if (h.samples.length < MAX_EVIDENCE_TIMES) h.samples.push(at);
      const added = f.macs.filter((m) => !h.macs.includes(m));
      if (added.length > 0) {
        h.macs = [...h.macs, ...added].sort();
        h.detail = f.detail;
        (out ??= []).push({ kind: "updated", finding: freeze(h) });
      }
    }
    if (held === undefined) return out ?? NONE;
    for (const h of held.values()) {
      if (isPresent(present, h.type) || now - h.lastSeen < this.clearAfterMs) continue;
      held.delete(h.type);
      (out ??= []).push({ kind: "cleared", finding: freeze(h), at: now });
    }
    if (held.size === 0) this.#held.delete(subject);
    return out ?? NONE;
  }

  /** has tells whether `subject` holds an open finding. */
  has(subject: string): boolean {
    return this.#held.has(subject);
  }

  /** subjects lists the subjects holding an open finding (to judge them again when their traffic has gone quiet). */
  subjects(): string[] {
    return [...this.#held.keys()];
  }

  /** open lists the open findings of `subject`, or of every subject. */
  open(subject?: string): OpenFinding[] {
    const slots = subject === undefined ? [...this.#held.values()] : [this.#held.get(subject) ?? new Map<FindingType, Held>()];
    return slots.flatMap((m) => [...m.values()].map(freeze));
  }

  /** forget drops what is held for `subject` without transitions (its IP left the live view). */
  forget(subject: string): void {
    this.#held.delete(subject);
  }

  #slot(subject: string): Map<FindingType, Held> {
    let m = this.#held.get(subject);
    if (m === undefined) {
      m = new Map();
      this.#held.set(subject, m);
    }
    return m;
  }
}
