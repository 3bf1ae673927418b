import {
  AnswerNews,
  CapturePoint,
  FLUSH_MS,
  LINKTYPE_ETHERNET,
  MAX_ENTRIES_PER_MESSAGE,
  WIRE_VERSION,
  decodeFrame,
  newFrameFields,
  roleOf,
  type DecodeFailure,
  type FrameFields,
  type HubCommand,
  type HubMessage,
  type Logger,
  type NodeFacts,
  type ObservationKind,
} from "@whohas/core";
import type { KernelStats, PacketSource } from "@whohas/capture";
import type { NetInterface } from "./capture/interfaces.js";
import { answerEvidence } from "./evidence/answer.js";
import type { FrameRing } from "./evidence/ring.js";
import type { HubLink } from "./hub-link.js";
import type { AgentMetrics } from "./metrics.js";

export { FLUSH_MS };
/** RESCAN_MS is how often interfaces are listed again, as MetalLB does (DESIGN 2.2); facts go out as often. */
export const RESCAN_MS = 10_000;
/**
 * ENTRY_BYTES is what one aggregate costs, as JSON on the wire and as an object in memory (measured: about 230 bytes
 * of JSON per entry); the buffer bound in bytes is turned into a number of entries with it.
 */
export const ENTRY_BYTES = 256;
/**
 * SOON_MS / SOON_GAP_MS: a frame with news (AnswerNews: a MAC answering an IP anew) goes out SOON_MS after it (the
 * replies to its request and the rest of a burst go with it) rather than at the next flush, and such early sends are
 * at least SOON_GAP_MS apart (a takeover announcing hundreds of IPs is a few messages, not hundreds).
 */
export const SOON_MS = 5;
export const SOON_GAP_MS = 20;
/** MAX_CONCURRENT_COMMANDS bounds probes and announcements running at once. */
export const MAX_CONCURRENT_COMMANDS = 4;

/** Counters of every frame outcome: what /metrics and tests look at. */
export type OutcomeCounts = Record<"observed" | DecodeFailure["reason"], number>;

export interface AgentDeps {
  readonly node: string;
  readonly logger: Logger;
  readonly link: HubLink;
  /** Lists the interfaces to capture on now (already filtered). */
  readonly scan: () => Promise<NetInterface[]>;
  readonly openSource: (iface: string) => PacketSource;
  /** Bound of the buffer kept while the hub is away (default 16 MiB). */
  readonly maxBufferBytes: number;
  /** Reads the node's facts; the agent adds what it knows of its captures. */
  readonly facts?: (captured: ReadonlySet<string>, capture: NodeFacts["capture"]) => Promise<NodeFacts>;
  /** Runs a command from the hub; results go back through `send`. */
  readonly command?: (msg: HubCommand, send: HubLink["send"]) => Promise<void>;
  readonly metrics?: AgentMetrics;
  /** Keeps the recent raw frames for evidence (absent or null: evidence turned off). */
  readonly evidence?: FrameRing | null;
}

/**
 * handleFrame decodes one captured frame into `fields` (reused across frames) and folds it into the capture point;
 * returns null when it was observed, else why it was dropped. Nothing is allocated for a frame of a known key.
 */
export function handleFrame(
  point: CapturePoint,
  fields: FrameFields,
  iface: string,
  frame: Uint8Array,
  now: number,
  ifaceVlan = -1,
): DecodeFailure | null {
  const err = decodeFrame(frame, LINKTYPE_ETHERNET, fields);
  if (err !== null) return err;
  // On a VLAN device (eth0.30) frames come untagged: they are that VLAN's, as the parent would show them tagged.
  if (fields.vlan < 0 && ifaceVlan > 0) fields.vlan = ifaceVlan;
  point.addFrame(fields, iface, now);
  return null;
}

/** An Agent captures on the selected interfaces and streams aggregates and node facts through its HubLink. */
export class Agent {
  readonly counts: OutcomeCounts = { observed: 0, ignored: 0, truncated: 0, malformed: 0, unsupported: 0 };
  /** Frames observed per kind (read by /metrics at scrape time, never updated per frame through prom-client). */
  readonly kinds = new Map<ObservationKind, number>();
  readonly #point: CapturePoint;
  readonly #fields = newFrameFields();
  readonly #sources = new Map<string, PacketSource>();
  /** The VLAN of each captured VLAN device (eth0.30 -> 30). */
  #vlanOf = new Map<string, number>();
  /** Kernel counters of captures already closed, so totals never go backwards. */
  #closedStats: KernelStats = { received: 0, dropped: 0 };
  #interfaces: NetInterface[] = [];
  #timers: NodeJS.Timeout[] = [];
  #lastFactsKey = "";
  #running = 0;
  readonly #responders = new Map<string, Set<string>>();
  readonly #ring: FrameRing | null;
  readonly #news = new AnswerNews();
  /** The early send waiting (null: none), and when the last one went. */
  #soon: NodeJS.Timeout | null = null;
  #lastSoon = -Infinity;
  /** The next periodic flush, at the pace the hub set (FLUSH_MS until it sets one), and when the last one went. */
  #flushTimer: NodeJS.Timeout | null = null;
  #flushMs = FLUSH_MS;
  #lastFlush = 0;
  #stopped = false;

  constructor(readonly deps: AgentDeps) {
    this.#point = new CapturePoint(Math.max(1, Math.floor(deps.maxBufferBytes / ENTRY_BYTES)));
    this.#ring = deps.evidence ?? null;
    deps.metrics?.bind(this);
  }

  /** evidence is the frame ring, for /metrics. */
  get evidence(): FrameRing | null {
    return this.#ring;
  }

  /** interfaces is the last scan, reported to the hub in every hello. */
  get interfaces(): readonly NetInterface[] {
    return this.#interfaces;
  }

  /** capturing lists the interfaces with an open capture. */
  get capturing(): ReadonlySet<string> {
    return new Set(this.#sources.keys());
  }

  /** bufferedBytes estimates what waits for the hub. */
  get bufferedBytes(): number {
    return (this.#point.size + this.#point.pending) * ENTRY_BYTES;
  }

  async start(): Promise<void> {
    await this.rescan();
    this.#lastFlush = performance.now();
    this.#nextFlush();
    this.#timers.push(
      setInterval(() => {
        // Frames age out as others arrive; on a quiet link, here.
        this.#ring?.expire(Date.now());
        void this.rescan().then(() => this.sendFacts(true));
      }, RESCAN_MS),
    );
    this.deps.link.start();
  }

  /** flushMs is how often what was aggregated goes to the hub (news goes at once). */
  get flushMs(): number {
    return this.#flushMs;
  }

  /**
   * #nextFlush schedules the next periodic flush `#flushMs` after the last one (at once when that is past): a pace
   * that changes keeps the phase, so changes however frequent never hold the flushes back.
   */
  #nextFlush(): void {
    if (this.#stopped) return;
    const wait = Math.max(0, this.#lastFlush + this.#flushMs - performance.now());
    this.#flushTimer = setTimeout(() => {
      this.#lastFlush = performance.now();
      this.flush();
      this.#nextFlush();
    }, wait);
  }

  /** #pace sends every `ms` from now on (a flush not started yet starts at that pace). */
  #pace(ms: number): void {
    if (ms === this.#flushMs || this.#stopped) return;
    this.deps.logger.info("hub.pace", { flushMs: ms, was: this.#flushMs });
    this.#flushMs = ms;
    if (this.#flushTimer === null) return;
    clearTimeout(this.#flushTimer);
    this.#nextFlush();
  }

  /** kernelStats sums libpcap's counters over every capture since start. */
  kernelStats(): KernelStats {
    let { received, dropped } = this.#closedStats;
    for (const [name, s] of this.#sources) {
      const k = s.stats();
      if (k === null) continue;
      received += k.received;
      dropped += k.dropped;
      this.deps.metrics?.kernelReceived.set({ interface: name }, k.received);
      this.deps.metrics?.kernelDrops.set({ interface: name }, k.dropped);
    }
    return { received, dropped };
  }

  /** rescan opens captures on new interfaces and closes them on vanished ones. */
  async rescan(): Promise<void> {
    const { logger } = this.deps;
    this.#interfaces = await this.deps.scan();
    this.#vlanOf = new Map(this.#interfaces.flatMap((i) => (i.vlan === null || i.vlan === undefined ? [] : [[i.name, i.vlan.id]])));
    const want = new Set(this.#interfaces.map((i) => i.name));
    for (const [name, src] of this.#sources) {
      if (want.has(name)) continue;
      const k = src.stats();
      if (k !== null)
        this.#closedStats = { received: this.#closedStats.received + k.received, dropped: this.#closedStats.dropped + k.dropped };
      src.close();
      this.#sources.delete(name);
      logger.info("capture.stopped", { iface: name });
    }
    for (const name of want) {
      if (this.#sources.has(name)) continue;
      try {
        const src = this.deps.openSource(name);
        // Capture time, not read time: a capture point joins one request's sightings across nodes by their times.
        src.start((frame, _read, capturedAt) => this.#onFrame(name, frame, capturedAt));
        this.#sources.set(name, src);
        logger.info("capture.started", { iface: name });
      } catch (e) {
        logger.error("capture.failed", {
          iface: name,
          message: (e as Error).message,
          hint: "the agent needs root or CAP_NET_RAW and CAP_NET_ADMIN",
        });
      }
    }
    if (this.#sources.size === 0)
      logger.warn("capture.none", { hint: "no interface matched --interfaces / --exclude-interfaces and is up" });
  }

  /** #onFrame is the capture path: decode in place, fold, count; nothing here waits on the network. */
  #onFrame(iface: string, frame: Uint8Array, now: number): void {
    const err = handleFrame(this.#point, this.#fields, iface, frame, now, this.#vlanOf.get(iface));
    if (err === null) {
      this.#ring?.push(now, iface, this.#fields.vlan, frame);
      this.counts.observed++;
      const f = this.#fields;
      const k = f.kind;
      this.kinds.set(k, (this.kinds.get(k) ?? 0) + 1);
      if (roleOf(k) !== "ask" && this.#news.seen(f.family === 4 ? f.ip4 : f.ip6, f.mac, now)) this.#flushSoon();
    } else {
      this.counts[err.reason]++;
    }
    // Flush early rather than let one interval's worth grow past a message.
    if (this.#point.size >= MAX_ENTRIES_PER_MESSAGE) this.flush();
  }

  /** #flushSoon sends what is held SOON_MS from now, or SOON_GAP_MS after the last early send if that is later. */
  #flushSoon(): void {
    if (this.#soon !== null) return;
    // Monotonic: a wall clock stepped back would hold early sends back for as long.
    const wait = Math.max(SOON_MS, this.#lastSoon + SOON_GAP_MS - performance.now());
    this.#soon = setTimeout(() => {
      this.#soon = null;
      this.#lastSoon = performance.now();
      this.flush();
    }, wait);
  }

  #noteResponder(ip: string, mac: string): void {
    let macs = this.#responders.get(ip);
    if (macs === undefined) {
      if (this.#responders.size >= 10_000) return; // bound the per-IP series
      macs = new Set();
      this.#responders.set(ip, macs);
    }
    if (macs.has(mac)) return;
    macs.add(mac);
    this.deps.metrics?.responders.set({ ip }, macs.size);
  }

  /** flush sends what was aggregated; when the hub is away or slow it stays in the (bounded, merging) buffer. */
  flush(): void {
    const { link, metrics } = this.deps;
    metrics?.hubConnected.set(link.connected ? 1 : 0);
    metrics?.bufferedBytes.set(this.bufferedBytes);
    // Never block capture on the network: if the socket has not drained, wait for the next interval.
    if (!link.connected || link.bufferedBytes > 1024 * 1024) return;
    for (;;) {
      const batch = this.#point.drain(MAX_ENTRIES_PER_MESSAGE, Date.now());
      const { entries, requests, dropped } = batch;
      if (entries.length === 0 && requests.length === 0 && dropped === 0) return;
      if (dropped > 0) {
        metrics?.aggregatesDropped.inc(dropped);
        this.deps.logger.warn("buffer.dropped", { frames: dropped, hint: "the hub was away longer than --max-buffer-bytes could hold" });
      }
      if (!link.send({ v: WIRE_VERSION, type: "observations", entries, requests, dropped })) {
        this.#point.putBack(batch);
        return;
      }
      for (const e of entries) if (roleOf(e.kind) !== "ask") this.#noteResponder(e.ip, e.mac);
      if (entries.length < MAX_ENTRIES_PER_MESSAGE && requests.length < MAX_ENTRIES_PER_MESSAGE) return;
    }
  }

  /** sendFacts reports the node's facts: always when `periodic`, else only when they changed. */
  async sendFacts(periodic = false): Promise<void> {
    if (this.deps.facts === undefined) return;
    const k = this.kernelStats();
    const facts = await this.deps.facts(this.capturing, {
      frames: Object.values(this.counts).reduce((a, b) => a + b, 0),
      dropped: { ...this.counts, observed: 0 },
      kernelReceived: k.received,
      kernelDropped: k.dropped,
    });
    const key = JSON.stringify({ ...facts, capture: null });
    if (!periodic && key === this.#lastFactsKey) return;
    this.#lastFactsKey = key;
    this.deps.link.send({ v: WIRE_VERSION, type: "facts", facts });
  }

  /**
   * onHubMessage runs commands from the hub (at most MAX_CONCURRENT_COMMANDS at once); an evidence request is
   * answered at once, from what the ring holds.
   */
  onHubMessage(msg: HubMessage): void {
    if (msg.type === "welcome") {
      // A new connection, maybe to another hub: its pace, if it sets one, follows.
      this.#pace(FLUSH_MS);
      void this.sendFacts(true);
      return;
    }
    if (msg.type === "pace") {
      this.#pace(msg.flushMs);
      return;
    }
    if (msg.type === "flush") {
      this.flush();
      return;
    }
    if (msg.type === "evidence-request") {
      const answer = answerEvidence(this.#ring, msg);
      const sent = this.deps.link.send(answer);
      this.deps.logger.info("evidence.answered", {
        id: msg.id,
        ip: msg.ip,
        vlan: msg.vlan,
        frames: answer.frames.length,
        truncated: answer.truncated,
        sent,
      });
      return;
    }
    if (msg.type !== "announce" && msg.type !== "probe" && msg.type !== "probe-many") return;
    const send = (m: Parameters<HubLink["send"]>[0]) => this.deps.link.send(m);
    if (this.deps.command === undefined || this.#running >= MAX_CONCURRENT_COMMANDS) {
      send({
        v: WIRE_VERSION,
        type: "command-done",
        id: msg.id,
        ok: false,
        message: `busy: ${this.#running} commands already running on ${this.deps.node}`,
      });
      return;
    }
    this.#running++;
    this.deps.logger.info("command.started", {
      id: msg.id,
      type: msg.type,
      ...(msg.type === "probe-many" ? { ips: msg.targets.length, rounds: msg.rounds } : { ip: msg.ip }),
    });
    void this.deps
      .command(msg, send)
      .catch((e: unknown) => send({ v: WIRE_VERSION, type: "command-done", id: msg.id, ok: false, message: (e as Error).message }))
      .finally(() => this.#running--);
  }

  /** stop flushes once more and closes every capture and the hub link. */
  async stop(): Promise<void> {
    for (const t of this.#timers) clearInterval(t);
    this.#stopped = true;
    if (this.#flushTimer !== null) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    if (this.#soon !== null) clearTimeout(this.#soon);
    this.flush();
    for (const src of this.#sources.values()) src.close();
    this.#sources.clear();
    await this.deps.link.close();
  }
}
