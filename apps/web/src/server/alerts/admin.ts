import type { AuditEntry, AuditLog } from "../store/audit.js";
import type { Format } from "../store/outbox.js";
import type { Alerter } from "./alerter.js";
import type { Attempt } from "./egress.js";
import { checkUrl } from "./receivers.js";

/** An AlertRefused is a change to the receivers that could not be made, with the reason (audited as refused). */
export class AlertRefused extends Error {
  constructor(
    readonly code: "CONFLICT" | "BAD_REQUEST" | "NOT_FOUND",
    message: string,
  ) {
    super(message);
  }
}

/** shownUrl hides what makes a URL a credential (a Slack webhook's path is its secret): scheme, host and a hint. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return u.pathname.length > 12 ? `${u.protocol}//${u.host}${u.pathname.slice(0, 8)}…` : `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

/**
 * AlertAdmin is what Settings does with alerting: the receivers and how their notifications fare, adding, editing
 * and deleting the receivers of Settings (those of the config file and the environment are changed there), and test
 * sends. Every change is audited.
 */
export class AlertAdmin {
  constructor(
    readonly alerter: Alerter,
    readonly audit: AuditLog,
  ) {}

  #audit(e: Omit<AuditEntry, "t">): Promise<void> {
    return this.audit.append({ t: this.alerter.o.hub.clock(), ...e });
  }

  /** receivers: every receiver (config file, environment, Settings) with how its notifications fare. */
  async receivers() {
    const a = this.alerter;
    const [gone, recent, receivers] = await Promise.all([a.goneReceivers(), a.o.outbox.recent(1000), a.o.receivers()]);
    return receivers.map((r) => {
      const mine = recent.filter((d) => d.receiver === r.name);
      const delivered = mine.find((d) => d.status === "delivered");
      const failing = mine.find((d) => d.lastError !== null);
      return {
        name: r.name,
        url: shownUrl(r.url),
        format: r.format,
        source: r.source,
        signed: r.secret !== null,
        gone: gone.has(r.name),
        pending: mine.filter((d) => d.status === "pending").length,
        lastDelivered: delivered?.deliveredAt ?? null,
        lastError: failing === undefined ? null : { at: failing.createdAt, error: failing.lastError, status: failing.status },
      };
    });
  }

  /** deliveries: the newest notifications and what became of them. */
  async deliveries(limit: number) {
    return (await this.alerter.o.outbox.recent(limit)).map((d) => ({
      id: d.id,
      receiver: d.receiver,
      ip: d.groupKey,
      kind: d.kind,
      createdAt: d.createdAt,
      attempts: d.attempts,
      status: d.status,
      lastStatus: d.lastStatus,
      lastError: d.lastError,
      deliveredAt: d.deliveredAt,
      /** When a pending notification is tried next (group_wait or its backoff), null otherwise. */
      nextAttemptAt: d.status === "pending" ? d.notBefore : null,
    }));
  }

  /** saveReceiver adds or edits a receiver of Settings; its URL must pass the egress policy. */
  async saveReceiver(
    input: { name: string; url: string; format: Format; secret: string | null; keepSecret: boolean },
    actor: string,
  ): Promise<void> {
    const a = this.alerter;
    const audit = (outcome: "ok" | "refused", detail: string) =>
      this.#audit({
        actor,
        action: "receiver.save",
        input: { name: input.name, url: shownUrl(input.url), format: input.format, signed: input.secret !== null || input.keepSecret },
        outcome,
        detail,
      });
    const existing = (await a.o.receivers()).find((r) => r.name === input.name);
    if (existing !== undefined && existing.source !== "settings") {
      const where = existing.source === "env" ? "environment" : "config file";
      await audit("refused", `defined in the ${where}`);
      throw new AlertRefused("CONFLICT", `${input.name} comes from the ${where}: change it there`);
    }
    const bad = checkUrl(input.url, a.o.policy);
    if (bad !== null) {
      await audit("refused", bad);
      throw new AlertRefused("BAD_REQUEST", bad);
    }
    const secret = input.keepSecret ? (existing?.secret ?? null) : input.secret;
    await a.o.outbox.saveReceiver({ name: input.name, url: input.url, format: input.format, secret, createdBy: actor }, a.o.hub.clock());
    await a.revive(input.name);
    await audit("ok", existing === undefined ? "added" : "edited");
  }

  /** deleteReceiver removes a receiver of Settings and cancels what it had pending. */
  async deleteReceiver(name: string, actor: string): Promise<void> {
    const outbox = this.alerter.o.outbox;
    const ok = await outbox.deleteReceiver(name);
    const cancelled = ok ? await outbox.cancel(name, "the receiver was deleted") : 0;
    await this.#audit({
      actor,
      action: "receiver.delete",
      input: { name },
      outcome: ok ? "ok" : "refused",
      detail: ok ? `deleted, ${cancelled} pending cancelled` : "no such receiver in Settings",
    });
    if (!ok) throw new AlertRefused("NOT_FOUND", `no receiver ${name} in Settings (those of the config file are removed there)`);
  }

  /**
   * testReceiver sends a test notification now. Only the status and a short reason go back: the answer's body would
   * let Settings read whatever a URL the hub can reach says.
   */
  async testReceiver(name: string, actor: string): Promise<{ ok: boolean; status: number | null; ms: number; error: string | null }> {
    const r = (await this.alerter.o.receivers()).find((x) => x.name === name);
    if (r === undefined) throw new AlertRefused("NOT_FOUND", `no receiver ${name}`);
    const res: Attempt = await this.alerter.test(r);
    const ok = res.status !== null && res.status >= 200 && res.status < 300 && res.error === null;
    await this.#audit({
      actor,
      action: "receiver.test",
      input: { name },
      outcome: ok ? "ok" : "failed",
      detail: res.error ?? `HTTP ${res.status ?? 0} in ${Math.round(res.ms)} ms`,
    });
    return { ok, status: res.status, ms: Math.round(res.ms), error: res.error === null ? null : res.error.slice(0, 200) };
  }
}
