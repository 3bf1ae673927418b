// Library entry of @whohas/agent, for the lab and tests.
export { Agent, handleFrame, FLUSH_MS } from "./agent.js";
export { HubLink, backoffDelay } from "./hub-link.js";
export { PcapSource, CAPTURE_FILTER, type PacketSource, type KernelStats } from "./capture/pcap-source.js";
export { listInterfaces, selectCaptureInterfaces, DEFAULT_EXCLUDE, type NetInterface } from "./capture/interfaces.js";
export { jsonLogger, type Logger } from "@whohas/core";
