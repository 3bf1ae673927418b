import { TRPCError, type TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { newApiToken } from "../../auth/auth.js";
import { MAX_RETENTION_MS, MIN_RETENTION_MS, type Settings } from "../../settings.js";
import { adminProcedure, viewerProcedure, type Context } from "../trpc.js";

function settingsOf(ctx: Context): Settings {
  if (ctx.settings === undefined) throw new TRPCError({ code: "PRECONDITION_FAILED", message: "settings are not available in this process" });
  return ctx.settings;
}

export const settingsRouter = {
  /** me: who is signed in, with which role and how (the nav shows it; pages hide what the role may not do). */
  me: viewerProcedure.query(({ ctx }) => ({ user: ctx.principal.user, role: ctx.principal.role, via: ctx.principal.via })),

  /** get: everything the Settings page shows. */
  get: adminProcedure.query(({ ctx }) => {
    const s = settingsOf(ctx);
    return {
      retention: s.retention(),
      fileRetentionMs: s.fileRetentionMs,
      users: s.users.map((u) => ({ name: u.name, role: u.role })),
      methods: s.methods,
      tokens: ctx.hub.store.apiTokens(),
    };
  }),

  /** setRetention: how long traffic and resolved incidents are kept (null: the config file's); audited. */
  setRetention: adminProcedure.input(z.object({ ms: z.number().int().min(MIN_RETENTION_MS).max(MAX_RETENTION_MS).nullable() })).mutation(({ ctx, input }) => {
    const s = settingsOf(ctx);
    const before = s.retention();
    s.setRetention(input.ms, ctx.hub.clock());
    const after = s.retention();
    ctx.hub.store.audit({ t: ctx.hub.clock(), actor: ctx.principal.user, action: "settings.retention", input, outcome: "ok", detail: `${before.ms} ms (${before.source}) -> ${after.ms} ms (${after.source})` });
    return after;
  }),

  /** createToken makes a read-API token; the token is in this answer only (the store keeps a hash); audited. */
  createToken: adminProcedure.input(z.object({ name: z.string().trim().regex(/^[A-Za-z0-9._-]{1,64}$/, "letters, digits, . _ - (at most 64)") })).mutation(({ ctx, input }) => {
    const now = ctx.hub.clock();
    if (ctx.hub.store.apiTokens().some((t) => t.name === input.name)) {
      ctx.hub.store.audit({ t: now, actor: ctx.principal.user, action: "token.create", input, outcome: "refused", detail: "name taken" });
      throw new TRPCError({ code: "CONFLICT", message: `a token named ${input.name} exists: revoke it first or pick another name` });
    }
    const t = newApiToken();
    const stored = ctx.hub.store.createApiToken({ name: input.name, hash: t.hash, prefix: t.prefix, createdBy: ctx.principal.user, createdAt: now });
    ctx.hub.store.audit({ t: now, actor: ctx.principal.user, action: "token.create", input, outcome: "ok", detail: `prefix ${t.prefix}` });
    return { ...stored, token: t.token };
  }),

  /** revokeToken deletes a read-API token at once; audited. */
  revokeToken: adminProcedure.input(z.object({ id: z.number().int().positive() })).mutation(({ ctx, input }) => {
    const ok = ctx.hub.store.deleteApiToken(input.id);
    ctx.hub.store.audit({ t: ctx.hub.clock(), actor: ctx.principal.user, action: "token.revoke", input, outcome: ok ? "ok" : "refused", detail: ok ? "revoked" : "no such token" });
    if (!ok) throw new TRPCError({ code: "NOT_FOUND", message: `no token ${input.id}` });
    return { ok };
  }),

  /** audit: the newest entries of the audit log (admins only). */
  audit: adminProcedure.input(z.object({ limit: z.number().int().min(1).max(1000).default(200) }).optional()).query(({ ctx, input }) => ctx.hub.store.auditLog(input?.limit ?? 200)),
} satisfies TRPCRouterRecord;
