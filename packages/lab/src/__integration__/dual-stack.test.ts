import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../stack.js";
import { INJECT } from "../hub-process.js";
import { inNs } from "../sh.js";
import { parseVlanIp, requestFor } from "../trunk.js";
import { vipAt, type LabNode } from "../lab.js";
import { watchWire, type WireFrame, type WireWatch } from "./wire-watch.js";

// IPv6 and VLANs on the wire, read by tshark in the client namespace (no whohas code decodes what is asserted): the
// speakers answer Neighbor Solicitations for the IPv6 VIPs their node owns while the kernels stay silent for the
// same VIPs on kube-ipvs0; a node holding one on eth0 makes two answers; an address on VLANs is answered per VLAN, in
// that VLAN's tag; and the node kernels, with no VLAN device, answer no tagged request at all.

/** The same IPv4 address on two VLANs (one owner on 30, two on 40), and nowhere untagged; an IPv6 one on 40. */
const ON_30 = "198.18.0.230@30";
const ON_40 = "198.18.0.230@40";
const ON6_40 = "2001:2::230@40";
/** Tagged requests for addresses the kernels answer untagged: a VIP on every kube-ipvs0, node-1's own addresses. */
const KERNEL_TAGGED = [`${vipAt(0)}@50`, "198.18.0.11@50", "2001:2::11@50"];
/** How many of the client's requests each check watches. */
const ROUNDS = 3;
/**
 * Addresses of the lab link nobody holds, for requests the test injects from the client's MAC: an answer is matched
 * to its question by the address it goes to, whatever its tag.
 */
const TAGGED_ASKER = { ip: "198.18.0.4", ip6: "2001:2::4" };
const UNTAGGED_ASKER = { ip: "198.18.0.5", ip6: "2001:2::5" };

describe("a dual-stack lab with VLANs", () => {
  let stack: Stack;
  let tshark: WireWatch | null = null;
  let nodes: readonly LabNode[];

  beforeAll(async () => {
    stack = await startStack({
      nodes: 3,
      vips: 1,
      ipv6: true,
      vlanVips: [ON_30, ON_40, ON6_40],
      kube: true,
      cluster: true,
      requestIntervalMs: 250,
    });
    nodes = stack.lab.nodes;
    tshark = await watchWire(stack.lab.client.ns);
  });
  afterAll(async () => {
    await tshark?.stop();
    await stack.stop();
  });

  const wire = (): WireWatch => {
    if (tshark === null) throw new Error("tshark is not running");
    return tshark;
  };
  const node = (name: string | undefined): LabNode => {
    const n = nodes.find((x) => x.name === name);
    if (n === undefined) throw new Error(`no node ${name}`);
    return n;
  };
  /** The Service VIPs the stack's election gave `n`, which own() must keep when it adds VLAN entries. */
  const elected = (n: LabNode) => [...stack.owners].filter(([, owner]) => owner === n.name).map(([ip]) => ip);

  /**
   * answersTo watches ROUNDS of the requester's requests for `target` (IP or IP@VLAN, tagged or not as written) sent
   * from now on (tshark reports frames a little late: earlier ones may still come in), and returns the answers in the
   * same VLAN (or untagged) sent to the client between the first of them and the one after the last: each request
   * had a whole interval to be answered.
   */
  const answersTo = async (target: string): Promise<WireFrame[]> => {
    const { ip, vlan } = parseVlanIp(target);
    const client = stack.lab.client.mac;
    const since = Date.now();
    const isRequest = (f: WireFrame) =>
      (f.kind === "arp-request" || f.kind === "ns") && f.src === client && f.ip === ip && f.vlan === vlan && f.time >= since;
    const from = wire().frames.length;
    const first = await wire().nth(from, isRequest, 1);
    const end = await wire().nth(from, isRequest, ROUNDS + 1);
    return wire()
      .frames.slice(first, end)
      .filter((f) => (f.kind === "arp-reply" || f.kind === "na") && f.ip === ip && f.vlan === vlan && f.dst === client);
  };
  const macsOf = (frames: readonly WireFrame[]) => new Set(frames.map((f) => f.src));
  const isAnswer = (f: WireFrame) => f.kind === "arp-reply" || f.kind === "na";
  /** ask sends, from the client's eth0 and MAC, one request for each target as `asker`, outside the requester's rounds. */
  const ask = (asker: { ip: string; ip6: string }, targets: readonly string[]) =>
    inNs(
      stack.lab.client.ns,
      process.execPath,
      INJECT,
      "eth0",
      ...targets.map((t) => Buffer.from(requestFor({ mac: stack.lab.client.mac, ...asker }, parseVlanIp(t))).toString("hex")),
    );
  /** answerTo tells whether a frame answers `asker`, in any VLAN or none. */
  const answerTo = (asker: { ip: string; ip6: string }) => (f: WireFrame) => isAnswer(f) && (f.peer === asker.ip || f.peer === asker.ip6);
  const answersFor = (asker: { ip: string; ip6: string }, from: number) => wire().frames.slice(from).filter(answerTo(asker));

  it("an IPv6 VIP is answered by its owner's speaker alone: one solicited NA per NS, from its link-local address", async () => {
    const vip6 = stack.lab.vips6[0] ?? "";
    const owner = node(stack.owners.get(vip6));
    const answers = await answersTo(vip6);
    // Every node holds the VIP on kube-ipvs0 and keeps arp_ignore=0: for IPv6 their kernels still stay silent.
    expect(answers).toHaveLength(ROUNDS);
    for (const a of answers)
      expect(a).toMatchObject({
        src: owner.mac,
        dst: stack.lab.client.mac,
        vlan: null,
        kind: "na",
        ip: vip6,
        ipSrc: owner.linkLocal,
        solicited: true,
      });
  });

  it("with the VIP on another node's eth0, two MACs answer each NS", async () => {
    const vip6 = stack.lab.vips6[0] ?? "";
    const owner = node(stack.owners.get(vip6));
    const other = nodes.find((n) => n !== owner) ?? owner;
    await stack.lab.holdOnLink(other, vip6);
    try {
      const answers = await answersTo(vip6);
      expect(macsOf(answers)).toEqual(new Set([owner.mac, other.mac]));
      expect(answers.filter((a) => a.src === other.mac)).toHaveLength(ROUNDS);
    } finally {
      await stack.lab.releaseFromLink(other, vip6);
    }
    expect(macsOf(await answersTo(vip6))).toEqual(new Set([owner.mac]));
  });

  it("one address on two VLANs: answered per VLAN, in that VLAN's tag, and not untagged", async () => {
    const [one, two] = nodes;
    if (one === undefined || two === undefined) throw new Error("the lab needs two nodes");
    expect(await answersTo(ON_30)).toEqual([]);
    const given = wire().frames.length;
    stack.own(one.name, [...elected(one), ON_30, ON_40]);
    stack.own(two.name, [...elected(two), ON_40, ON6_40]);
    // The speakers take their entries from stdin: their first tagged answers say they have.
    const { ip } = parseVlanIp(ON_30);
    const answered = (n: LabNode, vlan: number) => (f: WireFrame) =>
      f.kind === "arp-reply" && f.ip === ip && f.src === n.mac && f.vlan === vlan;
    await wire().nth(given, answered(one, 30), 1);
    await wire().nth(given, answered(two, 40), 1);
    const on30 = await answersTo(ON_30);
    expect(on30).toHaveLength(ROUNDS);
    expect(on30.every((a) => a.src === one.mac && a.vlan === 30 && a.kind === "arp-reply")).toBe(true);
    const on40 = await answersTo(ON_40);
    expect(macsOf(on40)).toEqual(new Set([one.mac, two.mac]));
    expect(on40).toHaveLength(2 * ROUNDS);
    expect(on40.every((a) => a.vlan === 40)).toBe(true);
    const on6 = await answersTo(ON6_40);
    expect(on6).toHaveLength(ROUNDS);
    expect(on6.every((a) => a.src === two.mac && a.vlan === 40 && a.kind === "na" && a.solicited)).toBe(true);
    // Untagged, the same address belongs to nobody. The window closes on node-1's answer to the same address on
    // VLAN 30, asked for after it: a speaker handles requests in the order they come.
    const from = wire().frames.length;
    await ask(UNTAGGED_ASKER, [ip]);
    await ask(TAGGED_ASKER, [ON_30]);
    await wire().nth(from, (f) => answerTo(TAGGED_ASKER)(f) && f.src === one.mac && f.vlan === 30, 1);
    expect(
      wire()
        .frames.slice(from)
        .filter((f) => f.kind === "arp-request" && f.peer === UNTAGGED_ASKER.ip),
    ).toHaveLength(1);
    expect(answersFor(UNTAGGED_ASKER, from)).toEqual([]);
  });

  it("the node kernels answer no tagged request, for addresses they answer untagged", async () => {
    // The same requests tagged from one asker, then untagged from another. Untagged, every kernel answers for the VIP
    // on its kube-ipvs0 (strictARP false) and node-1's for its own addresses; a kernel handles frames in the order they
    // come, so once those answers are in, the tagged requests have had their chance: none went to the tagged asker,
    // in any VLAN or none.
    const one = node("node-1");
    const from = wire().frames.length;
    await ask(TAGGED_ASKER, KERNEL_TAGGED);
    await ask(
      UNTAGGED_ASKER,
      KERNEL_TAGGED.map((t) => parseVlanIp(t).ip),
    );
    const expected = [
      ...nodes.map((n) => ({ ip: vipAt(0), mac: n.mac })),
      { ip: one.ip, mac: one.mac },
      { ip: one.ip6 ?? "", mac: one.mac },
    ];
    for (const e of expected)
      await wire().nth(from, (f) => answerTo(UNTAGGED_ASKER)(f) && f.ip === e.ip && f.src === e.mac && f.vlan === null, 1);
    expect(answersFor(TAGGED_ASKER, from)).toEqual([]);
  });
});
