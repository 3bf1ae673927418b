// The WebSocket close codes of the agent wire beyond RFC 6455's: the hub closes with them, the agent reads them.

/**
 * CLOSE_NODE_TAKEN: the hub refuses a hello for a node that already has a live connection (shared token). The agent
 * logs it as a conflict: two agents claim one node name, or the old connection is dead and goes within two pings.
 */
export const CLOSE_NODE_TAKEN = 4409;
/**
 * CLOSE_WRONG_CLUSTER: the agent's --cluster names another cluster than the hub's: it was given the address of
 * another cluster's hub. The agent logs it as an error with what to check.
 */
export const CLOSE_WRONG_CLUSTER = 4412;
/** CLOSE_REPLACED: a newer connection of the same node (proved by its ServiceAccount token) took this one's place. */
export const CLOSE_REPLACED = 4000;
