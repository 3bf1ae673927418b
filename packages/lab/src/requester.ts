#!/usr/bin/env node
// The lab's client: asks for every VIP by broadcast ARP at a fixed interval, as a router, firewall or HAProxy
// re-ARPing would. Run inside the client namespace: requester.js IFACE SENDER_IP INTERVAL_MS VIP...
// With --count=N first it sends N rounds, prints "sent N" and exits (fault tests count what they sent).
import { readFileSync } from "node:fs";
import { PcapSource } from "@whohas/capture";
import { newArpRequest } from "@whohas/core";

function main(args: string[]): void {
  const counted = /^--count=(\d+)$/.exec(args[0] ?? "");
  const argv = counted === null ? args : args.slice(1);
  const [iface, senderIp, intervalText, ...vips] = argv;
  const interval = Number(intervalText);
  if (iface === undefined || senderIp === undefined || !(interval > 0) || vips.length === 0) {
    process.stderr.write("usage: requester [--count=N] IFACE SENDER_IP INTERVAL_MS VIP...\n");
    process.exit(2);
  }
  const mac = readFileSync(`/sys/class/net/${iface}/address`, "utf8").trim();
  const frames = vips.map((vip) => newArpRequest(mac, senderIp, vip));
  // Sending needs an open handle; the filter matches nothing so the capture side stays idle.
  const src = new PcapSource(iface, "ether proto 0x88b5");
  src.start(() => undefined);
  const limit = Number(counted?.[1] ?? 0);
  let rounds = 0;
  const send = () => {
    for (const f of frames) src.send(f);
    if (++rounds === limit) {
      process.stdout.write(`sent ${rounds}\n`);
      stop();
    }
  };
  const stop = () => {
    clearInterval(timer);
    src.close();
    process.exit(0);
  };
  const timer = setInterval(send, interval);
  send();
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main(process.argv.slice(2));
