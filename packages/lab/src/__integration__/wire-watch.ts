import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/**
 * A WireFrame is one ARP or NDP frame as tshark decodes it: an independent reading of the wire, with no whohas code
 * between the bytes and the test.
 */
export interface WireFrame {
  /** Capture time, in milliseconds since the epoch (the kernel's timestamp, on this host's clock). */
  readonly time: number;
  readonly src: string;
  readonly dst: string;
  /** The outer 802.1Q VLAN ID, or null when untagged. */
  readonly vlan: number | null;
  readonly kind: "arp-request" | "arp-reply" | "ns" | "na" | "other";
  /** The IP asked for (ARP target, NS target) or answered for (ARP sender, NA target). */
  readonly ip: string;
  /** The other end: the asker's IP for requests and NS, the IP answered to for replies and NA. */
  readonly peer: string;
  /** The IPv6 source and destination addresses (empty for ARP). */
  readonly ipSrc: string;
  readonly ipDst: string;
  /** An NA's Solicited and Override flags; false for everything else. */
  readonly solicited: boolean;
  readonly override: boolean;
}

/** A WireWatch is tshark running in a namespace; `frames` grows as it decodes. */
export interface WireWatch {
  readonly frames: readonly WireFrame[];
  /** nth resolves with the index of the n-th frame from index `from` on that `match` accepts, once tshark has it. */
  nth(from: number, match: (f: WireFrame) => boolean, n: number): Promise<number>;
  stop(): Promise<void>;
}

/** WIRE_FILTER passes ARP and ICMPv6 with or without one tag, in both directions (vlan-capture.test.ts). */
const WIRE_FILTER = "arp or icmp6 or (vlan and (arp or icmp6))";
const FIELDS = [
  "frame.time_epoch",
  "eth.src",
  "eth.dst",
  "vlan.id",
  "arp.opcode",
  "arp.src.proto_ipv4",
  "arp.dst.proto_ipv4",
  "icmpv6.type",
  "icmpv6.nd.ns.target_address",
  "icmpv6.nd.na.target_address",
  "ipv6.src",
  "ipv6.dst",
  "icmpv6.nd.na.flag.s",
  "icmpv6.nd.na.flag.o",
] as const;
/** Each wait for frames the lab sends every few hundred milliseconds; this only turns a hang into a message. */
const NTH_WAIT_MS = 20_000;

function parse(line: string): WireFrame {
  const values = line.split("\t");
  const field = (name: (typeof FIELDS)[number]): string => values[FIELDS.indexOf(name)] ?? "";
  const vlan = field("vlan.id");
  const flag = (name: "icmpv6.nd.na.flag.s" | "icmpv6.nd.na.flag.o") => field(name) === "1" || field(name) === "True";
  const base = {
    time: Number(field("frame.time_epoch")) * 1000,
    src: field("eth.src"),
    dst: field("eth.dst"),
    vlan: vlan === "" ? null : Number(vlan),
    ipSrc: field("ipv6.src"),
    ipDst: field("ipv6.dst"),
    solicited: flag("icmpv6.nd.na.flag.s"),
    override: flag("icmpv6.nd.na.flag.o"),
  };
  const op = field("arp.opcode");
  const type = field("icmpv6.type");
  if (op === "1") return { ...base, kind: "arp-request", ip: field("arp.dst.proto_ipv4"), peer: field("arp.src.proto_ipv4") };
  if (op === "2") return { ...base, kind: "arp-reply", ip: field("arp.src.proto_ipv4"), peer: field("arp.dst.proto_ipv4") };
  if (type === "135") return { ...base, kind: "ns", ip: field("icmpv6.nd.ns.target_address"), peer: field("ipv6.src") };
  if (type === "136") return { ...base, kind: "na", ip: field("icmpv6.nd.na.target_address"), peer: field("ipv6.dst") };
  return { ...base, kind: "other", ip: "", peer: "" };
}

/** watchWire starts tshark on eth0 in `ns` and resolves once it captures. */
export async function watchWire(ns: string): Promise<WireWatch> {
  const args = ["netns", "exec", ns, "tshark", "-i", "eth0", "-n", "-l", "-f", WIRE_FILTER, "-T", "fields", "-E", "occurrence=f"];
  const child = spawn("ip", [...args, ...FIELDS.flatMap((f) => ["-e", f])], { stdio: ["ignore", "pipe", "pipe"] });
  const frames: WireFrame[] = [];
  const waiters = new Set<() => void>();
  createInterface({ input: child.stdout }).on("line", (line) => {
    frames.push(parse(line));
    for (const w of waiters) w();
  });
  let stderr = "";
  await new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`tshark exited (${code}) before capturing: ${stderr.trim()}`)));
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes("Capturing on")) resolve();
    });
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return {
    frames,
    nth: (from, match, n) =>
      new Promise<number>((resolve, reject) => {
        const check = () => {
          let seen = 0;
          for (let i = from; i < frames.length; i++) {
            const f = frames[i];
            if (f !== undefined && match(f) && ++seen === n) {
              waiters.delete(check);
              clearTimeout(timer);
              resolve(i);
              return;
            }
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`tshark saw fewer than ${n} matching frames in ${NTH_WAIT_MS} ms`));
        }, NTH_WAIT_MS);
        waiters.add(check);
        check();
      }),
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}
