import { randomBytes } from "node:crypto";
import type { TestApiServerOptions } from "./server.js";

/** AGENT_SA: the agents' ServiceAccount, as deploy/ names it. */
const AGENT_SA = "system:serviceaccount:whohas:whohas-agent";

/**
 * AgentTokens are the ServiceAccount tokens the test API server knows for the lab's agents: each node's agent token
 * (bound to its Pod and node, as kubelet's projected tokens are since Kubernetes 1.30), one bound to a Pod only (older
 * API servers: the hub reads the Pod for its node), one bound to nothing, one issued for another audience, one of
 * another ServiceAccount.
 */
export interface AgentTokens {
  readonly agents: ReadonlyMap<string, string>;
  readonly podOnly: { readonly token: string; readonly node: string };
  readonly unbound: string;
  readonly wrongAudience: string;
  readonly otherAccount: string;
}

/** newAgentTokens makes a fresh set of tokens for `nodes`. */
export function newAgentTokens(nodes: readonly string[]): AgentTokens {
  const newToken = () => randomBytes(32).toString("base64url");
  return {
    agents: new Map(nodes.map((n) => [n, newToken()])),
    podOnly: { token: newToken(), node: nodes[0] ?? "" },
    unbound: newToken(),
    wrongAudience: newToken(),
    otherAccount: newToken(),
  };
}

interface Review {
  user: string;
  audiences: string[];
  extra?: Record<string, string[]>;
}

/** reviewable is what TokenReview answers for each token: its user, audiences and the Pod and node it is bound to. */
export function reviewable(t: AgentTokens): NonNullable<TestApiServerOptions["serviceAccountTokens"]> {
  const pod = (node: string) => ({ "authentication.kubernetes.io/pod-name": [`whohas-agent-${node}`] });
  return new Map<string, Review>([
    ...[...t.agents].map(([node, token]): [string, Review] => [
      token,
      { user: AGENT_SA, audiences: ["whohas"], extra: { ...pod(node), "authentication.kubernetes.io/node-name": [node] } },
    ]),
    [t.podOnly.token, { user: AGENT_SA, audiences: ["whohas"], extra: pod(t.podOnly.node) }],
    [t.unbound, { user: AGENT_SA, audiences: ["whohas"] }],
    [t.wrongAudience, { user: AGENT_SA, audiences: ["https://kubernetes.default.svc"] }],
    [t.otherAccount, { user: "system:serviceaccount:default:default", audiences: ["whohas"] }],
  ]);
}
