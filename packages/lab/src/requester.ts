#!/usr/bin/env node
// The lab's client: asks for every target at a fixed interval, as a router, firewall or HAProxy re-ARPing would: a
// broadcast ARP request for an IPv4 address, a Neighbor Solicitation to the solicited-node group for an IPv6 one (from
// the --ip6 address), inside an 802.1Q tag for a target written IP@VLAN (trunk.ts). Run inside the client namespace:
// requester.js [--count=N] [--ip6=ADDR] IFACE SENDER_IP INTERVAL_MS TARGET...
// With --count=N it sends N rounds, prints "sent N" and exits (fault tests count what they sent).
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { PcapSource } from "@whohas/capture";
import { parseVlanIp, requestFor } from "./trunk.js";

const USAGE = "usage: requester [--count=N] [--ip6=ADDR] IFACE SENDER_IP INTERVAL_MS TARGET... (TARGET: IP or IP@VLAN)\n";

function main(args: string[]): void {
  const { values, positionals } = parseArgs({
    args,
    options: { count: { type: "string" }, ip6: { type: "string" } },
    allowPositionals: true,
  });
  const [iface, senderIp, intervalText, ...targets] = positionals;
  const interval = Number(intervalText);
  const limit = Number(values.count ?? 0);
  if (iface === undefined || senderIp === undefined || !(interval > 0) || targets.length === 0 || !(limit >= 0)) {
    process.stderr.write(USAGE);
    process.exit(2);
  }
  const mac = readFileSync(`/sys/class/net/${iface}/address`, "utf8").trim();
  let frames: Uint8Array[];
  try {
    frames = targets.map((t) => requestFor({ mac, ip: senderIp, ip6: values.ip6 ?? null }, parseVlanIp(t)));
  } catch (e) {
    process.stderr.write(`requester: ${e instanceof Error ? e.message : String(e)}\n${USAGE}`);
    process.exit(2);
  }
  // Sending needs an open handle; the filter matches nothing so the capture side stays idle.
  const src = new PcapSource(iface, "ether proto 0x88b5");
  src.start(() => undefined);
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
  // Whoever started it waits for this: the first requests are on the wire.
  process.stdout.write("asking\n");
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main(process.argv.slice(2));
