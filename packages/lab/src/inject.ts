#!/usr/bin/env node
// The lab's frame injector: sends each frame given in hex once, as it is (a crafted or malformed frame a test needs on
// the wire). Run inside a namespace: inject.js IFACE HEX...
import { PcapSource } from "@whohas/capture";

function main(argv: string[]): void {
  const [iface, ...frames] = argv;
  if (iface === undefined || frames.length === 0 || frames.some((f) => !/^([0-9a-f]{2})+$/i.test(f))) {
    process.stderr.write("usage: inject IFACE HEX...\n");
    process.exit(2);
  }
  const src = new PcapSource(iface, "ether proto 0x88b5");
  src.start(() => undefined);
  for (const f of frames) src.send(Buffer.from(f, "hex"));
  src.close();
  process.stdout.write(`sent ${frames.length}\n`);
}

main(process.argv.slice(2));
