import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CAPTURE_FILTER } from "@whohas/capture";
import { untagFrame } from "@whohas/core";
import { createLab, type Lab } from "../lab.js";
import { INJECT, TAP } from "../hub-process.js";
import { inNs } from "../sh.js";
import { parseVlanIp, requestFor, trunkDecision } from "../trunk.js";

// What libpcap (through the agent's PcapSource) delivers on the lab's veths for ARP and NDP inside an 802.1Q tag, seen
// from a node, where the agent captures: frames that come in from the link, and frames the node sends itself (its
// speaker's answers). Measured here:
// - A received frame's tag is moved into metadata (skb_vlan_untag) before packet sockets see it: the BPF filter runs
//   on the untagged bytes, so "arp or icmp6" passes it, and libpcap puts the tag back into the bytes it delivers
//   (from PACKET_AUXDATA).
// - A frame the node sends keeps its tag in the bytes on the way out: "arp or icmp6" does not match it.
// - `vlan` compiles to a test of both the metadata and the bytes, so a filter with a vlan clause delivers both, each
//   with its tag. The agent's filter must have one (VLAN_AWARE below, or CAPTURE_FILTER).

/** VLAN_AWARE is the shortest filter that delivers ARP and ICMPv6, untagged or in one tag, in both directions. */
const VLAN_AWARE = "arp or icmp6 or (vlan and (arp or icmp6))";
/** The filter of the agent's probe and announce captures (apps/agent run-probe.ts). */
const PLAIN = "arp or icmp6";
/** Each wait for a frame the test sent; it arrives in milliseconds, this only turns a hang into a message. */
const FRAME_WAIT_MS = 15_000;

interface Tap {
  readonly lines: string[];
  seen(hex: string): Promise<void>;
  stop(): void;
}

/** startTap runs the lab's tap (PcapSource with `filter`) on eth0 in `ns` and resolves once the capture is open. */
async function startTap(ns: string, filter: string): Promise<Tap> {
  const child = spawn("ip", ["netns", "exec", ns, process.execPath, TAP, "eth0", filter], { stdio: ["ignore", "pipe", "inherit"] });
  const lines: string[] = [];
  const waiters: { hex: string; resolve: () => void }[] = [];
  const ready = new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`tap exited (${code}) before its capture was open`)));
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line === "ready") return resolve();
      lines.push(line);
      for (const w of waiters.filter((x) => x.hex === line)) w.resolve();
    });
  });
  await ready;
  return {
    lines,
    seen: (hex) =>
      new Promise<void>((resolve, reject) => {
        if (lines.includes(hex)) return resolve();
        const timer = setTimeout(
          () => reject(new Error(`the tap (${filter}) did not deliver ${hex} in ${FRAME_WAIT_MS} ms`)),
          FRAME_WAIT_MS,
        );
        waiters.push({ hex, resolve: () => (clearTimeout(timer), resolve()) });
      }),
    stop: () => void child.kill("SIGTERM"),
  };
}

const hexOf = (f: Uint8Array) => Buffer.from(f).toString("hex");

describe("what libpcap delivers for tagged ARP and NDP on the lab's veths", () => {
  let lab: Lab;

  beforeAll(async () => {
    lab = await createLab({ nodes: 1, vips: 1 });
  });
  afterAll(async () => {
    await lab.destroy();
  });

  /** The frames of one round, by name: the client's requests (received by the node), the node's answers (sent). */
  const round = () => {
    const node = lab.nodes[0];
    if (node === undefined) throw new Error("the lab has no node");
    const client = { mac: lab.client.mac, ip: lab.client.ip, ip6: "2001:2::2" };
    const iface = { name: "eth0", mac: node.mac, linkLocal: "fe80::11" };
    const asked = ["198.18.0.230@30", "2001:2::230@40", "198.18.0.231", "2001:2::231"].map(parseVlanIp);
    const requests = asked.map((t) => requestFor(client, t));
    const answers = requests.map((r) => {
      const d = trunkDecision(iface, () => true, r);
      if (d.kind !== "reply") throw new Error(`no answer to a request: ${d.reason}`);
      return d.frame;
    });
    const names = ["ARP request@30", "NS@40", "ARP request", "NS"];
    const answerNames = ["ARP reply@30", "NA@40", "ARP reply", "NA"];
    return {
      received: requests.map((frame, i) => ({ name: names[i] ?? "", frame })),
      sent: answers.map((frame, i) => ({ name: answerNames[i] ?? "", frame })),
      // An untagged ARP request every filter passes: once the tap has it, it has all that came before.
      receivedEnd: requestFor(client, parseVlanIp("198.18.0.239")),
      sentEnd: requestFor({ mac: node.mac, ip: node.ip, ip6: null }, parseVlanIp("198.18.0.238")),
      node,
    };
  };

  it.each([
    { case: `the probe's "${PLAIN}": received tagged frames only`, filter: PLAIN, tagged: ["ARP request@30", "NS@40"] },
    {
      case: `"${VLAN_AWARE}": every tagged frame, both ways`,
      filter: VLAN_AWARE,
      tagged: ["ARP request@30", "NS@40", "ARP reply@30", "NA@40"],
    },
    {
      case: "the agent's CAPTURE_FILTER: every tagged frame, both ways",
      filter: CAPTURE_FILTER,
      tagged: ["ARP request@30", "NS@40", "ARP reply@30", "NA@40"],
    },
  ])("$case, each with its tag in the bytes", async ({ filter, tagged }) => {
    const r = round();
    const tap = await startTap(r.node.ns, filter);
    try {
      await inNs(lab.client.ns, process.execPath, INJECT, "eth0", ...[...r.received.map((x) => x.frame), r.receivedEnd].map(hexOf));
      await tap.seen(hexOf(r.receivedEnd));
      await inNs(r.node.ns, process.execPath, INJECT, "eth0", ...[...r.sent.map((x) => x.frame), r.sentEnd].map(hexOf));
      await tap.seen(hexOf(r.sentEnd));
    } finally {
      tap.stop();
    }
    // Name every delivered frame the test sent, and any delivered without its tag, so a failure shows which.
    const known = new Map<string, string>();
    for (const { name, frame } of [...r.received, ...r.sent]) {
      known.set(hexOf(frame), name);
      const bare = untagFrame(frame);
      if (bare.vlan !== null) known.set(hexOf(bare.frame), `${name} WITHOUT its tag`);
    }
    const delivered = tap.lines.flatMap((l) => known.get(l) ?? []);
    const untagged = ["ARP request", "NS", "ARP reply", "NA"];
    expect(delivered.sort()).toEqual([...untagged, ...tagged].sort());
  });
});
