import { TRPCError, type TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import type { Alerter } from "../../alerts/alerter.js";
import { checkUrl } from "../../alerts/receivers.js";
import { FORMATS } from "../../store/outbox.js";
import { adminProcedure, type Context } from "../trpc.js";

function alerterOf(ctx: Context): Alerter {
  if (ctx.alerter === undefined) throw new TRPCError({ code: "PRECONDITION_FAILED", message: "alerting is not available in this process" });
  return ctx.alerter;
}

/** shownUrl hides what makes a URL a credential (a Slack webhook's path is its secret): scheme, host and a hint. */
function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return u.pathname.length > 12 ? `${u.protocol}//${u.host}${u.pathname.slice(0, 8)}…` : `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

const name = z.string().trim().regex(/^[A-Za-z0-9._-]{1,64}$/, "letters, digits, . _ - (at most 64)");

export const alertsRouter = {
  /** receivers: every receiver (config file, environment, Settings) with how its notifications fare. */
  receivers: adminProcedure.query(({ ctx }) => {
    const a = alerterOf(ctx);
    const gone = a.goneReceivers();
    const recent = ctx.hub.store.outbox.recent(1000);
    return a.o.receivers().map((r) => {
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
  }),

  /** deliveries: the newest notifications and what became of them. */
  deliveries: adminProcedure.query(({ ctx }) =>
    ctx.hub.store.outbox.recent(100).map((d) => ({ id: d.id, receiver: d.receiver, ip: d.groupKey, kind: d.kind, createdAt: d.createdAt, attempts: d.attempts, status: d.status, lastStatus: d.lastStatus, lastError: d.lastError, deliveredAt: d.deliveredAt })),
  ),

  /** saveReceiver adds or edits a receiver of Settings (those of the config file are edited there); audited. */
  saveReceiver: adminProcedure
    .input(z.object({ name, url: z.string().trim().min(1).max(2048), format: z.enum(FORMATS), secret: z.string().min(16, "at least 16 characters (openssl rand -base64 32)").max(256).nullable(), keepSecret: z.boolean().default(false) }))
    .mutation(({ ctx, input }) => {
      const a = alerterOf(ctx);
      const now = ctx.hub.clock();
      const audit = (outcome: "ok" | "refused", detail: string) =>
        ctx.hub.store.audit({ t: now, actor: ctx.principal.user, action: "receiver.save", input: { name: input.name, url: shownUrl(input.url), format: input.format, signed: input.secret !== null || input.keepSecret }, outcome, detail });
      const existing = a.o.receivers().find((r) => r.name === input.name);
      if (existing !== undefined && existing.source !== "settings") {
        audit("refused", `defined in the ${existing.source === "env" ? "environment" : "config file"}`);
        throw new TRPCError({ code: "CONFLICT", message: `${input.name} comes from the ${existing.source === "env" ? "environment" : "config file"}: change it there` });
      }
      const bad = checkUrl(input.url, a.o.policy);
      if (bad !== null) {
        audit("refused", bad);
        throw new TRPCError({ code: "BAD_REQUEST", message: bad });
      }
      const secret = input.keepSecret ? (existing?.secret ?? null) : input.secret;
      ctx.hub.store.outbox.saveReceiver({ name: input.name, url: input.url, format: input.format, secret, createdBy: ctx.principal.user }, now);
      a.revive(input.name);
      audit("ok", existing === undefined ? "added" : "edited");
      return { ok: true };
    }),

  /** deleteReceiver removes a receiver of Settings and cancels what it had pending; audited. */
  deleteReceiver: adminProcedure.input(z.object({ name })).mutation(({ ctx, input }) => {
    const ok = ctx.hub.store.outbox.deleteReceiver(input.name);
    const cancelled = ok ? ctx.hub.store.outbox.cancel(input.name, "the receiver was deleted") : 0;
    ctx.hub.store.audit({ t: ctx.hub.clock(), actor: ctx.principal.user, action: "receiver.delete", input, outcome: ok ? "ok" : "refused", detail: ok ? `deleted, ${cancelled} pending cancelled` : "no such receiver in Settings" });
    if (!ok) throw new TRPCError({ code: "NOT_FOUND", message: `no receiver ${input.name} in Settings (those of the config file are removed there)` });
    return { ok };
  }),

  /** testReceiver sends a test notification now and returns the receiver's answer; audited. */
  testReceiver: adminProcedure.input(z.object({ name })).mutation(async ({ ctx, input }) => {
    const a = alerterOf(ctx);
    const r = a.o.receivers().find((x) => x.name === input.name);
    if (r === undefined) throw new TRPCError({ code: "NOT_FOUND", message: `no receiver ${input.name}` });
    const res = await a.test(r);
    const ok = res.status !== null && res.status >= 200 && res.status < 300;
    ctx.hub.store.audit({ t: ctx.hub.clock(), actor: ctx.principal.user, action: "receiver.test", input, outcome: ok ? "ok" : "failed", detail: res.error ?? `HTTP ${res.status ?? 0} in ${Math.round(res.ms)} ms` });
    // Only the status and a short reason go back: the answer's body would let Settings read any URL the hub reaches.
    return { ok, status: res.status, ms: Math.round(res.ms), error: res.error === null ? null : res.error.slice(0, 200) };
  }),
} satisfies TRPCRouterRecord;
