#!/usr/bin/env node
// The lab's client: asks for every VIP by broadcast ARP at a fixed interval, as a router, firewall or HAProxy
// re-ARPing would. Run inside the client namespace: requester.js IFACE SENDER_IP INTERVAL_MS VIP...
import { readFileSync } from "node:fs";
import { newArpRequest } from "@whohas/core";
import { PcapSource } from "@whohas/agent";

function main(argv: string[]): void {
  const [iface, senderIp, intervalText, ...vips] = argv;
  const interval = Number(intervalText);
  if (iface === undefined || senderIp === undefined || !(interval > 0) || vips.length === 0) {
    process.stderr.write("usage: requester IFACE SENDER_IP INTERVAL_MS VIP...\n");
    process.exit(2);
  }
  const mac = readFileSync(`/sys/class/net/${iface}/address`, "utf8").trim();
  const frames = vips.map((vip) => newArpRequest(mac, senderIp, vip));
  // Sending needs an open handle; the filter matches nothing so the capture side stays idle.
  const src = new PcapSource(iface, "ether proto 0x88b5");
  src.start(() => undefined);
  const send = () => {
    for (const f of frames) src.send(f);
  };
  send();
  const timer = setInterval(send, interval);
  const stop = () => {
    clearInterval(timer);
    src.close();
    process.exit(0);
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main(process.argv.slice(2));
