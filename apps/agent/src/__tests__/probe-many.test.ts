import { describe, expect, it } from "vitest";
import type { FrameHandler, PacketSource } from "@whohas/capture";
import { classifyFrame, newArpReply, newSolicitedAdvertisement, type AgentMessage } from "@whohas/core";
import type { Clock, Egress } from "../commands.js";
import { probeManyCommand, runProbeMany, type ProbeManyCommand, type TargetResult } from "../probe-many.js";
import { fakeClock } from "./fake-clock.js";

const ETH0: Egress = { iface: "eth0", mac: "02:00:5e:00:00:01", address: "192.0.2.1", linkLocal: "fe80::1" };
const ETH0_6: Egress = { ...ETH0, address: "2001:db8::1" };
const VLAN30: Egress = { iface: "eth0.30", mac: "02:00:5e:00:00:01", address: "10.30.0.1", linkLocal: "fe80::1" };
const OWNER = "02:00:5e:00:00:0a";
const OTHER = "02:00:5e:00:00:0b";

/** egress as a node with eth0 (192.0.2.0/24, 2001:db8::/64) and eth0.30 would pick it; nothing for 198.51.100.0/24. */
function egress(ip: string, vlan: number | null): Egress {
  if (vlan === 30) return VLAN30;
  if (vlan !== null) throw new Error(`this node has no interface on VLAN ${vlan}`);
  if (ip.startsWith("198.51.100.")) throw new Error(`no interface has an IPv4 address in the subnet of ${ip}`);
  return ip.includes(":") ? ETH0_6 : ETH0;
}

/** A Wire is one interface's capture: what was sent on it, and answers from `answer` (the MACs per IP and request). */
class Wire implements PacketSource {
  readonly sent: { t: number; ip: string; kind: string; dst: string | null }[] = [];
  #deliver: FrameHandler | null = null;
  closed = false;
  constructor(
    readonly iface: string,
    readonly clock: Clock,
    readonly answer: (ip: string, nth: number) => string[],
  ) {}
  start(f: FrameHandler) {
    this.#deliver = f;
  }
  send(frame: Uint8Array) {
    const out = classifyFrame(frame);
    if (out.kind !== "observed") throw new Error("sent a frame that does not decode");
    const { ip, kind, ethDst, peerIp } = out.obs;
    this.sent.push({ t: this.clock.now(), ip, kind, dst: ethDst });
    const nth = this.sent.filter((s) => s.ip === ip).length;
    const replies = this.answer(ip, nth).map((mac) =>
      ip.includes(":") ? newSolicitedAdvertisement(mac, "fe80::a", ip, ETH0.mac, peerIp) : newArpReply(mac, ip, ETH0.mac, peerIp),
    );
    // Frames come in after the send returns, as libpcap delivers them: on a later turn of the event loop.
    const at = this.clock.now();
    [...replies, ...this.also.splice(0)].forEach((f, i) => {
      const t = at + 0.1 * (i + 1);
      queueMicrotask(() => this.#deliver?.(f, t, t));
    });
  }
  /** also: frames to deliver after the next send, whatever was asked. */
  readonly also: Uint8Array[] = [];
  stats() {
    return null;
  }
  close() {
    this.closed = true;
  }
}

/** wiresOn opens a Wire for each interface, answered as `answer(iface)` says, and keeps them by interface. */
function wiresOn(clock: Clock, answer: (iface: string) => Wire["answer"]) {
  const wires = new Map<string, Wire>();
  const open = (iface: string) => {
    const w = new Wire(iface, clock, answer(iface));
    wires.set(iface, w);
    return w;
  };
  return { wires, open };
}

describe("runProbeMany", () => {
  it("asks every IP once a round, spread over the interval, one capture per interface, and counts every MAC per request", async () => {
    const clock = fakeClock();
    // 192.0.2.11 has two responders on its second request; 192.0.2.10 in VLAN 30 is answered by OTHER there only.
    const { wires, open } = wiresOn(
      clock,
      (iface) => (ip, nth) => (iface === "eth0.30" ? [OTHER] : ip === "192.0.2.11" && nth === 2 ? [OWNER, OTHER] : [OWNER]),
    );
    const rounds: { seq: number; results: TargetResult[] }[] = [];
    const out = await runProbeMany({
      targets: [
        { ip: "192.0.2.10", vlan: null },
        { ip: "192.0.2.11", vlan: null },
        { ip: "198.51.100.7", vlan: null },
        { ip: "2001:db8::c8", vlan: null },
        { ip: "192.0.2.10", vlan: 30 },
      ],
      rounds: 3,
      intervalMs: 1000,
      egress,
      clock,
      open,
      onRound: (seq, results) => rounds.push({ seq, results }),
    });
    expect(out).toEqual({
      probed: 4,
      ifaces: ["eth0", "eth0.30"],
      unprobed: [{ ip: "198.51.100.7", vlan: null, message: "no interface has an IPv4 address in the subnet of 198.51.100.7" }],
    });
    const eth0 = wires.get("eth0");
    const vlan30 = wires.get("eth0.30");
    // Four IPs asked, a quarter of a second apart: a round is never a burst. Each round 1 ms later (the clock's step).
    expect(eth0?.sent.map((s) => [s.t, s.ip])).toEqual([
      [0, "192.0.2.10"],
      [250, "192.0.2.11"],
      [500, "2001:db8::c8"],
      [1001, "192.0.2.10"],
      [1251, "192.0.2.11"],
      [1501, "2001:db8::c8"],
      [2002, "192.0.2.10"],
      [2252, "192.0.2.11"],
      [2502, "2001:db8::c8"],
    ]);
    expect(vlan30?.sent.map((s) => [s.t, s.ip])).toEqual([
      [750, "192.0.2.10"],
      [1751, "192.0.2.10"],
      [2752, "192.0.2.10"],
    ]);
    // Every request broadcast (ARP), or to the target's solicited-node group (NS).
    expect(new Set(eth0?.sent.map((s) => `${s.kind} ${s.dst ?? ""}`))).toEqual(
      new Set(["request ff:ff:ff:ff:ff:ff", "ns 33:33:ff:00:00:c8"]),
    );
    expect([eth0?.closed, vlan30?.closed]).toEqual([true, true]);
    expect(rounds.map((r) => r.seq)).toEqual([1, 2, 3]);
    const macs = (r: TargetResult[]) => r.map((x) => [x.ip, x.vlan, x.replies.map((y) => y.mac)]);
    expect(macs(rounds[0]?.results ?? [])).toEqual([
      ["192.0.2.10", null, [OWNER]],
      ["192.0.2.11", null, [OWNER]],
      ["2001:db8::c8", null, [OWNER]],
      ["192.0.2.10", 30, [OTHER]],
    ]);
    expect(macs(rounds[1]?.results ?? [])[1]).toEqual(["192.0.2.11", null, [OWNER, OTHER]]);
    expect(rounds[2]?.results.map((r) => r.sentAt)).toEqual([2002, 2252, 2502, 2752]);
    // The last round is reported once its last request's reply window has passed.
    expect(clock.t).toBe(2752 + 1001);
  });

  it("goes on when the wall clock steps back an hour mid-run: every round, no burst", async () => {
    const fake = fakeClock();
    let offset = 0;
    let wire: Wire | null = null;
    // The step comes right after the third request goes, before the batch reads the clock to note it.
    const clock: Clock = { now: () => fake.t + offset, sleep: (ms) => fake.sleep(ms) };
    const rounds: number[] = [];
    const truly: number[] = [];
    await runProbeMany({
      targets: ["192.0.2.10", "192.0.2.11", "192.0.2.12"].map((ip) => ({ ip, vlan: null })),
      rounds: 3,
      intervalMs: 1000,
      egress,
      open: (iface) => {
        const w = new Wire(iface, clock, () => [OWNER]);
        const send = w.send.bind(w);
        w.send = (f) => {
          truly.push(fake.t);
          send(f);
          if (w.sent.length === 3) offset -= 3_600_000;
        };
        wire = w;
        return w;
      },
      clock,
      onRound: (seq) => rounds.push(seq),
    });
    expect(rounds).toEqual([1, 2, 3]);
    const sent = (wire as Wire | null)?.sent ?? [];
    expect(sent).toHaveLength(9);
    // In true time (fake.t): requests a third of a second apart at least, and seconds in all, not an hour.
    expect(Math.min(...truly.slice(1).map((t, i) => t - (truly[i] ?? 0)))).toBeGreaterThanOrEqual(333);
    expect(fake.t).toBeLessThan(10_000);
  });

  it("counts only answers to this node's requests, on the interface the IP was asked from", async () => {
    const clock = fakeClock();
    const rounds: TargetResult[][] = [];
    const done = runProbeMany({
      targets: [
        { ip: "192.0.2.10", vlan: null },
        { ip: "192.0.2.10", vlan: 30 },
      ],
      rounds: 1,
      intervalMs: 1000,
      egress,
      clock,
      open: (iface) => {
        const w = new Wire(iface, clock, () => []);
        // Another host's answer to another asker, and one for an IP nobody asked: neither counts. The untagged
        // answer is the untagged IP's only.
        if (iface === "eth0")
          w.also.push(
            newArpReply(OTHER, "192.0.2.10", "02:00:5e:00:00:99", "192.0.2.99"),
            newArpReply(OTHER, "192.0.2.12", ETH0.mac, ETH0.address),
            newArpReply(OWNER, "192.0.2.10", ETH0.mac, ETH0.address),
          );
        return w;
      },
      onRound: (_, results) => rounds.push(results),
    });
    await done;
    expect(rounds).toEqual([
      [
        { ip: "192.0.2.10", vlan: null, sentAt: 0, replies: [{ mac: OWNER, latencyMs: expect.closeTo(0.3, 6) }] },
        { ip: "192.0.2.10", vlan: 30, sentAt: 500, replies: [] },
      ],
    ]);
  });
});

describe("probeManyCommand", () => {
  const command = (targets: ProbeManyCommand["targets"]): ProbeManyCommand => ({
    v: 2,
    type: "probe-many",
    id: "verify-1",
    targets,
    rounds: 2,
    intervalMs: 1000,
  });

  it.each([
    {
      case: "more IPs than its limit",
      targets: Array.from({ length: 513 }, (_, i) => ({ ip: `198.19.${i >> 8}.${i & 255}`, vlan: null })),
      message: "refused: 513 IPs in one probe, this agent asks at most 512 at once (split them)",
    },
  ])("refuses $case before asking any", async ({ targets, message }) => {
    const sent: AgentMessage[] = [];
    let opened = 0;
    await probeManyCommand(command(targets), (m) => (sent.push(m), true), {
      egress,
      open: () => {
        opened++;
        throw new Error("no capture expected");
      },
      clock: fakeClock(),
    });
    expect(opened).toBe(0);
    expect(sent).toEqual([{ v: 2, type: "command-done", id: "verify-1", ok: false, message }]);
  });

  it("streams one result a round, then says what it asked and what it could not", async () => {
    const clock = fakeClock();
    const sent: AgentMessage[] = [];
    await probeManyCommand(
      command([
        { ip: "192.0.2.10", vlan: null },
        { ip: "192.0.2.10", vlan: 40 },
      ]),
      (m) => (sent.push(m), true),
      { egress, open: (iface) => new Wire(iface, clock, () => [OWNER]), clock },
    );
    expect(sent.map((m) => (m.type === "probe-many-result" ? `${m.type} ${m.seq} ${m.results.length}` : m.type))).toEqual([
      "probe-many-result 1 1",
      "probe-many-result 2 1",
      "command-done",
    ]);
    expect(sent.at(-1)).toEqual({
      v: 2,
      type: "command-done",
      id: "verify-1",
      ok: true,
      message: "probed 1 IPs from eth0, 2 requests each; 1 not asked (this node has no interface on VLAN 40)",
      unprobed: [{ ip: "192.0.2.10", vlan: 40, message: "this node has no interface on VLAN 40" }],
    });
  });

  it("asks an IP once per link however it is named: the second naming is not asked, the rest still are", async () => {
    const clock = fakeClock();
    const { wires, open } = wiresOn(clock, () => () => [OWNER]);
    const sent: AgentMessage[] = [];
    // As egressFor may: 10.30.0.0/24 is on eth0.30 only, so an untagged 10.30.0.5 is asked there too.
    const viaVlan = (ip: string, vlan: number | null): Egress => (ip.startsWith("10.30.") ? VLAN30 : egress(ip, vlan));
    await probeManyCommand(
      command([
        { ip: "10.30.0.5", vlan: 30 },
        { ip: "10.30.0.5", vlan: null },
        { ip: "2001:db8::5", vlan: null },
        { ip: "2001:db8:0:0::0:5", vlan: null },
        { ip: "192.0.2.10", vlan: null },
        { ip: "192.0.2.10", vlan: 30 },
      ]),
      (m) => (sent.push(m), true),
      {
        egress: viaVlan,
        open,
        clock,
      },
    );
    const asked = (iface: string) => wires.get(iface)?.sent.map((s) => s.ip) ?? [];
    expect(asked("eth0.30").sort()).toEqual(["10.30.0.5", "10.30.0.5", "192.0.2.10", "192.0.2.10"]);
    expect(asked("eth0").sort()).toEqual(["192.0.2.10", "192.0.2.10", "2001:db8::5", "2001:db8::5"]);
    expect(sent.flatMap((m) => (m.type === "probe-many-result" ? [m.results.length] : []))).toEqual([4, 4]);
    expect(sent.at(-1)).toMatchObject({
      type: "command-done",
      ok: true,
      unprobed: [
        {
          ip: "10.30.0.5",
          vlan: null,
          message: "asked already as 10.30.0.5 on VLAN 30 from eth0.30: one request a second per IP on a link",
        },
        { ip: "2001:db8:0:0::0:5", vlan: null, message: "asked already as 2001:db8::5 from eth0: one request a second per IP on a link" },
      ],
    });
  });

  it("fails when it can ask none of them, with the first reason", async () => {
    const sent: AgentMessage[] = [];
    await probeManyCommand(command([{ ip: "198.51.100.7", vlan: null }]), (m) => (sent.push(m), true), {
      egress,
      open: () => {
        throw new Error("no capture expected");
      },
      clock: fakeClock(),
    });
    expect(sent).toEqual([
      expect.objectContaining({
        type: "command-done",
        ok: false,
        message: "asked none of 1 IPs: no interface has an IPv4 address in the subnet of 198.51.100.7",
        unprobed: [{ ip: "198.51.100.7", vlan: null, message: "no interface has an IPv4 address in the subnet of 198.51.100.7" }],
      }),
    ]);
  });
});
