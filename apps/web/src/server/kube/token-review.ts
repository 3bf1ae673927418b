import { createHash } from "node:crypto";
import { AuthenticationV1Api, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { Review } from "../gateway/credentials.js";

/** AUDIENCE: agents' projected ServiceAccount tokens are issued for this audience (deploy/: serviceAccountToken). */
export const AUDIENCE = "whohas";
/** CACHE_MS: a token the API server vouched for is trusted this long before it is reviewed again. */
const CACHE_MS = 5 * 60_000;
const MAX_CACHED = 10_000;

/**
 * The user info a TokenReview gives for a token bound to a Pod (kube-apiserver's serviceaccount package): the Pod
 * always, its node since Kubernetes 1.30 (ServiceAccountTokenPodNodeInfo, on by default from then).
 */
export const EXTRA_NODE_NAME = "authentication.kubernetes.io/node-name";
export const EXTRA_POD_NAME = "authentication.kubernetes.io/pod-name";

/**
 * tokenReviewer validates an agent's ServiceAccount token with a TokenReview (audience "whohas"): it must
 * authenticate as `serviceAccount` ("namespace:name") and be bound to a Pod, whose node is the only node the agent
 * may speak for. The node comes from the review itself, or, on API servers older than 1.30, from the bound Pod
 * (get pods in the agents' namespace). Answers are cached by the token's hash for a few minutes.
 */
export function tokenReviewer(kc: KubeConfig, serviceAccount: string, clock: () => number = Date.now): (token: string) => Promise<Review> {
  const auth = kc.makeApiClient(AuthenticationV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const [ns = "", name = ""] = serviceAccount.split(":");
  const want = `system:serviceaccount:${ns}:${name}`;
  const cache = new Map<string, { until: number; node: string }>();
  return async (token) => {
    const key = createHash("sha256").update(token).digest("hex");
    const hit = cache.get(key);
    if (hit !== undefined && hit.until > clock()) return { ok: true, node: hit.node };
    const r = await auth.createTokenReview({ body: { spec: { token, audiences: [AUDIENCE] } } });
    const st = r.status;
    if (st?.authenticated !== true) return { ok: false, why: `TokenReview: ${st?.error ?? "not authenticated"}` };
    if (!(st.audiences ?? []).includes(AUDIENCE)) return { ok: false, why: `TokenReview: the token is not for audience ${AUDIENCE}` };
    if (st.user?.username !== want)
      return { ok: false, why: `TokenReview: ${st.user?.username ?? "?"} is not the agents' ServiceAccount ${want}` };
    const extra = st.user.extra ?? {};
    let node = extra[EXTRA_NODE_NAME]?.[0] ?? null;
    const pod = extra[EXTRA_POD_NAME]?.[0] ?? null;
    if (node === null && pod !== null) {
      try {
        node = (await core.readNamespacedPod({ namespace: ns, name: pod })).spec?.nodeName ?? null;
      } catch (e) {
        return {
          ok: false,
          why: `the token is bound to Pod ${ns}/${pod}, which cannot be read to learn its node (${(e as { code?: number }).code ?? (e as Error).message}): grant get on pods in ${ns}`,
        };
      }
    }
    if (node === null)
      return {
        ok: false,
        why: "the token is not bound to a Pod on a node: mount a projected serviceAccountToken (audience whohas) in the agent's Pod",
      };
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(key, { until: clock() + CACHE_MS, node });
    return { ok: true, node };
  };
}
