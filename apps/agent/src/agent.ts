import { Aggregator, MAX_ENTRIES_PER_MESSAGE, WIRE_VERSION, classifyFrame, type FrameOutcome } from "@whohas/core";
import type { PacketSource } from "./capture/pcap-source.js";
import type { NetInterface } from "./capture/interfaces.js";
import type { HubLink } from "./hub-link.js";
import type { Logger } from "@whohas/core";

/** FLUSH_MS is how often aggregates go to the hub (issue 4: at most every 100 ms). */
export const FLUSH_MS = 100;
/** RESCAN_MS is how often interfaces are listed again, as MetalLB does (DESIGN 2.2). */
export const RESCAN_MS = 10_000;

/** Counters of every frame outcome, per reason: what /metrics and tests look at. */
export type OutcomeCounts = Record<"observed" | "ignored" | "truncated" | "malformed" | "unsupported", number>;

export interface AgentDeps {
  readonly node: string;
  readonly logger: Logger;
  readonly link: HubLink;
  /** Lists the interfaces to capture on now (already filtered). */
  readonly scan: () => Promise<NetInterface[]>;
  readonly openSource: (iface: string) => PacketSource;
  readonly maxBufferedEntries: number;
}

/** handleFrame classifies one captured frame and folds it into the aggregator, returning what became of it. */
export function handleFrame(agg: Aggregator, iface: string, frame: Uint8Array, now: number): FrameOutcome {
  const out = classifyFrame(frame);
  if (out.kind === "observed") agg.add(out.obs, iface, now);
  return out;
}

/** An Agent captures on the selected interfaces and streams aggregates through its HubLink. */
export class Agent {
  readonly counts: OutcomeCounts = { observed: 0, ignored: 0, truncated: 0, malformed: 0, unsupported: 0 };
  readonly #agg: Aggregator;
  readonly #sources = new Map<string, PacketSource>();
  #interfaces: NetInterface[] = [];
  #timers: NodeJS.Timeout[] = [];

  constructor(readonly deps: AgentDeps) {
    this.#agg = new Aggregator(deps.maxBufferedEntries);
  }

  /** interfaces is the last scan, reported to the hub in every hello. */
  get interfaces(): readonly NetInterface[] {
    return this.#interfaces;
  }

  async start(): Promise<void> {
    await this.rescan();
    this.#timers.push(setInterval(() => this.flush(), FLUSH_MS));
    this.#timers.push(setInterval(() => void this.rescan(), RESCAN_MS));
    this.deps.link.start();
  }

  /** rescan opens captures on new interfaces and closes them on vanished ones. */
  async rescan(): Promise<void> {
    const { logger } = this.deps;
    this.#interfaces = await this.deps.scan();
    const want = new Set(this.#interfaces.map((i) => i.name));
    for (const [name, src] of this.#sources) {
      if (!want.has(name)) {
        src.close();
        this.#sources.delete(name);
        logger.info("capture.stopped", { iface: name });
      }
    }
    for (const name of want) {
      if (this.#sources.has(name)) continue;
      try {
        const src = this.deps.openSource(name);
        src.start((frame, now) => {
          const out = handleFrame(this.#agg, name, frame, now);
          this.counts[out.kind === "observed" ? "observed" : out.reason]++;
        });
        this.#sources.set(name, src);
        logger.info("capture.started", { iface: name });
      } catch (e) {
        logger.error("capture.failed", { iface: name, message: (e as Error).message, hint: "the agent needs root or CAP_NET_RAW and CAP_NET_ADMIN" });
      }
    }
    if (this.#sources.size === 0) logger.warn("capture.none", { hint: "no interface matched --interfaces / --exclude-interfaces and is up" });
  }

  /** flush sends what was aggregated since the last flush; on failure it stays in the aggregator (merged). */
  flush(): void {
    const { link } = this.deps;
    if (!link.connected || link.bufferedBytes > 1024 * 1024) return;
    while (this.#agg.size > 0) {
      const { entries, dropped } = this.#agg.drain(MAX_ENTRIES_PER_MESSAGE);
      if (!link.send({ v: WIRE_VERSION, type: "observations", entries, dropped })) {
        this.#agg.putBack(entries, dropped);
        return;
      }
    }
  }

  /** stop flushes once more and closes every capture and the hub link. */
  async stop(): Promise<void> {
    for (const t of this.#timers) clearInterval(t);
    this.flush();
    for (const src of this.#sources.values()) src.close();
    this.#sources.clear();
    await this.deps.link.close();
  }
}
