#!/usr/bin/env node
// The lab's MetalLB speaker, one per node namespace: answers ARP requests and Neighbor Solicitations for the IPs this
// node owns from user space, with core's speaker logic (MetalLB's layer 2 responders), and sends MetalLB's gratuitous
// bursts when it takes an IP over. Which IPs it owns comes on stdin, one JSON line at a time: {"owned":["IP",...]}
// (the lab runs the election, as MetalLB's speakers do, with core's elect()); with "quiet":true it takes them over
// without the gratuitous burst (a speaker that fails to announce, for tests). Run inside a node namespace:
// speaker.js IFACE
import { readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { createInterface } from "node:readline";
import { PcapSource } from "@whohas/capture";
import { GRATUITOUS_TICK_MS, GRATUITOUS_WINDOW_MS, gratuitousFrames, speakerDecision, type SpeakerInterface } from "@whohas/core";

function main(argv: string[]): void {
  const [name] = argv;
  if (name === undefined) {
    process.stderr.write("usage: speaker IFACE (owned IPs as JSON lines on stdin)\n");
    process.exit(2);
  }
  const mac = readFileSync(`/sys/class/net/${name}/address`, "utf8").trim();
  const linkLocal = (networkInterfaces()[name] ?? []).find((a) => a.family === "IPv6" && a.address.startsWith("fe80:"))?.address ?? null;
  const iface: SpeakerInterface = { name, mac, linkLocal };
  let owned = new Set<string>();
  /** Per IP taken over, until when it is announced (MetalLB extends the window on every SetBalancer). */
  const announcing = new Map<string, number>();
  const src = new PcapSource(name, "arp or (icmp6 and ip6[40] == 135)");
  const counts = { replies: 0, dropped: 0 };
  src.start((frame) => {
    const d = speakerDecision(iface, (ip) => owned.has(ip), frame);
    if (d.kind === "reply") {
      src.send(d.frame);
      counts.replies++;
    } else counts.dropped++;
  });
  const tick = setInterval(() => {
    const now = Date.now();
    for (const [ip, until] of announcing) {
      if (now > until || !owned.has(ip)) {
        announcing.delete(ip);
        continue;
      }
      for (const f of gratuitousFrames(iface, ip)) src.send(f);
    }
  }, GRATUITOUS_TICK_MS);
  createInterface({ input: process.stdin }).on("line", (line) => {
    let next: string[];
    let quiet = false;
    try {
      const msg = JSON.parse(line) as { owned: string[]; quiet?: boolean };
      next = msg.owned;
      quiet = msg.quiet === true;
    } catch {
      process.stderr.write(`speaker: not a JSON line with "owned": ${line.slice(0, 100)}\n`);
      return;
    }
    const now = Date.now();
    for (const ip of next)
      if (!owned.has(ip) && !quiet) {
        announcing.set(ip, now + GRATUITOUS_WINDOW_MS);
        for (const f of gratuitousFrames(iface, ip)) src.send(f);
      }
    owned = new Set(next);
    process.stdout.write(`${JSON.stringify({ owned: [...owned], replies: counts.replies })}\n`);
  });
  const stop = () => {
    clearInterval(tick);
    src.close();
    process.exit(0);
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main(process.argv.slice(2));
