import { capturedBytes, evidenceFile, isIpKey, mergeFrames, splitIpKey, type Logger, type MissingNode } from "@whohas/core";
import type { Hub } from "../hub/hub.js";
import type { Incident } from "../store/incidents.js";
import type { StoredEvidence } from "../store/evidence.js";
import { collect, type EvidenceAsker } from "./collector.js";

/** The window around an incident's first evidence whose frames are kept with it. */
export const WINDOW_BEFORE_MS = 30_000;
export const WINDOW_AFTER_MS = 30_000;
/** MAX_WINDOW_MS: the longest window one ad hoc capture may ask for (the agents' rings hold 10 minutes by default). */
export const MAX_WINDOW_MS = 3_600_000;
/** DEFAULT_MAX_FILE_BYTES: the largest capture file the hub stores or serves (config evidence.maxFileBytes). */
export const DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024;
/**
 * A file's captured bytes are at most half of it: each ARP frame (60 bytes) takes about 100 in pcapng with its block
 * and comment, so a collection stops at half the file's bound.
 */
const budgetOf = (maxFileBytes: number) => Math.floor(maxFileBytes / 2);
/** RING_AGE_MS: how far back the agents hold frames by default (the agent's --evidence-age). */
const RING_AGE_MS = 600_000;
/** MAX_QUEUED: incidents waiting for their snapshot at most; a storm of openings past it loses the oldest, logged. */
const MAX_QUEUED = 2000;
const MIME = "application/vnd.tcpdump.pcap";

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
  | { readonly ok: false; readonly status: 400 | 404 | 413; readonly message: string };

export interface EvidenceOptions {
  readonly hub: Hub;
  readonly asker: EvidenceAsker;
  readonly logger: Logger;
  readonly maxFileBytes?: number;
  /** How long an agent has to answer (tests shorten it). */
  readonly answerTimeoutMs?: number;
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
  readonly #queue: { id: number; due: number }[] = [];
  #timer: NodeJS.Timeout | null = null;
  #running = false;
  #stopFeed: AbortController | null = null;

  constructor(readonly o: EvidenceOptions) {
    this.maxFileBytes = o.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  }

  /** start follows the hub's incidents: each incident about an IP that opens is snapshotted when its window ends. */
  start(): void {
    const ac = new AbortController();
    this.#stopFeed = ac;
    // Incidents that opened shortly before a restart and have no frames yet: the agents still hold them.
    const since = this.o.hub.clock() - RING_AGE_MS;
    for (const inc of this.o.hub.incidents({ open: true, limit: MAX_QUEUED }))
      if (isIpKey(inc.ip) && inc.firstSeen >= since && this.o.hub.store.evidence.get(inc.id) === null) this.#enqueue(inc.id);
    void (async () => {
      for await (const batch of this.o.hub.feed.changes(ac.signal))
        for (const c of batch) if (c.kind === "incident" && c.transition?.kind === "opened" && isIpKey(c.subject)) this.#enqueue(c.id);
    })();
  }

  stop(): void {
    this.#stopFeed?.abort();
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #enqueue(id: number): void {
    const inc = this.o.hub.store.incidents.get(id);
    if (inc === null) return;
    if (this.#queue.length >= MAX_QUEUED) {
      const lost = this.#queue.shift();
      this.o.logger.warn("evidence.queue_full", {
        incident: lost?.id,
        hint: `more than ${MAX_QUEUED} incidents opened within a minute: the oldest waiting is not snapshotted (its capture can still be downloaded while the agents hold its frames)`,
      });
    }
    this.#queue.push({ id, due: inc.firstSeen + WINDOW_AFTER_MS });
    this.#wake();
  }

  #wake(): void {
    if (this.#running || this.#stopFeed === null) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    const next = Math.min(...this.#queue.map((q) => q.due));
    if (!Number.isFinite(next)) return;
    this.#timer = setTimeout(() => void this.#drain(), Math.max(0, next - this.o.hub.clock()));
    this.#timer.unref();
  }

  /** #drain snapshots the incidents whose window has ended, one at a time. */
  async #drain(): Promise<void> {
    this.#timer = null;
    this.#running = true;
    try {
      for (;;) {
        const now = this.o.hub.clock();
        const i = this.#queue.findIndex((q) => q.due <= now);
        if (i < 0) break;
        const [q] = this.#queue.splice(i, 1);
        const inc = q === undefined ? null : this.o.hub.store.incidents.get(q.id);
        if (inc !== null) await this.snapshot(inc).catch((e: unknown) => this.#failed(inc, e));
      }
    } finally {
      this.#running = false;
      this.#wake();
    }
  }

  #failed(inc: Incident, e: unknown): void {
    this.o.logger.error("evidence.snapshot_failed", { incident: inc.id, ip: inc.ip, message: e instanceof Error ? e.message : String(e) });
  }

  /**
   * snapshot asks the agents for an incident's frames and stores them, merged with what was stored before (a node's
   * agent that is down now keeps the frames it sent then). The window: WINDOW_BEFORE_MS before the first evidence to
   * WINDOW_AFTER_MS after it; for an incident still open, to now (at most the file's byte budget).
   */
  async snapshot(inc: Incident): Promise<StoredEvidence> {
    const now = this.o.hub.clock();
    const fromMs = inc.firstSeen - WINDOW_BEFORE_MS;
    const toMs = inc.resolvedAt === null ? Math.max(now, inc.firstSeen + WINDOW_AFTER_MS) : inc.firstSeen + WINDOW_AFTER_MS;
    // An incident open for hours: the agents hold only their last minutes anyway.
    const askFrom = Math.max(fromMs, toMs - MAX_WINDOW_MS);
    const budget = budgetOf(this.maxFileBytes);
    const got = await collect(this.o.asker, this.#agents(), inc.ip, askFrom, toMs, budget, this.o.answerTimeoutMs);
    const old = this.o.hub.store.evidence.get(inc.id);
    const nodes = new Map(got.nodes.map((n) => [n.node, n]));
    const missing = new Map(got.missing.map((m) => [m.node, m]));
    for (const n of old?.nodes ?? []) {
      const fresh = nodes.get(n.node);
      if (fresh === undefined) {
        // Down now, answered before: keep what it sent then.
        nodes.set(n.node, n);
        missing.delete(n.node);
      } else if (n.frames.length > 0) {
        nodes.set(n.node, { ...fresh, frames: mergeFrames(n.frames, fresh.frames), heldFromMs: n.heldFromMs ?? fresh.heldFromMs });
      }
    }
    const all = [...nodes.values()];
    const bytes = all.reduce((a, n) => a + capturedBytes(n.frames), 0);
    if (old !== null && bytes > budget) {
      // The frames around the first evidence matter most: a refresh that would push them past the bound is dropped.
      this.o.logger.warn("evidence.refresh_too_large", {
        incident: inc.id,
        ip: inc.ip,
        bytes,
        hint: "the incident's stored frames are kept as they were; download a recent window from the IP page instead",
      });
      return old;
    }
    const stored: StoredEvidence = { collectedAt: now, fromMs, toMs, nodes: all, missing: [...missing.values()], bytes };
    this.o.hub.store.evidence.put(inc.id, stored);
    this.o.logger.info("evidence.snapshot", {
      incident: inc.id,
      ip: inc.ip,
      frames: stored.nodes.reduce((a, n) => a + n.frames.length, 0),
      nodes: stored.nodes.map((n) => n.node),
      missing: stored.missing.map((m) => m.node),
    });
    return stored;
  }

  #agents() {
    return this.o.hub.nodes().map((a) => ({ node: a.node, connected: a.connected, lastSeen: a.lastSeen }));
  }

  /**
   * incidentFile is an incident's capture: what was stored for it, refreshed first while the incident is open (or
   * when nothing was stored yet: the snapshot is taken at once).
   */
  async incidentFile(id: number): Promise<CaptureFile> {
    const inc = this.o.hub.store.incidents.get(id);
    if (inc === null) return { ok: false, status: 404, message: `no incident ${id}` };
    if (!isIpKey(inc.ip))
      return {
        ok: false,
        status: 404,
        message: `incident ${id} is about ${inc.ip}, not an IP: it has no frames (its evidence is on the Nodes page)`,
      };
    const stored = inc.resolvedAt === null ? await this.snapshot(inc) : (this.o.hub.store.evidence.get(id) ?? (await this.snapshot(inc)));
    const lines = [`${inc.detail}`, ...subjectLines(inc)];
    return this.#file(
      {
        title: `${inc.type} for ${inc.ip} (incident ${inc.id}, ${inc.resolvedAt === null ? "open" : "resolved"})`,
        lines,
        fromMs: stored.fromMs,
        toMs: stored.toMs,
      },
      stored.nodes,
      stored.missing,
      `whohas-${fileIp(inc.ip)}-${stamp(inc.firstSeen)}-incident-${inc.id}.pcapng`,
    );
  }

  /** ipFile is an ad hoc capture: every agent's frames about `ipKey` captured in [fromMs, toMs], asked for now. */
  async ipFile(ipKey: string, fromMs: number, toMs: number): Promise<CaptureFile> {
    if (!(fromMs <= toMs)) return { ok: false, status: 400, message: "since is after until" };
    if (toMs - fromMs > MAX_WINDOW_MS)
      return { ok: false, status: 400, message: `the window is longer than ${MAX_WINDOW_MS / 60_000} minutes: ask for a shorter one` };
    const got = await collect(this.o.asker, this.#agents(), ipKey, fromMs, toMs, budgetOf(this.maxFileBytes), this.o.answerTimeoutMs);
    if (got.overBudget)
      return {
        ok: false,
        status: 413,
        message: `the frames about ${ipKey} in this window make a file larger than evidence.maxFileBytes (${this.maxFileBytes} bytes): ask for a shorter window with since and until`,
      };
    return this.#file(
      { title: `frames about ${ipKey}, asked for`, lines: [], fromMs, toMs },
      got.nodes,
      got.missing,
      `whohas-${fileIp(ipKey)}-${stamp(fromMs)}-${stamp(toMs)}.pcapng`,
    );
  }

  #file(
    subject: { title: string; lines: string[]; fromMs: number; toMs: number },
    nodes: StoredEvidence["nodes"],
    missing: readonly MissingNode[],
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
