import { ANSWER_WINDOW_MS, type Handover, type Transition } from "./findings.js";
import type { IpJudgement } from "./ip-judgement.js";

/**
 * A VerdictKey is what a judgement says of an IP that its page shows: the state (by its first letter), the MACs
 * answering, the handovers (how many, and whether the latest was announced) and the first-answer changes. The hub
 * keeps each IP's latest to tell subscribers of changes that came with time alone.
 */
export interface VerdictKey {
  readonly state: "m" | "s" | "n" | "i";
  readonly macs: readonly string[];
  readonly handovers: number;
  readonly announced: boolean | null | undefined;
  readonly askers: number;
}

/**
 * A Verdict is what one judgement of one IP changed: findings opened, updated or cleared, and handovers seen; and
 * whether what it says of the IP differs from an earlier judgement's key (compared without making a key: tens of
 * thousands of IPs are judged every second and few change).
 */
export interface Verdict {
  readonly transitions: readonly Transition[];
  readonly handovers: readonly Handover[];
  /** same tells whether this judgement says of the IP what `key` (an earlier one's) said. */
  same(key: VerdictKey | undefined): boolean;
  /** key is this judgement's key (read it before the judge takes more data). */
  key(): VerdictKey;
}

/**
 * IpState is the verdict for one IP now:
 * - `single`: one MAC answers each request: what MetalLB layer 2 needs.
 * - `multi-responder`: a request within ANSWER_WINDOW_MS was answered by two or more MACs: the incident whohas
 *   exists for.
 * - `no-responder`: it is asked for and nobody answers.
 * - `idle`: nothing recent either way.
 */
export type IpState = "single" | "multi-responder" | "no-responder" | "idle";

/** stateLetter is the first letter of an IP's state: multi-responder, single, no-responder or idle. */
export function stateLetter(j: IpJudgement | undefined, answering: number, now: number): "m" | "s" | "n" | "i" {
  if (j !== undefined && now - j.lastMulti <= ANSWER_WINDOW_MS) return "m";
  if (answering > 0) return "s";
  return j !== undefined && now - j.lastAsked <= ANSWER_WINDOW_MS ? "n" : "i";
}

/** STATES names the states by their first letter (a VerdictKey's `state`). */
export const STATES = { m: "multi-responder", s: "single", n: "no-responder", i: "idle" } as const;

/** An Answering is a MAC answering an IP now, with its node, as the rules read it. */
export interface Answering {
  readonly mac: string;
  readonly node: string | null;
  readonly answering: boolean;
}

/**
 * A JudgedVerdict compares and makes its key only when asked: the hub does, `whohas analyze` never does. It reads the
 * IP's judgement as it is then, so read it before the judge takes more data.
 */
export class JudgedVerdict implements Verdict {
  constructor(
    readonly transitions: readonly Transition[],
    readonly handovers: readonly Handover[],
    readonly judgement: IpJudgement | undefined,
    readonly answering: readonly Answering[],
    readonly at: number,
  ) {}

  same(key: VerdictKey | undefined): boolean {
    const j = this.judgement;
    const answering = this.answering;
    if (key?.state !== stateLetter(j, answering.length, this.at) || key.macs.length !== answering.length) return false;
    for (let i = 0; i < answering.length; i++) if (key.macs[i] !== answering[i]?.mac) return false;
    return (
      key.handovers === (j?.handovers.length ?? 0) && key.announced === j?.handovers[0]?.announced && key.askers === (j?.askers?.total ?? 0)
    );
  }

  key(): VerdictKey {
    const j = this.judgement;
    return {
      state: stateLetter(j, this.answering.length, this.at),
      macs: this.answering.map((r) => r.mac),
      handovers: j?.handovers.length ?? 0,
      announced: j?.handovers[0]?.announced,
      askers: j?.askers?.total ?? 0,
    };
  }
}
