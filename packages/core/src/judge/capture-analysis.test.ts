import { describe, expect, it } from "vitest";
import { pcapFileHeader, pcapRecord } from "../capture/pcap.js";
import { ARP_OP_REPLY, newArpReply, newArpRequest, newGratuitousArp } from "../packet/arp.js";
import { LINKTYPE_ETHERNET } from "../packet/link.js";
import { tagFrame } from "../packet/vlan.js";
import { CaptureAnalysis, analyzeExitCode, toJson, toTable } from "./capture-analysis.js";
import { CLIENT_IP as CLIENT, CLIENT_MAC, NODE_A_MAC as A, NODE_B_MAC as B, NODE_C_MAC as C, VIP } from "../__tests__/fixtures.js";

const T0 = Date.UTC(2026, 11, 1);

/** Capture writes what a client's tcpdump would record: its requests, every reply to it, the broadcasts. */
class Capture {
  readonly records: Uint8Array[] = [pcapFileHeader(LINKTYPE_ETHERNET)];
  t = T0;
  ask(by: readonly string[], vlan: number | null = null): void {
    const onLink = (f: Uint8Array) => (vlan === null ? f : tagFrame(f, vlan));
    this.records.push(pcapRecord(onLink(newArpRequest(CLIENT_MAC, CLIENT, VIP)), this.t));
    by.forEach((mac, i) => this.records.push(pcapRecord(onLink(newArpReply(mac, VIP, CLIENT_MAC, CLIENT)), this.t + 0.2 + i * 0.1)));
  }
  announce(mac: string): void {
    this.records.push(pcapRecord(newGratuitousArp(ARP_OP_REPLY, mac, VIP), this.t));
  }
  every(ms: number, forMs: number, f: () => void): void {
    for (let k = 0; k < forMs / ms; k++) {
      f();
      this.t += ms;
    }
  }
  analyze(owners?: ReadonlyMap<string, readonly string[]>) {
    const an = new CaptureAnalysis({ expectedOwners: owners });
    an.startFile("cap.pcap");
    for (const r of this.records) an.push(r);
    an.endFile();
    return an.summary();
  }
}

describe("whohas analyze judges a capture as the hub judges the agents", () => {
  it("keeps the same address on two VLANs apart: one clean, one answered twice, each with its VLAN", () => {
    const c = new Capture();
    c.every(1000, 20_000, () => {
      c.ask([A], 30);
      c.ask([A, B], 40);
    });
    const s = c.analyze();
    expect(s.ips.map((ip) => [ip.ip, ip.vlan, ip.family, ip.requests, ip.findings.map((f) => f.type)])).toEqual([
      [VIP, 30, 4, 20, []],
      [VIP, 40, 4, 20, ["multi-responder"]],
    ]);
    expect(toJson(s)).toMatchObject({
      ips: [
        { ip: VIP, vlan: 30, family: 4 },
        { ip: VIP, vlan: 40, family: 4 },
      ],
    });
    expect(analyzeExitCode(s)).toBe(1);
    // An owner named for the address holds on every VLAN; one named ADDRESS@VLAN only there.
    const wrong = (owners: Map<string, string[]>) =>
      c.analyze(owners).ips.map((ip) => [ip.vlan, ip.findings.some((f) => f.type === "wrong-owner")]);
    expect(wrong(new Map([[VIP, [B]]]))).toEqual([
      [30, true],
      [40, true],
    ]);
    expect(wrong(new Map([[`${VIP}@40`, [A]]]))).toEqual([
      [30, false],
      [40, true],
    ]);
  });

  it("finds several responders per request, and exits 1", () => {
    const c = new Capture();
    c.every(1000, 10_000, () => c.ask([A, B, C]));
    const s = c.analyze();
    expect(s.ips).toHaveLength(1);
    expect(s.ips[0]?.findings.map((f) => [f.type, f.macs])).toEqual([["multi-responder", [A, B, C]]]);
    expect(s.ips[0]?.requests).toBe(10);
    // Offline no MAC is known to be a node or not: the finding names the MACs, and claims nothing about them.
    expect(s.ips[0]?.findings[0]?.detail).toContain(`answered by ${A}, ${B} and ${C}:`);
    expect(s.ips[0]?.findings[0]?.detail).not.toContain("cluster node");
    expect(analyzeExitCode(s)).toBe(1);
  });

  it("counts, for the client, how often the first answer came from another MAC than the time before", () => {
    const c = new Capture();
    // The race of strictARP false: every request answered by A and B, the winner changing five times.
    const winners = [A, B, B, A, A, B, A, A, A, B];
    for (const w of winners) {
      c.ask(w === A ? [A, B] : [B, A]);
      c.t += 1000;
    }
    const s = c.analyze();
    const changes = 5;
    expect(s.ips[0]?.askers.map((a) => [a.ip, a.mac, a.requests, a.firstAnswerChanges])).toEqual([[CLIENT, CLIENT_MAC, 10, changes]]);
    expect((toJson(s) as { ips: { askers: unknown[] }[] }).ips[0]?.askers).toEqual([
      {
        mac: CLIENT_MAC,
        ip: CLIENT,
        requests: 10,
        firstAnswerChanges: changes,
        changesPerHour: expect.any(Number) as number,
        lastChange: expect.any(Number) as number,
        firstSeen: T0,
      },
    ]);
    expect(toTable(s)).toContain(`~ asker ${CLIENT} (${CLIENT_MAC}): first answer changed ${changes}x in 10 requests`);
    // A client always answered first by the same MAC: counted, no change, and no line in the text report.
    const steady = new Capture();
    steady.every(1000, 10_000, () => steady.ask([A, B]));
    const one = steady.analyze();
    expect(one.ips[0]?.askers.map((a) => [a.requests, a.firstAnswerChanges])).toEqual([[10, 0]]);
    expect(toTable(one)).not.toContain("~ asker");
  });

  it("records a clean failover as a handover with its gap and unanswered requests, and exits 0", () => {
    const c = new Capture();
    c.every(100, 3000, () => c.ask([A]));
    c.every(100, 500, () => c.ask([]));
    c.announce(B);
    c.every(100, 3000, () => c.ask([B]));
    const s = c.analyze();
    const ip = s.ips[0];
    expect(ip?.findings).toEqual([]);
    expect(ip?.handovers).toEqual([
      {
        from: { mac: A, node: null },
        to: { mac: B, node: null },
        at: T0 + 3500,
        gapMs: expect.closeTo(600 - 0.2, 1) as number,
        unanswered: 5,
        announced: true,
      },
    ]);
    expect(analyzeExitCode(s)).toBe(0);
    expect((toJson(s) as { ips: { handovers: unknown[] }[] }).ips[0]?.handovers).toHaveLength(1);
  });

  it("flags answers from a MAC that is not the expected owner's, and a stale announcement", () => {
    const c = new Capture();
    c.announce(B);
    c.every(1000, 20_000, () => c.ask([A]));
    const s = c.analyze(new Map([[VIP, [A]]]));
    expect(s.ips[0]?.findings.map((f) => f.type)).toEqual(["stale-announcer"]);
    const wrong = c.analyze(new Map([[VIP, [C]]]));
    expect(wrong.ips[0]?.findings.map((f) => f.type).sort()).toEqual(["stale-announcer", "wrong-owner"]);
  });

  it("judges an IP seen once between two judgements, in a busy capture", () => {
    const c = new Capture();
    c.every(100, 1_250, () => c.ask([A]));
    const odd = newGratuitousArp(ARP_OP_REPLY, B, "198.51.100.99");
    odd.set([0x02, 0x00, 0x5e, 0x00, 0x00, 0x0c], 6);
    c.records.push(pcapRecord(odd, c.t));
    c.every(100, 5_000, () => c.ask([A]));
    const s = c.analyze();
    expect(s.ips.find((i) => i.ip === "198.51.100.99")?.findings.map((f) => [f.type, f.macs])).toEqual([["ethernet-mismatch", [B, C]]]);
  });

  it("reports a finding that cleared before the capture ended as inactive", () => {
    const c = new Capture();
    c.ask([A, B]);
    c.every(1000, 70_000, () => c.ask([A]));
    const f = c.analyze().ips[0]?.findings[0];
    expect(f).toMatchObject({ type: "multi-responder", active: false });
  });
});
