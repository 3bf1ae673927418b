// Property tests over every decoder: 200,000 random and mutated frames, no exception but our typed outcomes, no
// hang (each property runs under vitest's timeout). A failing input found here is kept below as a regression fixture.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { classifyFrame } from "../packet/classify.js";
import { decodeArp, newArpReply, newArpRequest, newGratuitousArp } from "../packet/arp.js";
import {
  decodeNdp,
  encodeNdpFrame,
  newNeighborSolicitation,
  newSolicitedAdvertisement,
  newUnsolicitedAdvertisement,
} from "../packet/ndp.js";
import { LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, decodeEthernet } from "../packet/link.js";
import { CaptureError, CaptureReader, pcapFileHeader, pcapRecord } from "../capture/pcap.js";
import { hex } from "./fixtures.js";

const C = "02:00:5e:00:00:01";
const A = "02:00:5e:00:00:0a";
const SEEDS: Uint8Array[] = [
  newArpRequest(C, "192.0.2.1", "192.0.2.200"),
  newArpReply(A, "192.0.2.200", C, "192.0.2.1"),
  newGratuitousArp(1, A, "192.0.2.200"),
  hex("ffffffffffff 02005e000001 8100 0064 0806 0001 0800 06 04 0001 02005e000001 c0000201 000000000000 c00002c8"),
  hex("ffffffffffff 02005e000001 88a8 00c8 8100 0064 0806 0001 0800 06 04 0001 02005e000001 c0000201 000000000000 c00002c8"),
  newNeighborSolicitation(C, "2001:db8::1", "2001:db8::c8"),
  newSolicitedAdvertisement(A, "fe80::a", "2001:db8::c8", C, "2001:db8::1"),
  newUnsolicitedAdvertisement(A, "fe80::a", "2001:db8::c8"),
  encodeNdpFrame({
    ethDst: C,
    ethSrc: A,
    type: "na",
    src: "fe80::a",
    dst: "fe80::1",
    target: "2001:db8::c8",
    router: true,
    solicited: true,
    override: true,
    options: [
      { kind: "raw", type: 14, value: new Uint8Array(14) },
      { kind: "target-lla", mac: A },
    ],
  }),
];
const SLL_SEED = hex("0004 0001 0006 02005e00000a 0000 0806 0001 0800 06 04 0002 02005e00000a c00002c8 02005e000001 c0000201");
const SLL2_SEED = hex(
  "8100 0000 00000002 0001 04 06 02005e00000a 0000 0064 0806 0001 0800 06 04 0002 02005e00000a c00002c8 02005e000001 c0000201",
);

/** REGRESSIONS: inputs that once broke a decoder (none so far beyond these edge shapes), checked on every run. */
const REGRESSIONS: { link: number; bytes: Uint8Array }[] = [
  { link: LINKTYPE_ETHERNET, bytes: new Uint8Array(0) },
  { link: LINKTYPE_ETHERNET, bytes: hex("ffffffffffff02005e000001" + "8100".repeat(8)) }, // tags that never end
  { link: LINKTYPE_ETHERNET, bytes: hex("ffffffffffff02005e00000186dd" + "60000000ffff3aff" + "00".repeat(32)) }, // IPv6 length beyond the frame
  { link: LINKTYPE_LINUX_SLL2, bytes: hex("8100000000000002000104060200") }, // SLL2 with a VLAN protocol and no tag
];

const OUTCOMES = new Set(["observed", "dropped"]);
const REASONS = new Set(["truncated", "malformed", "unsupported", "ignored"]);

/** checkAll runs every decoder on one input; plain checks (not expect) keep 200,000 runs within seconds. */
function checkAll(bytes: Uint8Array, link: number): void {
  const out = classifyFrame(bytes, link);
  if (!OUTCOMES.has(out.kind) || (out.kind === "dropped" && !REASONS.has(out.reason)))
    throw new Error(`bad outcome ${JSON.stringify(out)}`);
  // The lower-level decoders on their own, at the offsets a frame may put them.
  for (const off of [0, 14, 18]) {
    if (typeof decodeArp(bytes, off).ok !== "boolean" || typeof decodeNdp(bytes, off).ok !== "boolean") throw new Error("no outcome");
  }
  if (typeof decodeEthernet(bytes).ok !== "boolean") throw new Error("no outcome");
}

/** mutated derives a frame from a seed: overwrite some bytes, then maybe truncate or extend. */
const mutated = (seeds: Uint8Array[]) =>
  fc
    .record({
      seed: fc.constantFrom(...seeds),
      edits: fc.array(fc.record({ at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }), { maxLength: 4 }),
      cut: fc.option(fc.nat(), { nil: undefined }),
      tail: fc.uint8Array({ maxLength: 16 }),
    })
    .map(({ seed, edits, cut, tail }) => {
      const f = new Uint8Array([...seed, ...tail]);
      for (const e of edits) if (f.length > 0) f[e.at % f.length] = e.value;
      return cut === undefined ? f : f.subarray(0, cut % (f.length + 1));
    });

describe("decoders never throw", { timeout: 120_000 }, () => {
  it("keeps its regression inputs", () => {
    for (const r of REGRESSIONS) checkAll(r.bytes, r.link);
  });

  it("on 50,000 random byte strings, under every link type", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 120 }),
        fc.constantFrom(LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, 0, 105),
        (b, link) => checkAll(b, link),
      ),
      { numRuns: 50_000 },
    );
  });

  it("on 100,000 mutated Ethernet ARP and NDP frames", () => {
    fc.assert(
      fc.property(mutated(SEEDS), (b) => checkAll(b, LINKTYPE_ETHERNET)),
      { numRuns: 100_000 },
    );
  });

  it("on 50,000 mutated cooked (SLL, SLL2) frames", () => {
    fc.assert(
      fc.property(mutated([SLL_SEED, SLL2_SEED]), fc.constantFrom(LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2), (b, link) => checkAll(b, link)),
      { numRuns: 50_000 },
    );
  });
});

describe("decode after encode is stable", () => {
  it("for ARP frames built from any addresses", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 6, maxLength: 6 }), fc.ipV4(), fc.ipV4(), (macBytes, a, b) => {
        const mac = [...macBytes].map((x) => x.toString(16).padStart(2, "0")).join(":");
        const out = classifyFrame(newArpRequest(mac, a, b));
        expect(out).toMatchObject({ kind: "observed", obs: { mac, ip: b } });
      }),
      { numRuns: 5_000 },
    );
  });

  it("for NDP frames built from any IPv6 addresses", () => {
    fc.assert(
      fc.property(fc.ipV6(), fc.ipV6(), (src, target) => {
        const out = classifyFrame(newNeighborSolicitation(C, src, target));
        expect(out.kind).toBe("observed");
      }),
      { numRuns: 5_000 },
    );
  });
});

describe("CaptureReader never throws anything but CaptureError", () => {
  const file = new Uint8Array([
    ...pcapFileHeader(1),
    ...pcapRecord(SEEDS[0] ?? new Uint8Array(0), 1),
    ...pcapRecord(SEEDS[5] ?? new Uint8Array(0), 2),
  ]);
  it("on 5,000 mutated pcap files fed in random chunks", () => {
    fc.assert(
      fc.property(mutated([file]), fc.integer({ min: 1, max: 64 }), (bytes, chunk) => {
        const r = new CaptureReader((buf, s, e, link) => {
          classifyFrame(buf.subarray(s, e), link);
        });
        try {
          for (let i = 0; i < bytes.length; i += chunk) r.push(bytes.subarray(i, i + chunk));
          r.end();
        } catch (e) {
          expect(e).toBeInstanceOf(CaptureError);
        }
      }),
      { numRuns: 5_000 },
    );
  });
});
