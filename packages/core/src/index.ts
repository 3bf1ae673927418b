// @whohas/core: the pure logic shared by the agent, the hub and the lab. No sockets, files, timers or clocks here.
export * from "./packet/decode.js";
export * from "./packet/addr.js";
export * from "./packet/ethernet.js";
export * from "./packet/link.js";
export * from "./packet/arp.js";
export * from "./packet/ipv6.js";
export * from "./packet/ndp.js";
export * from "./packet/frame.js";
export * from "./packet/classify.js";
export * from "./aggregate.js";
export * from "./analysis/ip-table.js";
export * from "./wire.js";
export * from "./log.js";
export * from "./capture/pcap.js";
export * from "./analysis/findings.js";
export * from "./analysis/analyzer.js";
export * from "./analysis/capture-analysis.js";
