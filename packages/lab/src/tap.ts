#!/usr/bin/env node
// The lab's tap: prints, in hex, one per line, every frame a libpcap capture delivers on IFACE with FILTER, through
// the same PcapSource the agent captures with; "ready" first, once the capture is open. Tests read what libpcap hands
// over byte for byte (a VLAN tag, or its absence). Run inside a namespace: tap.js IFACE FILTER
import { PcapSource } from "@whohas/capture";

function main(argv: string[]): void {
  const [iface, filter] = argv;
  if (iface === undefined || filter === undefined) {
    process.stderr.write("usage: tap IFACE FILTER\n");
    process.exit(2);
  }
  const src = new PcapSource(iface, filter);
  src.start((frame) => process.stdout.write(`${Buffer.from(frame).toString("hex")}\n`));
  process.stdout.write("ready\n");
  const stop = () => {
    src.close();
    process.exit(0);
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main(process.argv.slice(2));
