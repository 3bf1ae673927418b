import { capturedBytes, evidenceFile, isIpKey, mergeFrames, splitIpKey, type Logger, type MissingNode } from "@whohas/core";
import type { Hub } from "../hub/hub.js";
import type { Incident } from "../store/incidents.js";
import type { StoredEvidence } from "../store/evidence.js";
import { collect, type Collection, type EvidenceAsker } from "./collector.js";
import { DueQueue } from "./queue.js";

/** The window around an incident's first evidence whose frames are kept with it. */
export const WINDOW_BEFORE_MS = 30_000;
export const WINDOW_AFTER_MS = 30_000;
/** MAX_WINDOW_MS: the longest window one capture may ask for (the agents' rings hold 10 minutes by default). */
export const MAX_WINDOW_MS = 3_600_000;
/** DEFAULT_MAX_FILE_BYTES: the largest capture file the hub stores or serves (config evidence.maxFileBytes). */
export const DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024;
/** RING_AGE_MS: how far back the agents hold frames by default (the agent's --evidence-age). */
const RING_AGE_MS = 600_000;
/** RECONNECT_GRACE_MS: after a start, agents get this long to reconnect before the first snapshot asks them. */
const RECONNECT_GRACE_MS = 15_000;
/** RETRY_MS / MAX_TRIES: a snapshot no agent answered is tried again, this often, this many times. */
const RETRY_MS = 30_000;
const MAX_TRIES = 10;
/** PARALLEL_SNAPSHOTS: snapshots asked at once (one slow agent must not hold up a storm of openings). */
const PARALLEL_SNAPSHOTS = 4;
/** MAX_RESUMED: open incidents without frames looked at after a start at most. */
const MAX_RESUMED = 2000;
/** Downloads built at once, in all and per user: each asks every agent. */
const MAX_DOWNLOADS = 4;
const MAX_DOWNLOADS_PER_USER = 2;
/** FRESH_MS: an open incident's frames collected this recently are served as stored, not asked for again. */
const FRESH_MS = 10_000;
/**
 * SETTLE_MS: a loaded node's libpcap may hand a frame over a while after the kernel dated it, so a snapshot is
 * asked this long after its window ends: every agent then holds the window's last frames, not only the quick ones.
 */
const SETTLE_MS = 2_000;
const MIME = "application/vnd.tcpdump.pcap";

/**
 * A file's captured bytes are at most half of it: each ARP frame (60 bytes) takes about 100 in pcapng with its block
 * and comment, so a collection stops at half the file's bound.
 */
const budgetOf = (maxFileBytes: number) => Math.floor(maxFileBytes / 2);

/** A CaptureFile is a file ready to download, or why there is none. */
export type CaptureFile =
  | {
      readonly ok: true;
      readonly bytes: Uint8Array;
      readonly filename: string;
      readonly contentType: string;
      readonly frames: number;
      readonly nodes: readonly string[];
      readonly missing: readonly MissingNode[];
    }
  | { readonly ok: false; readonly status: 400 | 404 | 413 | 429 | 500; readonly message: string };

export interface EvidenceOptions {
  readonly hub: Hub;
  readonly asker: EvidenceAsker;
  readonly logger: Logger;
  readonly maxFileBytes?: number;
  /** How long an agent has to answer (tests shorten it). */
  readonly answerTimeoutMs?: number;
  /** How long after a start the first snapshots wait for agents to reconnect (tests shorten it). */
  readonly reconnectGraceMs?: number;
  /** How long after the first evidence an incident's frames are asked for (tests shorten it). */
  readonly windowAfterMs?: number;
  /** How long a snapshot no agent answered waits before it is tried again (tests shorten it). */
  readonly retryMs?: number;
}

const stamp = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
/** fileIp is an IP key as it may stand in a file name: "2001:db8::7@30" as "2001-db8--7_vlan30". */
const fileIp = (key: string) => {
  const { ip, vlan } = splitIpKey(key);
  return `${ip.replaceAll(":", "-")}${vlan === null ? "" : `_vlan${vlan}`}`;
};

/**
 * Evidence keeps each incident's frames: when an incident about an IP opens, it asks every connected agent, once the
 * window after the first evidence has passed, for the frames it holds about that IP, and stores them with the
 * incident (the agents' rings forget within minutes). It builds the merged pcapng a person downloads, for an
 * incident or for an ad hoc window.
 */
export class Evidence {
  readonly maxFileBytes: number;
  #queue: DueQueue | null = null;
  #stopFeed: AbortController | null = null;
  #downloads = 0;
  readonly #perUser = new Map<string, number>();

  constructor(readonly o: EvidenceOptions) {
    this.maxFileBytes = o.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  }

  get #after(): number {
    return this.o.windowAfterMs ?? WINDOW_AFTER_MS;
  }

  /** start follows the hub's incidents: each incident about an IP that opens is snapshotted when its window ends. */
  start(): void {
    const ac = new AbortController();
    this.#stopFeed = ac;
    const queue = new DueQueue({
      clock: this.o.hub.clock,
      parallel: PARALLEL_SNAPSHOTS,
      logger: this.o.logger,
      run: async (job) => {
        const inc = await this.o.hub.store.incidents.get(job.id).catch((e: unknown) => {
          this.#failed(job.id, null, e);
          return null;
        });
        if (inc !== null) await this.#auto(inc, job.tries);
      },
    });
    this.#queue = queue;
    const now = this.o.hub.clock();
    const grace = now + (this.o.reconnectGraceMs ?? RECONNECT_GRACE_MS);
    // The feed is read from here on, once the incidents open now are looked at: none that opens meanwhile is missed.
    const after = this.o.hub.feed.seq;
    void (async () => {
      // Incidents that opened shortly before a restart and have no frames yet: the agents still hold them, once they
      // are back.
      const resumed = new Set<number>();
      try {
        for (const inc of await this.o.hub.incidents({ open: true, limit: MAX_RESUMED }))
          if (isIpKey(inc.ip) && inc.firstSeen >= now - RING_AGE_MS && (await this.o.hub.store.evidence.summary(inc.id)) === null) {
            resumed.add(inc.id);
            queue.add(inc.id, Math.max(inc.firstSeen + this.#after + SETTLE_MS, grace));
          }
      } catch (e) {
        this.o.logger.error("evidence.resume_failed", { message: e instanceof Error ? e.message : String(e) });
      }
      for await (const batch of this.o.hub.feed.changes(ac.signal, after))
        for (const c of batch)
          if (c.kind === "incident" && c.opened && isIpKey(c.subject) && !resumed.has(c.id)) {
            const inc = await this.o.hub.store.incidents.get(c.id).catch((e: unknown) => {
              this.#failed(c.id, c.subject, e);
              return null;
            });
            if (inc !== null) this.#queue?.add(c.id, inc.firstSeen + this.#after + SETTLE_MS);
          }
    })();
  }

  #failed(incident: number, ip: string | null, e: unknown): void {
    this.o.logger.error("evidence.snapshot_failed", { incident, ip, message: e instanceof Error ? e.message : String(e) });
  }

  stop(): void {
    this.#stopFeed?.abort();
    this.#stopFeed = null;
    this.#queue?.stop();
    this.#queue = null;
  }

  /** waiting is how many incidents wait for their snapshot. */
  get waiting(): number {
    return this.#queue?.waiting ?? 0;
  }

  /** #auto is the snapshot taken when an incident's window ends; when no agent answers, it is tried again later. */
  async #auto(inc: Incident, tries: number): Promise<void> {
    try {
      const got = await this.#gather(inc);
      if (got.answered === 0 && got.old === null && tries + 1 < MAX_TRIES) {
        this.#queue?.add(inc.id, this.o.hub.clock() + (this.o.retryMs ?? RETRY_MS), tries + 1);
        return;
      }
      await this.#store(inc, got);
    } catch (e) {
      this.#failed(inc.id, inc.ip, e);
    }
  }

  /**
   * #gather asks the agents for an incident's frames and merges them with what was stored before (a node's agent
   * that is down now keeps the frames it sent then). The window: WINDOW_BEFORE_MS before the first evidence to
   * WINDOW_AFTER_MS after it; for an incident still open, to SETTLE_MS before now.
   */
  async #gather(inc: Incident) {
    const now = this.o.hub.clock();
    const fromMs = inc.firstSeen - WINDOW_BEFORE_MS;
    const toMs = inc.resolvedAt === null ? Math.max(now - SETTLE_MS, inc.firstSeen + this.#after) : inc.firstSeen + this.#after;
    // An incident open for hours: the agents hold only their last minutes anyway.
    const askFrom = Math.max(fromMs, toMs - MAX_WINDOW_MS);
    const got = await this.#collect(inc.ip, askFrom, toMs);
    const old = await this.o.hub.store.evidence.get(inc.id);
    const nodes = new Map(got.nodes.map((n) => [n.node, n]));
    const missing = new Map(got.missing.map((m) => [m.node, m]));
    for (const n of old?.nodes ?? []) {
      const fresh = nodes.get(n.node);
      if (fresh === undefined) {
        // Down now, answered before: keep what it sent then.
        nodes.set(n.node, n);
        missing.delete(n.node);
      } else if (n.frames.length > 0) {
        nodes.set(n.node, {
          node: n.node,
          frames: mergeFrames(n.frames, fresh.frames),
          truncated: n.truncated || fresh.truncated,
          heldFromMs: n.heldFromMs ?? fresh.heldFromMs,
        });
      }
    }
    const all = [...nodes.values()];
    return {
      evidence: { collectedAt: now, fromMs, toMs, nodes: all, missing: [...missing.values()] },
      answered: got.nodes.length,
      old,
    };
  }

  async #collect(ipKey: string, fromMs: number, toMs: number): Promise<Collection> {
    const got = await collect(this.o.asker, this.#agents(), ipKey, fromMs, toMs, budgetOf(this.maxFileBytes), {
      timeoutMs: this.o.answerTimeoutMs,
    });
    for (const [node, frames] of got.refused)
      this.o.logger.warn("evidence.frames_refused", {
        node,
        ip: ipKey,
        frames,
        hint: "the agent sent frames of another IP, VLAN or time than asked, or more than asked for: they were dropped (an agent older or newer than the hub, or not to be trusted)",
      });
    return got;
  }

  /** #store keeps a gathered snapshot, unless it would push a stored one past the file's bound. */
  async #store(inc: Incident, got: { evidence: StoredEvidence; old: StoredEvidence | null }): Promise<StoredEvidence> {
    const bytes = got.old === null ? 0 : bytesOf(got.evidence);
    if (bytes > budgetOf(this.maxFileBytes)) {
      // The frames around the first evidence matter most: a refresh that would push them past the bound is dropped.
      this.o.logger.warn("evidence.refresh_too_large", {
        incident: inc.id,
        ip: inc.ip,
        bytes,
        hint: "the incident's stored frames are kept as they were; download a recent window from the IP page instead",
      });
      return got.old ?? got.evidence;
    }
    await this.o.hub.store.evidence.put(inc.id, got.evidence);
    this.o.logger.info("evidence.snapshot", {
      incident: inc.id,
      ip: inc.ip,
      frames: got.evidence.nodes.reduce((a, n) => a + n.frames.length, 0),
      nodes: got.evidence.nodes.map((n) => n.node),
      missing: got.evidence.missing.map((m) => m.node),
    });
    return got.evidence;
  }

  #agents() {
    return this.o.hub.nodes().map((a) => ({ node: a.node, connected: a.connected, lastSeen: a.lastSeen }));
  }

  /**
   * download runs `build` for `user` within the download bounds (MAX_DOWNLOADS at once, MAX_DOWNLOADS_PER_USER per
   * user): each capture asks every agent, so a burst of downloads is refused (429) rather than queued.
   */
  async download(user: string, input: Record<string, unknown>, build: () => Promise<CaptureFile>): Promise<CaptureFile> {
    const audit = (outcome: "ok" | "refused" | "failed", detail: string) =>
      this.o.hub.store.audit.append({ t: this.o.hub.clock(), actor: user, action: "capture.download", input, outcome, detail });
    const file = await this.#bounded(user, build).catch(async (e: unknown): Promise<CaptureFile> => {
      // Whatever an agent sent or the store held, one download that cannot be built must not take the hub down.
      const message = e instanceof Error ? e.message : String(e);
      await audit("failed", message);
      return { ok: false, status: 500, message: `the capture could not be built: ${message}` };
    });
    if (file.ok) {
      const missing = listed(file.missing.map((m) => `${m.node} (${m.why})`));
      const from = file.nodes.length === 0 ? "no node" : listed(file.nodes).join(", ");
      await audit(
        "ok",
        `${file.frames} frames from ${from}, ${file.bytes.length} bytes${missing.length === 0 ? "" : `; missing: ${missing.join(", ")}`}`,
      );
    } else if (file.status === 413 || file.status === 429) await audit("refused", file.message);
    return file;
  }

  async #bounded(user: string, build: () => Promise<CaptureFile>): Promise<CaptureFile> {
    const mine = this.#perUser.get(user) ?? 0;
    if (this.#downloads >= MAX_DOWNLOADS || mine >= MAX_DOWNLOADS_PER_USER)
      return {
        ok: false,
        status: 429,
        message: `${this.#downloads >= MAX_DOWNLOADS ? `${MAX_DOWNLOADS} captures are` : `${MAX_DOWNLOADS_PER_USER} of your captures are`} being built (each asks every agent): try again in a few seconds`,
      };
    this.#downloads++;
    this.#perUser.set(user, mine + 1);
    try {
      return await build();
    } finally {
      this.#downloads--;
      const left = (this.#perUser.get(user) ?? 1) - 1;
      if (left === 0) this.#perUser.delete(user);
      else this.#perUser.set(user, left);
    }
  }

  /**
   * incidentFile is an incident's capture: what was stored for it, refreshed first while the incident is open (or
   * when nothing was stored yet: the agents are asked at once).
   */
  async incidentFile(id: number): Promise<CaptureFile> {
    const inc = await this.o.hub.store.incidents.get(id);
    if (inc === null) return { ok: false, status: 404, message: `no incident ${id}` };
    if (!isIpKey(inc.ip))
      return {
        ok: false,
        status: 404,
        message: `incident ${id} is about ${inc.ip}, not an IP: it has no frames (its evidence is on the Nodes page)`,
      };
    // The summary says whether what is stored will do, without reading the frames.
    const summary = await this.o.hub.store.evidence.summary(id);
    const fresh = summary !== null && (inc.resolvedAt !== null || summary.collectedAt >= this.o.hub.clock() - FRESH_MS);
    const stored = fresh ? await this.o.hub.store.evidence.get(id) : null;
    let e: StoredEvidence;
    if (stored !== null) e = stored;
    else {
      const got = await this.#gather(inc);
      // Nobody answered and nothing was stored: the file says who is missing, and nothing is kept of it.
      e = got.answered === 0 && got.old === null ? got.evidence : await this.#store(inc, got);
    }
    const lines = [`${inc.detail}`, ...subjectLines(inc)];
    return this.#file(
      {
        title: `${inc.type} for ${inc.ip} (incident ${inc.id}, ${inc.resolvedAt === null ? "open" : "resolved"})`,
        lines,
        fromMs: e.fromMs,
        toMs: e.toMs,
      },
      e,
      `whohas-${fileIp(inc.ip)}-${stamp(inc.firstSeen)}-incident-${inc.id}.pcapng`,
    );
  }

  /** ipFile is an ad hoc capture: every agent's frames about `ipKey` captured in [fromMs, toMs], asked for now. */
  async ipFile(ipKey: string, fromMs: number, toMs: number): Promise<CaptureFile> {
    if (!(fromMs <= toMs)) return { ok: false, status: 400, message: "since is after until" };
    if (toMs - fromMs > MAX_WINDOW_MS)
      return { ok: false, status: 400, message: `the window is longer than ${MAX_WINDOW_MS / 60_000} minutes: ask for a shorter one` };
    const got = await this.#collect(ipKey, fromMs, toMs);
    if (got.overBudget)
      return {
        ok: false,
        status: 413,
        message: `the frames about ${ipKey} in this window make a file larger than evidence.maxFileBytes (${this.maxFileBytes} bytes): ask for a shorter window with since and until`,
      };
    return this.#file(
      { title: `frames about ${ipKey}, asked for`, lines: [], fromMs, toMs },
      got,
      `whohas-${fileIp(ipKey)}-${stamp(fromMs)}-${stamp(toMs)}.pcapng`,
    );
  }

  #file(
    subject: { title: string; lines: string[]; fromMs: number; toMs: number },
    { nodes, missing }: Pick<StoredEvidence, "nodes" | "missing">,
    filename: string,
  ): CaptureFile {
    const bytes = evidenceFile({ subject, nodes, missing, application: "whohas-hub 0.1.0" });
    if (bytes.length > this.maxFileBytes)
      return {
        ok: false,
        status: 413,
        message: `the capture file would be ${bytes.length} bytes, more than evidence.maxFileBytes (${this.maxFileBytes}): ask for a shorter window with /api/v1/ips/{ip}/capture?since=…&until=…`,
      };
    return {
      ok: true,
      bytes,
      filename,
      contentType: MIME,
      frames: nodes.reduce((a, n) => a + n.frames.length, 0),
      nodes: nodes.filter((n) => n.frames.length > 0).map((n) => n.node),
      missing,
    };
  }
}

/** listed names at most 20 items, then counts the rest (an audit entry stays readable with a thousand nodes). */
const listed = (items: readonly string[]) => (items.length <= 20 ? [...items] : [...items.slice(0, 20), `and ${items.length - 20} more`]);

const bytesOf = (e: StoredEvidence) => e.nodes.reduce((a, n) => a + capturedBytes(n.frames), 0);

/** subjectLines are the incident's context as the hub saw it when it opened: the expected owner and who answered. */
function subjectLines(inc: Incident): string[] {
  const e = inc.evidence as {
    expectedOwner?: { node: string; source: string } | null;
    responders?: { mac: string; node: string | null }[];
    services?: { namespace: string; name: string }[];
  } | null;
  const lines: string[] = [];
  if (inc.macs.length > 0) lines.push(`MACs: ${inc.macs.join(", ")}`);
  const responders = e?.responders ?? [];
  if (responders.length > 0)
    lines.push(`answering when it opened: ${responders.map((r) => `${r.mac} (${r.node ?? "not a node"})`).join(", ")}`);
  if (e?.expectedOwner != null) lines.push(`expected owner: ${e.expectedOwner.node} (${e.expectedOwner.source})`);
  const services = e?.services ?? [];
  if (services.length > 0) lines.push(`Services: ${services.map((s) => `${s.namespace}/${s.name}`).join(", ")}`);
  return lines;
}
