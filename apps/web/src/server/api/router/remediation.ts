import { TRPCError, tracked, type TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import type { Remediation } from "../../remediation/remediation.js";
import { RemediationRefused } from "../../remediation/refusals.js";
import { operatorProcedure, viewerProcedure, type Context } from "../trpc.js";

function remediationOf(ctx: Context): Remediation {
  if (ctx.remediation === undefined)
    throw new TRPCError({
      code: "PRECONDITION_FAILED",
      message: "no Kubernetes access: the strictARP fix needs the hub to reach the cluster (kubernetes.kubeconfig, or run in a pod)",
    });
  return ctx.remediation;
}

/** guarded turns a refusal into its tRPC code (409, 403, 412) with the message, and audits it. */
async function guarded<T>(
  ctx: Context & { principal: { user: string } },
  action: string,
  input: unknown,
  fn: () => T | Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    await ctx.audit.append({
      t: ctx.hub.clock(),
      actor: ctx.principal.user,
      action,
      input,
      outcome: "refused",
      detail: (e as Error).message,
    });
    if (e instanceof RemediationRefused) throw new TRPCError({ code: e.code, message: e.message });
    if (e instanceof TRPCError) throw e;
    throw new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: (e as Error).message });
  }
}

export const remediationRouter = {
  /** preview: kube-proxy's config.conf now and patched, the nodes it changes, warnings, and the backups to roll back to. */
  preview: operatorProcedure.query(({ ctx }) => guarded(ctx, "remediation.preview", {}, () => remediationOf(ctx).preview())),

  /** apply starts the fix with the resourceVersion of the preview (409 when it changed; never overwrites). */
  apply: operatorProcedure
    .input(z.object({ resourceVersion: z.string().min(1).max(64), dryRun: z.boolean().default(false) }))
    .mutation(({ ctx, input }) =>
      guarded(ctx, "remediation.apply", input, () => ({
        id: remediationOf(ctx).apply(input.resourceVersion, ctx.principal.user, input.dryRun).id,
      })),
    ),

  /** rollback restores a backup's text byte for byte and restarts kube-proxy. */
  rollback: operatorProcedure.input(z.object({ backup: z.string().min(1).max(253) })).mutation(({ ctx, input }) =>
    guarded(ctx, "remediation.rollback", input, async () => ({
      id: (await remediationOf(ctx).rollback(input.backup, ctx.principal.user)).id,
    })),
  ),

  /** live pushes the running (or last) run's steps as they change. */
  live: viewerProcedure.input(z.object({ lastEventId: z.string().nullish() }).optional()).subscription(async function* ({ ctx, signal }) {
    const r = ctx.remediation;
    if (r === undefined) return;
    const ac = new AbortController();
    signal?.addEventListener("abort", () => ac.abort(), { once: true });
    let sent = -1;
    while (!ac.signal.aborted) {
      const changed = r.changed(ac.signal);
      const run = r.current();
      if (run === null) yield tracked("0", null);
      else if (run.version !== sent) {
        sent = run.version;
        yield tracked(`${run.id}:${run.version}`, structuredClone(run));
      }
      await changed;
    }
  }),
} satisfies TRPCRouterRecord;
