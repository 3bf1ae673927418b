// Library entry of @whohas/capture: the agent's captures, and the raw senders of the lab and the benchmarks.
export { PcapSource, CAPTURE_FILTER, type FrameHandler, type PacketSource, type KernelStats } from "./pcap-source.js";
