import { ApiException } from "@kubernetes/client-node";

/** A RemediationRefused is a step that cannot go on, with what to do about it; nothing after it ran. */
export class RemediationRefused extends Error {
  constructor(
    message: string,
    readonly code: "CONFLICT" | "FORBIDDEN" | "PRECONDITION_FAILED",
  ) {
    super(message);
  }
}

/** kubeMessage turns an API error into what a person can act on. */
export function kubeMessage(e: unknown, what: string): RemediationRefused | Error {
  if (e instanceof ApiException) {
    let msg = "";
    try {
      msg = (JSON.parse(String(e.body)) as { message?: string }).message ?? "";
    } catch {
      msg = String(e.body).slice(0, 200);
    }
    if (e.code === 403)
      return new RemediationRefused(
        `${what}: forbidden (${msg}). Grant whohas's ServiceAccount this permission (deploy/ RBAC), then try again.`,
        "FORBIDDEN",
      );
    if (e.code === 409)
      return new RemediationRefused(
        `${what}: kube-proxy's ConfigMap changed since the preview (${msg}). Nothing was overwritten: preview again.`,
        "CONFLICT",
      );
    if (e.code === 404) return new RemediationRefused(`${what}: not found (${msg}).`, "PRECONDITION_FAILED");
    return new Error(`${what}: HTTP ${e.code} ${msg}`);
  }
  return new Error(`${what}: ${(e as Error).message}`);
}
