import { TRPCError, type TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { AlertRefused, type AlertAdmin } from "../../alerts/admin.js";
import { FORMATS } from "../../store/outbox.js";
import { adminProcedure, type Context } from "../trpc.js";

function alertsOf(ctx: Context): AlertAdmin {
  if (ctx.alerts === undefined) throw new TRPCError({ code: "PRECONDITION_FAILED", message: "alerting is not available in this process" });
  return ctx.alerts;
}

/** refused turns a change alerting refused into its tRPC code, with the reason. */
async function refused<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof AlertRefused) throw new TRPCError({ code: e.code, message: e.message });
    throw e;
  }
}

const name = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9._-]{1,64}$/, "letters, digits, . _ - (at most 64)");

export const alertsRouter = {
  /** receivers: every receiver (config file, environment, Settings) with how its notifications fare. */
  receivers: adminProcedure.query(({ ctx }) => alertsOf(ctx).receivers()),

  /** deliveries: the newest notifications and what became of them. */
  deliveries: adminProcedure.query(({ ctx }) => alertsOf(ctx).deliveries(100)),

  /** saveReceiver adds or edits a receiver of Settings (those of the config file are edited there); audited. */
  saveReceiver: adminProcedure
    .input(
      z.object({
        name,
        url: z.string().trim().min(1).max(2048),
        format: z.enum(FORMATS),
        secret: z.string().min(16, "at least 16 characters (openssl rand -base64 32)").max(256).nullable(),
        keepSecret: z.boolean().default(false),
      }),
    )
    .mutation(({ ctx, input }) =>
      refused(async () => {
        await alertsOf(ctx).saveReceiver(input, ctx.principal.user);
        return { ok: true };
      }),
    ),

  /** deleteReceiver removes a receiver of Settings and cancels what it had pending; audited. */
  deleteReceiver: adminProcedure.input(z.object({ name })).mutation(({ ctx, input }) =>
    refused(async () => {
      await alertsOf(ctx).deleteReceiver(input.name, ctx.principal.user);
      return { ok: true };
    }),
  ),

  /** testReceiver sends a test notification now and says how the receiver answered (status and reason); audited. */
  testReceiver: adminProcedure
    .input(z.object({ name }))
    .mutation(({ ctx, input }) => refused(() => alertsOf(ctx).testReceiver(input.name, ctx.principal.user))),
} satisfies TRPCRouterRecord;
