import { TRPCError, type TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { MAX_RETENTION_MS, MIN_RETENTION_MS, SettingsRefused, type Settings } from "../../settings.js";
import { adminProcedure, viewerProcedure, type Context } from "../trpc.js";

function settingsOf(ctx: Context): Settings {
  if (ctx.settings === undefined)
    throw new TRPCError({ code: "PRECONDITION_FAILED", message: "settings are not available in this process" });
  return ctx.settings;
}

/** refused turns a change Settings refused into its tRPC code, with the reason. */
async function refused<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof SettingsRefused) throw new TRPCError({ code: e.code, message: e.message });
    throw e;
  }
}

export const settingsRouter = {
  /** me: who is signed in, with which role and how (the nav shows it; pages hide what the role may not do). */
  me: viewerProcedure.query(({ ctx }) => ({ user: ctx.principal.user, role: ctx.principal.role, via: ctx.principal.via })),

  /** get: everything the Settings page shows. */
  get: adminProcedure.query(async ({ ctx }) => {
    const s = settingsOf(ctx);
    return {
      retention: await s.retention(),
      fileRetentionMs: s.fileRetentionMs,
      users: s.users.map((u) => ({ name: u.name, role: u.role })),
      methods: s.methods,
      tokens: await s.tokens(),
    };
  }),

  /** setRetention: how long traffic and resolved incidents are kept (null: the config file's); audited. */
  setRetention: adminProcedure
    .input(z.object({ ms: z.number().int().min(MIN_RETENTION_MS).max(MAX_RETENTION_MS).nullable() }))
    .mutation(({ ctx, input }) => settingsOf(ctx).setRetention(input.ms, ctx.principal.user)),

  /** createToken makes a read-API token; the token is in this answer only (the store keeps a hash); audited. */
  createToken: adminProcedure
    .input(
      z.object({
        name: z
          .string()
          .trim()
          .regex(/^[A-Za-z0-9._-]{1,64}$/, "letters, digits, . _ - (at most 64)"),
      }),
    )
    .mutation(({ ctx, input }) => refused(() => settingsOf(ctx).createToken(input.name, ctx.principal.user))),

  /** revokeToken deletes a read-API token at once; audited. */
  revokeToken: adminProcedure.input(z.object({ id: z.number().int().positive() })).mutation(({ ctx, input }) =>
    refused(async () => {
      await settingsOf(ctx).revokeToken(input.id, ctx.principal.user);
      return { ok: true };
    }),
  ),

  /** audit: the newest entries of the audit log (admins only). */
  audit: adminProcedure
    .input(z.object({ limit: z.number().int().min(1).max(1000).default(200) }).optional())
    .query(({ ctx, input }) => settingsOf(ctx).auditLog(input?.limit ?? 200)),
} satisfies TRPCRouterRecord;
