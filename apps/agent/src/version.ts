/** AGENT_VERSION is reported to the hub in every hello. */
export const AGENT_VERSION = "0.1.0";
