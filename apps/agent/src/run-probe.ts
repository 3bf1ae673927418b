import { parseArgs } from "node:util";
import { PcapSource } from "@whohas/capture";
import { normalizeIpKey, splitIpKey } from "@whohas/core";
import { egressFor, parseDuration, runAnnounce, runProbe } from "./commands.js";

export const PROBE_HELP = `Usage: whohas probe IP[@VLAN] [--duration 60s] [--interval 1s] [--interface IF]

Asks who has IP, an IPv4 or IPv6 address, every interval and counts every MAC that answers each request: by
broadcast ARP for IPv4, by a Neighbor Solicitation to the address's solicited-node multicast group
(ff02::1:ffXX:XXXX) for IPv6, counting the solicited Neighbor Advertisements. The one-minute check operators do by
hand with arping (or ndisc6), but asking the whole link every time (arping turns to unicast after the first reply and
hides the other responders). Prints one line per request and a summary. Needs root, or CAP_NET_RAW.

Options:
  --duration D     how long to probe (default 60s)
  --interval D     time between requests (default 1s)
  --interface IF   send from IF (default: the interface with an address in IP's subnet)

IP@VLAN (192.0.2.10@30, 2001:db8::10@30) asks inside VLAN 30, from this node's VLAN device with that id (as listed in
/proc/net/vlan/config), as whohas shows an address seen in a VLAN.

Exit status: 1 when any request was answered by two or more MACs, 0 otherwise, 2 on bad usage.
`;

export const ANNOUNCE_HELP = `Usage: whohas announce IP[@VLAN] --force [--duration 5s] [--interface IF]

Sends MetalLB's gratuitous announcements for IP, an IPv4 or IPv6 address, from this node: for IPv4 an ARP request
and reply with THA ff:ff:ff:ff:ff:ff; for IPv6 MetalLB's unsolicited Neighbor Advertisement burst (S=0, O=1, to
ff02::1) from the interface's link-local address (an interface without one is refused). They go out every 1.1 s
until 5 s after the last of --duration: what the speaker does when it takes an IP over. Use it on the node that
should own IP, to refresh switches and clients holding a stale MAC.
Without the hub whohas cannot check that this node owns IP, so --force is required: announcing from another node
creates exactly the conflict whohas looks for. From the dashboard, "Force re-announce" runs this on the owner.

Options:
  --duration D     how long to keep re-setting the IP (default 5s)
  --interface IF   send from IF (default: the interface with an address in IP's subnet)
  --force          announce even though ownership cannot be checked here

IP@VLAN announces inside that VLAN, from this node's VLAN device with that id.
`;

interface Out {
  write(s: string): unknown;
}

/** runProbeCli is `whohas probe`. */
export async function runProbeCli(argv: string[], out: Out = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      duration: { type: "string" },
      interval: { type: "string" },
      interface: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
  });
  if (values.help) return (void out.write(PROBE_HELP), 0);
  const key = normalizeIpKey(positionals[0] ?? "");
  if (key === null) throw new Error(`probe: name the IP to probe (IP, or IP@VLAN)\n\n${PROBE_HELP}`);
  const { ip, vlan } = splitIpKey(key);
  const durationMs = parseDuration(values.duration ?? "60s");
  const intervalMs = parseDuration(values.interval ?? "1s");
  const egress = egressFor(ip, values.interface, vlan);
  out.write(`probing ${ip} from ${egress.iface} (${egress.address}, ${egress.mac}) every ${intervalMs} ms for ${durationMs} ms\n`);
  const ac = new AbortController();
  process.once("SIGINT", () => ac.abort());
  const summary = await runProbe({
    ip,
    durationMs,
    intervalMs,
    egress,
    open: (iface) => new PcapSource(iface, "arp or icmp6"),
    signal: ac.signal,
    onResult: (r) => {
      const macs = r.replies.map((x) => `${x.mac} (${x.latencyMs.toFixed(2)} ms)`).join(", ");
      out.write(
        `#${String(r.seq).padStart(3)}  ${r.replies.length} ${r.replies.length === 1 ? "reply  " : "replies"}  ${macs === "" ? "-" : macs}${r.replies.length > 1 ? "  <-- SEVERAL" : ""}\n`,
      );
    },
  });
  out.write(`\n${summary.requests} requests, ${summary.unanswered} unanswered, ${summary.multiAnswered} answered by more than one MAC\n`);
  for (const m of summary.macs) out.write(`  ${m.mac}  ${m.replies} replies, first ${m.first} times\n`);
  return summary.multiAnswered > 0 ? 1 : 0;
}

/** runAnnounceCli is `whohas announce`. */
export async function runAnnounceCli(argv: string[], out: Out = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      duration: { type: "string" },
      interface: { type: "string" },
      force: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
  });
  if (values.help) return (void out.write(ANNOUNCE_HELP), 0);
  const key = normalizeIpKey(positionals[0] ?? "");
  if (key === null) throw new Error(`announce: name the IP to announce (IP, or IP@VLAN)\n\n${ANNOUNCE_HELP}`);
  const { ip, vlan } = splitIpKey(key);
  if (values.force !== true)
    throw new Error(
      `announce: refused without --force: this node's ownership of ${ip} cannot be checked without the hub, and announcing from a node that does not own it creates a second responder`,
    );
  const egress = egressFor(ip, values.interface, vlan);
  const bursts = await runAnnounce({
    ip,
    durationMs: parseDuration(values.duration ?? "5s"),
    egress,
    open: (iface) => new PcapSource(iface, "arp or icmp6"),
  });
  out.write(`announced ${ip} from ${egress.iface} (${egress.mac}): ${bursts} bursts\n`);
  return 0;
}
