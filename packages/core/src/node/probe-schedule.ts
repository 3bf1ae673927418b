/** A ProbeTarget is one IP the background probe asks for, and the node expected to own it (null: unknown). */
export interface ProbeTarget {
  readonly ip: string;
  readonly owner: string | null;
}

/**
 * JITTER: each IP's next probe comes up to a fifth of the interval early, never late: IPs spread out instead of
 * marching together, and none waits longer than one interval (a stranger is heard within one).
 */
const JITTER = 0.2;
/** REFUSED_MS: a node that could not probe an IP (no interface on its network) is not asked again for it this long. */
export const REFUSED_MS = 10 * 60_000;

/**
 * A ProbeSchedule decides when the background probe asks for each IP and from which node: every IP at least once per
 * interval, at a time of its own (the first within one interval of being seen, the next up to JITTER early), from
 * the nodes in turn. Not from the expected owner while another node can: a node never hears its
 * own answer to its own request, and the owner's answer is the one that must be heard beside a stranger's. Pure: time
 * and chance are given.
 */
export class ProbeSchedule {
  readonly #due = new Map<string, number>();
  readonly #turn = new Map<string, number>();
  readonly #refused = new Map<string, Map<string, number>>();

  /** The span each IP's next probe is due within: the interval, less how late the caller may send a due probe. */
  readonly #span: number;

  /**
   * `stepMs` is how late after its time a due probe may go out (how often the caller asks what is due): probes are
   * planned that much early, so that none goes out later than one interval after the last.
   */
  constructor(
    readonly intervalMs: number,
    readonly random: () => number = Math.random,
    stepMs = 0,
  ) {
    this.#span = Math.max(0, intervalMs - stepMs);
  }

  /**
   * due returns the probes to send at `now`: for each target whose time has come, the node to ask from, among
   * `room` (the nodes with a live agent, and how many more probes each may run now). Targets no longer listed are
   * forgotten.
   */
  due(now: number, targets: readonly ProbeTarget[], room: ReadonlyMap<string, number>): { ip: string; node: string }[] {
    const left = new Map(room);
    const listed = new Set<string>();
    const out: { ip: string; node: string }[] = [];
    const due: { target: ProbeTarget; at: number }[] = [];
    for (const target of targets) {
      listed.add(target.ip);
      const at = this.#due.get(target.ip);
      if (at === undefined) this.#due.set(target.ip, now + this.random() * this.#span);
      else if (at <= now) due.push({ target, at });
    }
    // The most overdue first: when the nodes have less room than the IPs need, every IP still takes its turn.
    due.sort((a, b) => a.at - b.at);
    for (const { target } of due) {
      const { ip, owner } = target;
      const free = [...left].filter(([n, k]) => k > 0 && !this.#isRefused(ip, n, now)).map(([n]) => n);
      const others = free.filter((n) => n !== owner).sort();
      const candidates = others.length > 0 ? others : free;
      // No node has room (or none can reach it): it keeps its place, the most overdue, for the next call.
      if (candidates.length === 0) continue;
      const turn = this.#turn.get(ip) ?? Math.floor(this.random() * candidates.length);
      const node = candidates[turn % candidates.length] ?? "";
      this.#turn.set(ip, turn + 1);
      left.set(node, (left.get(node) ?? 1) - 1);
      this.#due.set(ip, now + this.#span * (1 - JITTER * this.random()));
      out.push({ ip, node });
    }
    for (const ip of this.#due.keys()) {
      if (listed.has(ip)) continue;
      this.#due.delete(ip);
      this.#turn.delete(ip);
      this.#refused.delete(ip);
    }
    return out;
  }

  /** refused notes that `node` could not probe `ip` (it has no interface on its network): others are asked instead. */
  refused(ip: string, node: string, now: number): void {
    let m = this.#refused.get(ip);
    if (m === undefined) this.#refused.set(ip, (m = new Map<string, number>()));
    m.set(node, now + REFUSED_MS);
  }

  #isRefused(ip: string, node: string, now: number): boolean {
    const until = this.#refused.get(ip)?.get(node);
    return until !== undefined && until > now;
  }
}
