#!/usr/bin/env node
// The lab's MetalLB speaker, one per node namespace: answers ARP requests and Neighbor Solicitations for the IPs this
// node owns from user space, with core's speaker logic (MetalLB's layer 2 responders), and sends MetalLB's gratuitous
// bursts when it takes an IP over. Which IPs it owns comes on stdin, one JSON line at a time: {"owned":["IP",...]}
// (the lab runs the election, as MetalLB's speakers do, with core's elect()); with "quiet":true it takes them over
// without the gratuitous burst (a speaker that fails to announce, for tests). An entry written IP@VLAN is owned on that
// VLAN only: the speaker answers requests tagged with it, in the same tag, and tags its bursts (trunk.ts); an untagged
// entry answers untagged requests only. Run inside a node namespace: speaker.js IFACE
import { readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { createInterface } from "node:readline";
import { PcapSource } from "@whohas/capture";
import { GRATUITOUS_TICK_MS, GRATUITOUS_WINDOW_MS, type SpeakerInterface } from "@whohas/core";
import { parseVlanIp, trunkDecision, trunkGratuitous, vlanIpText, type VlanIp } from "./trunk.js";

/**
 * SPEAKER_FILTER: ARP and Neighbor Solicitations, untagged or in one 802.1Q tag. Tagged frames this namespace receives
 * reach the filter with their tag already moved to metadata, so the plain part passes them; the `vlan` part keeps
 * the filter right wherever the tag stays in the bytes (vlan-capture.test.ts shows both).
 */
const NS_MATCH = "(icmp6 and ip6[40] == 135)";
const SPEAKER_FILTER = `arp or ${NS_MATCH} or (vlan and (arp or ${NS_MATCH}))`;

function main(argv: string[]): void {
  const [name] = argv;
  if (name === undefined) {
    process.stderr.write("usage: speaker IFACE (owned IPs as JSON lines on stdin)\n");
    process.exit(2);
  }
  const mac = readFileSync(`/sys/class/net/${name}/address`, "utf8").trim();
  const linkLocal = (networkInterfaces()[name] ?? []).find((a) => a.family === "IPv6" && a.address.startsWith("fe80:"))?.address ?? null;
  const iface: SpeakerInterface = { name, mac, linkLocal };
  /** What this node owns, by vlanIpText: "IP" untagged, "IP@VLAN" on a VLAN. */
  let owned = new Map<string, VlanIp>();
  /** Per entry taken over, until when it is announced (MetalLB extends the window on every SetBalancer). */
  const announcing = new Map<string, number>();
  const src = new PcapSource(name, SPEAKER_FILTER);
  const counts = { replies: 0, dropped: 0 };
  src.start((frame) => {
    const d = trunkDecision(iface, (key) => owned.has(key), frame);
    if (d.kind === "reply") {
      src.send(d.frame);
      counts.replies++;
    } else counts.dropped++;
  });
  const tick = setInterval(() => {
    const now = Date.now();
    for (const [key, until] of announcing) {
      const entry = owned.get(key);
      if (now > until || entry === undefined) {
        announcing.delete(key);
        continue;
      }
      for (const f of trunkGratuitous(iface, entry)) src.send(f);
    }
  }, GRATUITOUS_TICK_MS);
  createInterface({ input: process.stdin }).on("line", (line) => {
    let next: Map<string, VlanIp>;
    let quiet = false;
    try {
      const msg = JSON.parse(line) as { owned: string[]; quiet?: boolean };
      next = new Map(msg.owned.map((text) => parseVlanIp(text)).map((v) => [vlanIpText(v), v]));
      quiet = msg.quiet === true;
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      process.stderr.write(`speaker: not a JSON line with "owned" IPs (${why}): ${line.slice(0, 100)}\n`);
      return;
    }
    const now = Date.now();
    for (const [key, entry] of next)
      if (!owned.has(key) && !quiet) {
        announcing.set(key, now + GRATUITOUS_WINDOW_MS);
        for (const f of trunkGratuitous(iface, entry)) src.send(f);
      }
    owned = next;
    process.stdout.write(`${JSON.stringify({ owned: [...owned.keys()], replies: counts.replies })}\n`);
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
