#!/usr/bin/env node
// The lab's bad wire: sends COUNT malformed ARP frames by broadcast, cycling through truncated packets, impossible
// length fields and unknown operations, RATE frames a second. Run inside the client namespace:
// flood.js IFACE COUNT RATE; prints what it sent per kind as JSON.
import { readFileSync } from "node:fs";
import { PcapSource } from "@whohas/capture";
import { newArpRequest } from "@whohas/core";

function main(argv: string[]): void {
  const [iface, countText, rateText] = argv;
  const count = Number(countText);
  const rate = Number(rateText);
  if (iface === undefined || !(count > 0) || !(rate > 0)) {
    process.stderr.write("usage: flood IFACE COUNT RATE\n");
    process.exit(2);
  }
  const mac = readFileSync(`/sys/class/net/${iface}/address`, "utf8").trim();
  const good = newArpRequest(mac, "192.0.2.1", "192.0.2.2");
  // Ethernet header (14 bytes), then the ARP packet at offset 14: hlen at 18, plen at 19, op at 20-21.
  const truncated = good.subarray(0, 14 + 20); // the ARP body cut before its addresses
  const badLengths = Buffer.from(good);
  badLengths[18] = 7; // a 7-byte hardware address over Ethernet
  const badOp = Buffer.from(good);
  badOp.writeUInt16BE(9, 20); // operation 9: neither request nor reply
  const kinds = [
    ["truncated", truncated],
    ["malformed", badLengths],
    ["unsupported", badOp],
  ] as const;
  const sent: Record<string, number> = { truncated: 0, malformed: 0, unsupported: 0 };
  const src = new PcapSource(iface, "ether proto 0x88b5");
  src.start(() => undefined);
  let n = 0;
  const perTick = Math.max(1, Math.round(rate / 100));
  const timer = setInterval(() => {
    for (let i = 0; i < perTick && n < count; i++, n++) {
      const [kind, frame] = kinds[n % kinds.length] ?? kinds[0];
      src.send(frame);
      sent[kind] = (sent[kind] ?? 0) + 1;
    }
    if (n >= count) {
      clearInterval(timer);
      src.close();
      process.stdout.write(`${JSON.stringify({ sent: n, ...sent })}\n`);
      process.exit(0);
    }
  }, 10);
}

main(process.argv.slice(2));
