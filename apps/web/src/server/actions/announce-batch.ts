import { randomUUID } from "node:crypto";
import type { Actions } from "./actions.js";
import { ActionRefused } from "./command.js";

/** One IP of a batch: the node that announced it, when it started, and how it went. */
export interface Announced {
  readonly ip: string;
  node: string | null;
  /** When its owner started announcing it (null while waiting its turn, or refused). */
  at: number | null;
  state: "waiting" | "announcing" | "ok" | "failed" | "refused";
  message: string;
}

/**
 * AT_ONCE: IPs announced at the same time. Each keeps its owner sending MetalLB's burst (every 1.1 s) for the
 * configured announce duration: sixteen at once tells 300 IPs' clients in about two minutes while no node sends more
 * than a few frames a second per IP.
 */
const AT_ONCE = 16;
/** START_GAP_MS: one more IP starts at most this often, so that a batch spreads its first bursts over time. */
const START_GAP_MS = 50;

/** What a batch needs of the actions: one IP announced by its owner (ActionRefused when it cannot be), and time. */
export interface Announcer {
  reannounce(ip: string, actor: string): Promise<{ readonly node: string; readonly message: string }>;
  ownerOf(ip: string): string | null;
  clock(): number;
}

/** announcerOf is the Announcer of the dashboard's actions. */
export const announcerOf = (actions: Actions): Announcer => ({
  reannounce: (ip, actor) => actions.reannounce(ip, actor),
  ownerOf: (ip) => actions.o.hub.ip(ip)?.expectedOwner?.node ?? null,
  clock: () => actions.o.hub.clock(),
});

/**
 * announceAll makes each IP's expected owner announce it (Actions.reannounce, audited per IP), AT_ONCE at a time;
 * `changed` is called on every IP's progress. IPs whose owner is unknown or whose agent is away are refused, not
 * announced from another node. Resolves when every IP is done, with the list (the same objects `changed` saw).
 */
export async function announceAll(
  announcer: Announcer,
  ips: readonly string[],
  actor: string,
  changed: (list: readonly Announced[]) => void,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<Announced[]> {
  const list: Announced[] = ips.map((ip) => ({ ip, node: null, at: null, state: "waiting", message: "" }));
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const a = list[next++];
      if (a === undefined) return;
      a.state = "announcing";
      a.at = announcer.clock();
      try {
        a.node = announcer.ownerOf(a.ip);
        changed(list);
        const r = await announcer.reannounce(a.ip, actor);
        Object.assign(a, { node: r.node, state: "ok", message: r.message });
      } catch (e) {
        const refused = e instanceof ActionRefused;
        Object.assign(a, { state: refused ? "refused" : "failed", message: (e as Error).message, at: refused ? null : a.at });
      }
      changed(list);
    }
  };
  const workers: Promise<void>[] = [];
  for (let i = 0; i < Math.min(AT_ONCE, list.length); i++) {
    if (i > 0) await sleep(START_GAP_MS);
    workers.push(worker());
  }
  await Promise.all(workers);
  return list;
}

/** An AnnounceBatch is one operator's "re-announce every IP of this Service / pool", as the dashboard follows it. */
export interface AnnounceBatch {
  readonly id: string;
  readonly by: string;
  /** What was announced, in words: "Service default/web", "pool public". */
  readonly what: string;
  readonly startedAt: number;
  endedAt: number | null;
  readonly ips: Announced[];
  version: number;
}

/** KEEP_MS: how long a finished batch stays readable (a page reloaded after it ended still shows it). */
const KEEP_MS = 15 * 60_000;
/** MAX_BATCHES: batches running at once (each announces AT_ONCE IPs). */
const MAX_BATCHES = 2;

/** An audit entry of a group re-announcement, as the audit log takes it. */
export interface BatchAudit {
  readonly t: number;
  readonly actor: string;
  readonly action: string;
  readonly input: unknown;
  readonly outcome: "ok" | "refused";
  readonly detail: string;
}

/** AUDITED_IPS: the IPs a batch's audit entry names (the count says how many there were). */
const AUDITED_IPS = 20;

/**
 * AnnounceBatches runs the dashboard's group re-announcements and keeps them for the pages that follow them: at most
 * MAX_BATCHES at once, one per group (a second operator asking for a group being announced joins it).
 */
export class AnnounceBatches {
  readonly #batches = new Map<string, AnnounceBatch>();

  constructor(
    readonly announcer: Announcer,
    readonly audit: (entry: BatchAudit) => Promise<void>,
  ) {}

  /** start announces `ips` (those of `what`) from their owners; refused when MAX_BATCHES already run. */
  async start(what: string, ips: readonly string[], actor: string): Promise<AnnounceBatch> {
    const now = this.announcer.clock();
    for (const [id, b] of this.#batches) if (b.endedAt !== null && now - b.endedAt > KEEP_MS) this.#batches.delete(id);
    const running = [...this.#batches.values()].filter((b) => b.endedAt === null);
    const input = { what, count: ips.length, ips: ips.slice(0, AUDITED_IPS) };
    const audit = (outcome: "ok" | "refused", detail: string) =>
      this.audit({ t: now, actor, action: "ips.reannounce", input, outcome, detail });
    if (ips.length === 0) {
      await audit("refused", `${what} has no IP announced over ARP/NDP`);
      throw new ActionRefused(`${what} has no IP announced over ARP/NDP: nothing to announce`);
    }
    const same = running.find((b) => b.what === what);
    if (same !== undefined) {
      await audit("ok", `joined the re-announcement ${same.by} started`);
      return same;
    }
    if (running.length >= MAX_BATCHES) {
      const message = `${running.length} re-announcements are running already (${running.map((b) => b.what).join(", ")}): wait for one to finish`;
      await audit("refused", message);
      throw new ActionRefused(message);
    }
    const batch: AnnounceBatch = { id: randomUUID(), by: actor, what, startedAt: now, endedAt: null, ips: [], version: 1 };
    this.#batches.set(batch.id, batch);
    // Written before its IPs' entries, but awaited once the batch runs: a failed write must not hold the batch's slot.
    const logged = audit("ok", `${ips.length} IPs, each from its expected owner`);
    const bump = (list: readonly Announced[]) => {
      batch.ips.splice(0, batch.ips.length, ...list);
      batch.version++;
    };
    void announceAll(this.announcer, ips, actor, bump)
      .then(bump, (e: unknown) => {
        // Each IP's announce catches its own errors: this is a bug, and the batch must still end to free its slot.
        for (const a of batch.ips)
          if (a.state === "waiting" || a.state === "announcing") Object.assign(a, { state: "failed", message: String(e) });
      })
      .finally(() => {
        batch.endedAt = this.announcer.clock();
        batch.version++;
      });
    await logged;
    return batch;
  }

  /** latest is the newest batch of `what` (running or finished), null when none. */
  latest(what: string): AnnounceBatch | null {
    let best: AnnounceBatch | null = null;
    for (const b of this.#batches.values()) if (b.what === what && (best === null || b.startedAt > best.startedAt)) best = b;
    return best;
  }
}
