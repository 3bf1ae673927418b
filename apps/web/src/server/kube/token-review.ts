import { createHash } from "node:crypto";
import { AuthenticationV1Api, type KubeConfig } from "@kubernetes/client-node";

/** AUDIENCE: agents' projected ServiceAccount tokens are issued for this audience (deploy/: serviceAccountToken). */
export const AUDIENCE = "whohas";
/** CACHE_MS: a token the API server vouched for is trusted this long before it is reviewed again. */
const CACHE_MS = 5 * 60_000;
const MAX_CACHED = 10_000;

/**
 * tokenReviewer validates an agent's ServiceAccount token with a TokenReview (audience "whohas"): it must
 * authenticate as `serviceAccount` ("namespace:name"). Answers are cached by the token's hash for a few minutes.
 */
export function tokenReviewer(kc: KubeConfig, serviceAccount: string, clock: () => number = Date.now): (token: string) => Promise<{ ok: boolean; why: string }> {
  const api = kc.makeApiClient(AuthenticationV1Api);
  const [ns, name] = serviceAccount.split(":");
  const want = `system:serviceaccount:${ns ?? ""}:${name ?? ""}`;
  const cache = new Map<string, number>();
  return async (token) => {
    const key = createHash("sha256").update(token).digest("hex");
    const until = cache.get(key);
    if (until !== undefined && until > clock()) return { ok: true, why: "cached" };
    const r = await api.createTokenReview({ body: { spec: { token, audiences: [AUDIENCE] } } });
    const st = r.status;
    if (st?.authenticated !== true) return { ok: false, why: `TokenReview: ${st?.error ?? "not authenticated"}` };
    if (!(st.audiences ?? []).includes(AUDIENCE)) return { ok: false, why: `TokenReview: the token is not for audience ${AUDIENCE}` };
    if (st.user?.username !== want) return { ok: false, why: `TokenReview: ${st.user?.username ?? "?"} is not the agents' ServiceAccount ${want}` };
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(key, clock() + CACHE_MS);
    return { ok: true, why: "TokenReview" };
  };
}
