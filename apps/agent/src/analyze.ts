import { closeSync, openSync, readSync } from "node:fs";
import { parseArgs } from "node:util";
import { CaptureAnalysis, analyzeExitCode, isMac, normalizeIpKey, toJson, toTable } from "@whohas/core/analyze";

export const ANALYZE_HELP = `Usage: whohas analyze [--json] [--owner IP=MAC]... FILE... | -

Reads pcap or pcapng captures (Ethernet, 802.1Q VLANs, or Linux cooked from 'tcpdump -i any') and reports, per
address and VLAN (the same address on two VLANs is two reports, judged apart), which MACs answered ARP / NDP for
it, its handovers (the IP moved from one MAC to another: when, the gap, the requests left unanswered, announced or
not) and what is wrong: multi-responder (two MACs answered one request), split-brain, no-responder, changed,
flip-flop, ethernet-mismatch, and with --owner wrong-owner and stale-announcer. The verdicts are the hub's: the
same judge, in capture time. Take the capture on a client or router that talks to the LoadBalancer IPs, with a
filter that also keeps frames inside a VLAN tag (a plain 'arp or icmp6' misses the tagged frames the host sends):

  tcpdump -i eth0 -w cap.pcap 'arp or icmp6 or (vlan and (arp or icmp6))'     then     whohas analyze cap.pcap

Options:
  --json           machine-readable output: each IP with its "vlan" (null: untagged) and "family" (4 or 6); times
                   in RFC 3339, handovers' "at" in epoch ms, as the read API
  --owner IP=MAC   the MAC that should answer for IP (repeatable): other answers are 'wrong-owner'; IP@VLAN=MAC
                   names it in one VLAN only
  -                read the capture from standard input (tcpdump -w - ... | whohas analyze -)
  -h, --help       this text

Exit status: 1 when an IP has several responders (multi-responder or split-brain), 2 when an input could not be
used (what came before a damaged part is still reported), 0 otherwise.
`;

/** CHUNK is how much of a file is read at once: large enough that the per-read cost disappears. */
const CHUNK = 4 * 1024 * 1024;

function feedFd(an: CaptureAnalysis, fd: number): void {
  const buf = Buffer.allocUnsafe(CHUNK);
  for (;;) {
    const n = readSync(fd, buf, 0, CHUNK, null);
    if (n === 0) break;
    if (!an.push(buf.subarray(0, n))) return;
  }
  an.endFile();
}

async function feedStdin(an: CaptureAnalysis, stdin: AsyncIterable<Uint8Array>): Promise<void> {
  for await (const chunk of stdin) {
    if (!an.push(chunk)) return;
  }
  an.endFile();
}

function parseOwners(list: string[]): Map<string, string[]> {
  const owners = new Map<string, string[]>();
  for (const item of list) {
    const [text, mac] = item.split("=");
    const ip = normalizeIpKey(text ?? "");
    if (ip === null || mac === undefined || !isMac(mac))
      throw new Error(`--owner ${item}: expected IP=MAC or IP@VLAN=MAC, e.g. 192.0.2.10=02:00:5e:00:00:0a`);
    owners.set(ip, [...(owners.get(ip) ?? []), mac.toLowerCase()]);
  }
  return owners;
}

/** Output streams of a command, injected so tests can read them. */
export interface Io {
  readonly stdout: { write(s: string): unknown };
  readonly stderr: { write(s: string): unknown };
  readonly stdin: AsyncIterable<Uint8Array>;
}

const processIo: Io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin };

/** runAnalyze is `whohas analyze`: I/O only; the analysis and the rendering are core's. */
export async function runAnalyze(argv: string[], io: Io = processIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { json: { type: "boolean" }, owner: { type: "string", multiple: true }, help: { type: "boolean", short: "h" } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    io.stdout.write(ANALYZE_HELP);
    return 0;
  }
  if (positionals.length === 0) {
    io.stderr.write(`whohas analyze: name a capture file, or - for standard input\n\n${ANALYZE_HELP}`);
    return 2;
  }
  const an = new CaptureAnalysis({ expectedOwners: parseOwners(values.owner ?? []) });
  for (const file of positionals) {
    an.startFile(file === "-" ? "<stdin>" : file);
    if (file === "-") {
      await feedStdin(an, io.stdin);
      continue;
    }
    let fd: number;
    try {
      fd = openSync(file, "r");
    } catch (e) {
      an.fail(`cannot open: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      continue;
    }
    try {
      feedFd(an, fd);
    } catch (e) {
      an.fail(`read failed: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    } finally {
      closeSync(fd);
    }
  }
  const summary = an.summary();
  io.stdout.write(values.json ? JSON.stringify(toJson(summary), null, 2) + "\n" : toTable(summary));
  for (const e of summary.errors) io.stderr.write(`whohas analyze: ${e.file}: ${e.message}\n`);
  return analyzeExitCode(summary);
}
