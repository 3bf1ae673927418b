/**
 * 1. CONTEXT
 * Every procedure sees the one Hub of this process, the dashboard's actions, and who is asking.
 * @see https://trpc.io/docs/server/context
 */
import { TRPCError, initTRPC } from "@trpc/server";
import type { Actions } from "../actions/actions.js";
import type { AnnounceBatches } from "../actions/announce-batch.js";
import type { BackgroundProbe } from "../actions/background-probe.js";
import type { AlertAdmin } from "../alerts/admin.js";
import type { Principal } from "../auth/auth.js";
import { allows, type Role } from "../auth/roles.js";
import type { Hub } from "../hub/hub.js";
import type { Remediation } from "../remediation/remediation.js";
import type { Settings } from "../settings.js";
import type { AuditLog } from "../store/audit.js";
import type { StreamSlots } from "../limits.js";

export interface Context {
  readonly hub: Hub;
  /** Absent in tests and tools that only read. */
  readonly actions?: Actions;
  /** Re-announcements of every IP of a Service or pool (absent with the actions). */
  readonly announcements?: AnnounceBatches;
  /** The hub's probe of every LoadBalancer IP (absent: turned off). */
  readonly backgroundProbe?: BackgroundProbe;
  readonly settings?: Settings;
  /** Alerting as Settings administers it (receivers, deliveries, test sends). */
  readonly alerts?: AlertAdmin;
  /** Where refused actions are recorded when the service that would have run them is not there to do it. */
  readonly audit: AuditLog;
  /** The strictARP fix (absent without Kubernetes access). */
  readonly remediation?: Remediation;
  /** Who is asking (null: nobody signed in); the HTTP handler fills it from the request. */
  readonly principal: Principal | null;
  /** Whether the request carried the principal's CSRF token (mutations need it). */
  readonly csrfOk: boolean;
  /** The live streams open (absent: unbounded, in tests). */
  readonly streams?: StreamSlots;
}

/**
 * 2. INITIALIZATION
 * The only initTRPC of the app. Plain JSON: every value the API returns is JSON-safe (times are epoch ms). Errors
 * never carry a stack trace to the browser, whatever NODE_ENV says: it names the hub's files and packages.
 */
const t = initTRPC.context<Context>().create({ isDev: false });

/** 3. ROUTER AND PROCEDURES */
export const createTRPCRouter = t.router;
export const createCallerFactory = t.createCallerFactory;

/**
 * roleProcedure needs a principal of at least `role`; a mutation also needs the CSRF token of the principal's
 * sign-in (a page of another site can make the browser send the cookie, never this header).
 */
function roleProcedure(role: Role) {
  return t.procedure.use(async ({ ctx, type, path, next }) => {
    const p = ctx.principal;
    if (p === null) throw new TRPCError({ code: "UNAUTHORIZED", message: "not signed in: open /login" });
    if (!allows(p.role, role)) {
      const message = `${p.user} is a ${p.role}; this needs the ${role} role (ask an admin, or map your group in auth.proxy.groupRoles)`;
      // An attempt to change something without the role is itself worth knowing: it is audited like a refused action.
      if (type === "mutation")
        await ctx.audit.append({ t: Date.now(), actor: p.user, action: path, input: null, outcome: "refused", detail: message });
      throw new TRPCError({ code: "FORBIDDEN", message });
    }
    if (type === "mutation" && !ctx.csrfOk)
      throw new TRPCError({ code: "FORBIDDEN", message: "missing or stale CSRF token: reload the page and try again" });
    return next({ ctx: { ...ctx, principal: p } });
  });
}

/** viewerProcedure: anyone signed in (every read). */
export const viewerProcedure = roleProcedure("viewer");
/** operatorProcedure: acts on the network (re-announce, probe, acknowledge, remediation). */
export const operatorProcedure = roleProcedure("operator");
/** adminProcedure: changes whohas itself (settings, tokens) and reads the audit log. */
export const adminProcedure = roleProcedure("admin");
