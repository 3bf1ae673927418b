import { randomBytes } from "node:crypto";
import { subjectIsIp, type Logger, type Transition } from "@whohas/core";
import type { Hub } from "../hub/hub.js";
import type { Facet, Incident } from "../store/incidents.js";
import type { Outbox, OutboxKind, OutboxRow } from "../store/outbox.js";
import type { SettingsRepo } from "../store/settings.js";
import { headers, render, type Alert, type Notice } from "./formats.js";
import type { AlertPolicy, Receiver } from "./receivers.js";
import { Egress, type Attempt } from "./egress.js";
import { TokenBucket } from "../limits.js";
import { vendorOf } from "../vendors.js";
import { LogThrottle } from "../log-throttle.js";

/** GIVE_UP_MS: a notification still failing this long after it was decided is given up (and shown). */
export const GIVE_UP_MS = 24 * 3_600_000;
/** CONCURRENCY: requests in flight per receiver. */
const CONCURRENCY = 2;
/** SLACK_GAP_MS: Slack takes one message a second per incoming webhook. */
const SLACK_GAP_MS = 1000;
/** RETRY_AFTER_MAX_MS: the longest Retry-After honoured. */
const RETRY_AFTER_MAX_MS = 3_600_000;
/** Backoff: 1 s doubling to 5 min, times a random 0.5-1 (jitter), or Retry-After when the receiver asks for longer. */
const BACKOFF_BASE_MS = 1000;
const BACKOFF_MAX_MS = 5 * 60_000;
/** GONE_KEY: receivers that answered 410 Gone (no more notifications until edited). */
const GONE_KEY = "alerting.gone";
/** REPEAT_SWEEP_MS: how often broken IPs are checked for a repeat notification. */
const REPEAT_SWEEP_MS = 60_000;
/**
 * Types that are notified (no-responder and capture-lost are shown, not paged: an idle or unwatched IP). Node findings
 * (agent-down, strictarp-drift) are grouped by their subject, node/NAME, as IP findings by IP; strictarp-reverted by
 * kube-proxy's ConfigMap, cluster/kube-proxy.
 */
const NOTIFIED = new Set([
  "multi-responder",
  "address-conflict",
  "wrong-owner",
  "wrong-interface",
  "silent-drop",
  "split-brain",
  "flip-flop",
  "changed",
  "agent-down",
  "strictarp-drift",
  "strictarp-reverted",
]);

/** paging lists the facets of an incident that page: those of NOTIFIED types (holding or cleared). */
function paging(i: Incident): Facet[] {
  return i.facets.filter((f) => NOTIFIED.has(f.type));
}

/** pages tells whether a finding that pages holds in an incident now. */
const pages = (i: Incident): boolean => paging(i).some((f) => f.resolvedAt === null);

export const OUTCOMES = ["delivered", "retry", "failed", "gone", "suppressed"] as const;
export type Outcome = (typeof OUTCOMES)[number];

export interface AlerterOptions {
  readonly hub: Hub;
  readonly outbox: Outbox;
  /** Where the receivers that answered 410 are remembered. */
  readonly settings: SettingsRepo;
  /** The receivers of now (config, environment and Settings together). */
  readonly receivers: () => Promise<readonly Receiver[]>;
  readonly policy: AlertPolicy;
  readonly logger: Logger;
  readonly onOutcome?: (receiver: string, outcome: Outcome) => void;
  readonly random?: () => number;
}

/**
 * The Alerter turns incidents into notifications and delivers them. Decisions are written to the outbox first
 * (group_wait is a not-before time there, so a crash during it loses nothing); the body is fixed at the first
 * attempt; retries keep the id. Per receiver: 2 requests at most in flight, Slack one a second, 410 stops it.
 */
export class Alerter {
  readonly #inflight = new Map<string, number>();
  /** Each receiver's allowance of notifications per minute. */
  readonly #perMinute = new Map<string, TokenBucket>();
  readonly #noisy: LogThrottle;
  readonly #slackNext = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #sweeper: NodeJS.Timeout | null = null;
  #passing = false;
  #decisions: Promise<void> = Promise.resolve();
  #goneChanges: Promise<void> = Promise.resolve();
  #stopFeed: AbortController | null = null;
  readonly #random: () => number;
  /** Where receivers may be reached (public addresses unless allowed), checked at every send. */
  readonly egress: Egress;

  constructor(readonly o: AlerterOptions) {
    this.#random = o.random ?? Math.random;
    this.egress = new Egress(o.policy);
    this.#noisy = new LogThrottle(o.logger, () => this.#now);
  }

  get #now(): number {
    return this.o.hub.clock();
  }

  /** start delivers what is due (including what a previous process left pending) and follows the hub's incidents. */
  start(): void {
    const ac = new AbortController();
    this.#stopFeed = ac;
    void (async () => {
      for await (const batch of this.o.hub.feed.changes(ac.signal)) {
        for (const c of batch) if (c.kind === "incident" && c.transition !== null) await this.onTransition(c.transition);
      }
    })();
    this.#timer = setInterval(() => void this.deliverDue(), 250);
    this.#timer.unref();
    this.#sweeper = setInterval(() => void this.sweep(), REPEAT_SWEEP_MS);
    this.#sweeper.unref();
    void this.deliverDue();
  }

  stop(): void {
    this.#stopFeed?.abort();
    if (this.#timer !== null) clearInterval(this.#timer);
    if (this.#sweeper !== null) clearInterval(this.#sweeper);
  }

  async #gone(): Promise<Set<string>> {
    return new Set((await this.o.settings.get<string[]>(GONE_KEY)) ?? []);
  }

  /**
   * #changeGone reads, changes and writes the set of receivers that answered 410, one change after another: two
   * receivers gone in one pass must not each write the set without the other.
   */
  #changeGone(change: (gone: Set<string>) => boolean): Promise<void> {
    const next = this.#goneChanges.then(async () => {
      const gone = await this.#gone();
      if (change(gone)) await this.o.settings.set(GONE_KEY, [...gone], this.#now);
    });
    this.#goneChanges = next.catch(() => undefined);
    return next;
  }

  /** revive lets a receiver that answered 410 receive again (it was edited). */
  revive(name: string): Promise<void> {
    return this.#changeGone((gone) => gone.delete(name));
  }

  /** status says, per receiver, whether it answered 410 and how its notifications fared. */
  goneReceivers(): Promise<ReadonlySet<string>> {
    return this.#gone();
  }

  /**
   * #decide runs decisions one after another (a transition, the repeat sweep): each reads the outbox before it
   * writes, and two at once could both find nothing waiting and write two notifications.
   */
  #decide(fn: () => Promise<void>): Promise<void> {
    const next = this.#decisions.then(fn);
    this.#decisions = next.catch((e: unknown) => this.o.logger.error("alert.decision_failed", { message: (e as Error).message }));
    return this.#decisions;
  }

  /**
   * onTransition decides a notification for a subject whose finding opened or cleared: one stream per incident, as
   * Alertmanager keeps one per group. The first finding that pages opens it ("firing", after groupWait, gathering the
   * findings that come meanwhile); a finding that joins an incident already notified is an "update" of that stream,
   * sent no sooner than groupInterval after its last notification (Alertmanager's group_interval), not a new page; a
   * finding that clears while another still pages sends nothing (the next notification shows it resolved); "resolved"
   * goes once no finding that pages holds any more.
   */
  onTransition(t: Transition): Promise<void> {
    if (!NOTIFIED.has(t.finding.type)) return Promise.resolve();
    return this.#decide(async () => {
      const open = await this.o.hub.judging.incidents({ ip: t.finding.ip, open: true });
      if (t.kind === "opened") {
        const others = open.some((i) => paging(i).some((f) => f.resolvedAt === null && f.type !== t.finding.type));
        await this.#enqueue(t.finding.ip, others ? "update" : "firing");
      } else if (t.kind === "cleared" && this.o.policy.sendResolved && !open.some(pages)) await this.#enqueue(t.finding.ip, "resolved");
    });
  }

  /**
   * enqueue writes one notification per receiver for the IP, unless one is still waiting to go (what changed goes out
   * with it) or the IP hit its cap. An "update" to a receiver never notified of the IP is its first page ("firing").
   */
  enqueue(ip: string, kind: OutboxKind): Promise<void> {
    return this.#decide(() => this.#enqueue(ip, kind));
  }

  async #enqueue(ip: string, kind: OutboxKind): Promise<void> {
    const now = this.#now;
    const gone = await this.#gone();
    for (const r of await this.o.receivers()) if (!gone.has(r.name)) await this.#enqueueTo(r, ip, kind, now);
    if (this.o.policy.groupWaitMs === 0) setImmediate(() => void this.deliverDue());
  }

  async #enqueueTo(r: Receiver, ip: string, kind: OutboxKind, now: number): Promise<void> {
    if ((await this.o.outbox.waiting(r.name, ip)) !== null) return;
    if ((await this.o.outbox.sentSince(r.name, ip, now - 3_600_000)) >= this.o.policy.maxPerIpPerHour) {
      this.o.onOutcome?.(r.name, "suppressed");
      this.o.logger.warn("alert.suppressed", {
        receiver: r.name,
        ip,
        kind,
        hint: `more than ${this.o.policy.maxPerIpPerHour} notifications for this IP in an hour (alerting.maxPerIpPerHour): it is flapping`,
      });
      return;
    }
    let budget = this.#perMinute.get(r.name);
    if (budget === undefined)
      this.#perMinute.set(r.name, (budget = new TokenBucket(this.o.policy.maxPerMinute / 60, this.o.policy.maxPerMinute, now)));
    if (!budget.take(now)) {
      this.o.onOutcome?.(r.name, "suppressed");
      this.#noisy.warn("alert.storm", r.name, {
        receiver: r.name,
        ip,
        kind,
        hint: `more than ${this.o.policy.maxPerMinute} notifications to this receiver in a minute (alerting.maxPerMinute): the rest are held back; the dashboard's Incidents lists them all`,
      });
      return;
    }
    const last = kind === "update" ? await this.o.outbox.lastCreated(r.name, ip) : null;
    const notBefore = Math.max(now + this.o.policy.groupWaitMs, last === null ? 0 : last + this.o.policy.groupIntervalMs);
    await this.o.outbox.add({
      id: `msg_${randomBytes(12).toString("hex")}`,
      receiver: r.name,
      groupKey: ip,
      kind: kind === "update" && last === null ? "firing" : kind,
      createdAt: now,
      notBefore,
    });
  }

  /** sweep notifies again, per receiver, the subjects whose incident still pages repeat_interval after their last notification. */
  sweep(): Promise<void> {
    return this.#decide(async () => {
      const now = this.#now;
      const ips = new Set((await this.o.hub.judging.incidents({ open: true, limit: 5000 })).filter(pages).map((i) => i.ip));
      const gone = await this.#gone();
      const receivers = await this.o.receivers();
      for (const ip of ips) {
        for (const r of receivers) {
          if (gone.has(r.name)) continue;
          const last = await this.o.outbox.lastCreated(r.name, ip);
          if (last !== null && now - last >= this.o.policy.repeatIntervalMs) await this.#enqueueTo(r, ip, "repeat", now);
        }
      }
    });
  }

  /**
   * notice is what a notification says now: one alert per finding that pages, of the subject's open incident and of
   * those cleared since the last one sent (a finding of an incident is one alert, with the incident's id).
   */
  async notice(row: Pick<OutboxRow, "id" | "receiver" | "groupKey" | "createdAt">): Promise<Notice | null> {
    const ip = row.groupKey;
    const since = (await this.o.outbox.previousDelivered(row.receiver, ip, row.createdAt)) ?? row.createdAt - 3_600_000;
    const alerts: Alert[] = (await this.o.hub.judging.incidents({ ip, limit: 200 })).flatMap((i) =>
      paging(i)
        .filter((f) => f.resolvedAt === null || f.resolvedAt >= since)
        .map((f) => ({
          incidentId: i.id,
          type: f.type,
          status: f.resolvedAt === null ? ("firing" as const) : ("resolved" as const),
          detail: f.detail,
          macs: f.macs,
          nodes: f.macs.map((m) => this.o.hub.nodeOfMac(m)),
          vendors: f.macs.map(vendorOf),
          firstSeen: f.firstSeen,
          lastSeen: f.lastSeen,
          resolvedAt: f.resolvedAt,
          samples: f.samples,
        })),
    );
    if (alerts.length === 0) return null;
    const view = subjectIsIp(ip) ? this.o.hub.ip(ip) : null;
    return {
      id: row.id,
      receiver: row.receiver,
      ip,
      status: alerts.some((a) => a.status === "firing") ? "firing" : "resolved",
      services: (view?.services ?? []).map((s) => ({ namespace: s.namespace, name: s.name })),
      expectedOwner: view?.expectedOwner?.node ?? null,
      alerts,
      externalUrl: this.o.policy.externalUrl,
      cluster: this.o.hub.clusterName,
    };
  }

  /** deliverDue sends what is due, within each receiver's limits; results are written back to the outbox. */
  async deliverDue(): Promise<void> {
    if (this.#passing) return;
    this.#passing = true;
    try {
      const byName = new Map((await this.o.receivers()).map((r) => [r.name, r]));
      const sends: Promise<void>[] = [];
      for (const row of await this.o.outbox.due(this.#now, 100)) {
        const r = byName.get(row.receiver);
        if (r === undefined) {
          await this.o.outbox.cancel(row.receiver, "the receiver was removed");
          continue;
        }
        if ((this.#inflight.get(r.name) ?? 0) >= CONCURRENCY) continue;
        if (r.format === "slack" && (this.#slackNext.get(r.name) ?? 0) > this.#now) continue;
        if (r.format === "slack") this.#slackNext.set(r.name, this.#now + SLACK_GAP_MS);
        // The slot is taken here, before the send reads the store: the next row of the loop sees it taken.
        this.#inflight.set(r.name, (this.#inflight.get(r.name) ?? 0) + 1);
        sends.push(this.#send(r, row).finally(() => this.#inflight.set(r.name, (this.#inflight.get(r.name) ?? 1) - 1)));
      }
      await Promise.all(sends);
    } catch (e) {
      this.o.logger.error("alert.delivery_pass_failed", { message: (e as Error).message });
    } finally {
      this.#passing = false;
    }
  }

  /** #send makes (or reads) the body, posts it and settles the row; the caller holds the receiver's slot meanwhile. */
  async #send(r: Receiver, row: OutboxRow): Promise<void> {
    let body = row.body;
    if (body === null) {
      const n = await this.notice(row);
      if (n === null) {
        await this.o.outbox.attempted(row.id, {
          status: "cancelled",
          notBefore: row.notBefore,
          lastStatus: null,
          lastError: "its incidents are gone (pruned)",
          deliveredAt: null,
        });
        return;
      }
      body = render(r.format, n);
      await this.o.outbox.freeze(row.id, body);
    }
    const a = await this.egress.post(r.url, body, headers(row.id, r.secret, body, this.#now), () => this.#now);
    await this.#settle(r, row, a);
    // Another due row may have waited for this slot.
    if (a.status !== null && a.status < 300) setImmediate(() => void this.deliverDue());
  }

  async #settle(r: Receiver, row: OutboxRow, a: Attempt): Promise<void> {
    const now = this.#now;
    const attempts = row.attempts + 1;
    const base = { lastStatus: a.status, deliveredAt: null as number | null };
    if (a.status !== null && a.status >= 200 && a.status < 300) {
      await this.o.outbox.attempted(row.id, { ...base, status: "delivered", notBefore: row.notBefore, lastError: null, deliveredAt: now });
      this.o.onOutcome?.(r.name, "delivered");
      this.o.logger.info("alert.delivered", { receiver: r.name, id: row.id, ip: row.groupKey, kind: row.kind, attempts, ms: a.ms });
      return;
    }
    // The status only: what a receiver answers is not shown to whoever reads the deliveries (it may be an internal
    // service's page, reached through allowPrivate).
    const why = a.error ?? `HTTP ${a.status ?? 0}`;
    if (a.status === 410) {
      await this.o.outbox.attempted(row.id, {
        ...base,
        status: "failed",
        notBefore: row.notBefore,
        lastError: `410 Gone: ${r.name} stopped (edit it in Settings to resume)`,
      });
      const cancelled = await this.o.outbox.cancel(r.name, "the receiver answered 410 Gone");
      await this.#changeGone((gone) => {
        if (gone.has(r.name)) return false;
        gone.add(r.name);
        return true;
      });
      this.o.onOutcome?.(r.name, "gone");
      this.o.logger.error("alert.receiver_gone", {
        receiver: r.name,
        cancelled,
        hint: "the receiver says it no longer exists: fix its URL in Settings or the config file",
      });
      return;
    }
    const retryable = a.status === null || a.status === 429 || a.status === 408 || a.status >= 500;
    if (!retryable || now - row.createdAt >= GIVE_UP_MS) {
      await this.o.outbox.attempted(row.id, {
        ...base,
        status: "failed",
        notBefore: row.notBefore,
        lastError: retryable ? `gave up after 24 h: ${why}` : why,
      });
      this.o.onOutcome?.(r.name, "failed");
      this.o.logger.error("alert.failed", { receiver: r.name, id: row.id, status: a.status, why, attempts });
      return;
    }
    const backoff = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (attempts - 1)) * (0.5 + this.#random() / 2);
    // A receiver may ask for a longer wait, up to RETRY_AFTER_MAX_MS, and never past the give-up time.
    const wait = Math.max(
      0,
      Math.min(Math.max(backoff, Math.min(a.retryAfterMs ?? 0, RETRY_AFTER_MAX_MS)), row.createdAt + GIVE_UP_MS - now),
    );
    // Whole milliseconds: the store keeps times as integers.
    await this.o.outbox.attempted(row.id, { ...base, status: "pending", notBefore: now + Math.ceil(wait), lastError: why });
    this.o.onOutcome?.(r.name, "retry");
    this.o.logger.warn("alert.retry", { receiver: r.name, id: row.id, status: a.status, why, attempts, retryInMs: Math.round(wait) });
  }

  /** test sends a test notification to a receiver now (not through the outbox) and returns its answer. */
  async test(r: Receiver): Promise<Attempt> {
    const now = this.#now;
    const n: Notice = {
      id: `msg_test_${randomBytes(8).toString("hex")}`,
      receiver: r.name,
      ip: "192.0.2.1",
      status: "firing",
      services: [{ namespace: "whohas", name: "test" }],
      expectedOwner: "node-a",
      alerts: [
        {
          incidentId: 0,
          type: "multi-responder",
          status: "firing",
          detail: "test: 2 nodes answer for 192.0.2.1 (node-a, node-b)",
          macs: ["02:00:00:00:00:0a", "02:00:00:00:00:0b"],
          nodes: ["node-a", "node-b"],
          vendors: [null, null],
          firstSeen: now,
          lastSeen: now,
          resolvedAt: null,
          samples: [now],
        },
      ],
      externalUrl: this.o.policy.externalUrl,
      cluster: this.o.hub.clusterName,
      test: true,
    };
    const body = render(r.format, n);
    return this.egress.post(r.url, body, headers(n.id, r.secret, body, now), () => this.o.hub.clock());
  }
}
