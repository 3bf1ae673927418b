#!/usr/bin/env node
// Traffic generator for the agent benchmark, run inside a lab namespace: broadcasts ARP at a fixed rate.
// Usage: arp-flood IFACE RATE_PER_SECOND SECONDS. Prints the rate it achieved.
import { readFileSync } from "node:fs";
import { PcapSource } from "@whohas/capture";
import { ARP_OP_REPLY, encodeArpFrame, newArpRequest } from "@whohas/core";

const [iface = "eth0", rateText = "20000", secondsText = "60"] = process.argv.slice(2);
const rate = Number(rateText);
const seconds = Number(secondsText);
const mac = readFileSync(`/sys/class/net/${iface}/address`, "utf8").trim();
// A mix a busy segment shows: requests for 300 addresses nobody holds, and broadcast answers for 300 VIPs from
// 30 different MACs (so the agent aggregates many keys, not one).
const frames: Uint8Array[] = [];
for (let i = 0; i < 300; i++) {
  frames.push(newArpRequest(mac, "198.18.0.2", `198.18.1.${i % 250}`));
  const m = `02:bb:00:00:00:${(i % 30).toString(16).padStart(2, "0")}`;
  frames.push(
    encodeArpFrame({
      ethDst: "ff:ff:ff:ff:ff:ff",
      ethSrc: m,
      op: ARP_OP_REPLY,
      senderMac: m,
      senderIp: `198.18.2.${i % 250}`,
      targetMac: mac,
      targetIp: "198.18.0.2",
    }),
  );
}
const src = new PcapSource(iface, "ether proto 0x88b5");
src.start(() => undefined);
const start = process.hrtime.bigint();
let sent = 0;
const total = rate * seconds;
function pump(): void {
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  const due = Math.min(total, Math.floor(elapsed * rate));
  while (sent < due) src.send(frames[sent++ % frames.length] ?? new Uint8Array(60));
  if (sent >= total) {
    const took = Number(process.hrtime.bigint() - start) / 1e9;
    process.stdout.write(JSON.stringify({ sent, seconds: took, rate: sent / took }) + "\n");
    src.close();
    return;
  }
  setTimeout(pump, 2);
}
pump();
