// Library entry of @whohas/agent: the agent loop and its hub link (captures are @whohas/capture's).
export { Agent, handleFrame, FLUSH_MS } from "./agent.js";
export { HubLink, backoffDelay } from "./hub-link.js";
export { FrameRing, type FrameRingOptions, type HeldFrame, type Selection } from "./evidence/ring.js";
export { answerEvidence } from "./evidence/answer.js";
export { listInterfaces, selectCaptureInterfaces, DEFAULT_EXCLUDE, type NetInterface } from "./capture/interfaces.js";
export { jsonLogger, type Logger } from "@whohas/core";
