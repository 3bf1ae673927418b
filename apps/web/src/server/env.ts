import { readFileSync } from "node:fs";
import { z } from "zod";

/** HubEnv is the hub's whole configuration, read from the environment here and nowhere else (STYLE 3). */
export interface HubEnv {
  readonly port: number;
  readonly host: string;
  readonly dev: boolean;
  /** Bearer token every agent must present on /agent. */
  readonly agentToken: string;
  /** Extra Unix socket for agents (used by the lab, whose agents live in other network namespaces). */
  readonly agentSocket: string | null;
  /** Kubernetes: a kubeconfig path, "in-cluster", or null for traffic-only mode. */
  readonly kubernetes: string | null;
}

const Schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default("0.0.0.0"),
  NODE_ENV: z.string().default("production"),
  WHOHAS_AGENT_TOKEN: z.string().optional(),
  WHOHAS_AGENT_TOKEN_FILE: z.string().optional(),
  WHOHAS_AGENT_SOCKET: z.string().optional(),
  WHOHAS_KUBECONFIG: z.string().optional(),
  KUBERNETES_SERVICE_HOST: z.string().optional(),
});

/** MIN_TOKEN_LEN refuses guessable agent tokens: `openssl rand -hex 32` gives 64. */
export const MIN_TOKEN_LEN = 16;

/** parseEnv validates the environment and explains, per variable, what to fix. */
export function parseEnv(env: NodeJS.ProcessEnv = process.env): HubEnv {
  const r = Schema.safeParse(env);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new Error(`${i?.path.join(".") ?? "environment"}: ${i?.message ?? "invalid"}`);
  }
  const e = r.data;
  let token = e.WHOHAS_AGENT_TOKEN;
  if (token === undefined && e.WHOHAS_AGENT_TOKEN_FILE !== undefined) {
    try {
      token = readFileSync(e.WHOHAS_AGENT_TOKEN_FILE, "utf8").trim();
    } catch (err) {
      throw new Error(`WHOHAS_AGENT_TOKEN_FILE: cannot read ${e.WHOHAS_AGENT_TOKEN_FILE}: ${(err as NodeJS.ErrnoException).code ?? ""}`);
    }
  }
  if (token === undefined) throw new Error("WHOHAS_AGENT_TOKEN or WHOHAS_AGENT_TOKEN_FILE must be set: agents authenticate with it");
  if (token.length < MIN_TOKEN_LEN) throw new Error(`the agent token must be at least ${MIN_TOKEN_LEN} characters (try: openssl rand -hex 32)`);
  return {
    port: e.PORT,
    host: e.HOST,
    dev: e.NODE_ENV === "development",
    agentToken: token,
    agentSocket: e.WHOHAS_AGENT_SOCKET ?? null,
    // A kubeconfig when given; in a pod, the ServiceAccount; "off" (or nothing at all) is traffic-only mode.
    kubernetes: e.WHOHAS_KUBECONFIG === "off" ? null : (e.WHOHAS_KUBECONFIG ?? (e.KUBERNETES_SERVICE_HOST !== undefined ? "in-cluster" : null)),
  };
}
