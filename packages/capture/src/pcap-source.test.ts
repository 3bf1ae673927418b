import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import cap from "cap";
import { describe, expect, it } from "vitest";
import { CAPTURE_FILTER, PcapSource } from "./pcap-source.js";

// EtherType 0x88b5 is IEEE Std 802's local experimental one: no protocol on this host handles it.
const LOCAL_EXPERIMENTAL = "ether proto 0x88b5";

/** experimentalFrame is a minimum-size Ethernet frame (zero MACs, EtherType 0x88b5) carrying `marker`. */
function experimentalFrame(marker: Uint8Array): Uint8Array {
  const frame = new Uint8Array(60);
  new DataView(frame.buffer).setUint16(12, 0x88b5);
  frame.set(marker, 14);
  return frame;
}

/** packetRingBytes is the size of this process's memory mapped from sockets: libpcap's packet rings. */
function packetRingBytes(): number {
  let total = 0;
  let socket = false;
  for (const line of readFileSync("/proc/self/smaps", "utf8").split("\n")) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) socket = /socket:\[\d+\]$/.test(line);
    else if (socket && line.startsWith("Size:")) total += Number(/(\d+) kB/.exec(line)?.[1] ?? 0) * 1024;
  }
  return total;
}

/** capturing is false where the kernel refuses a capture (neither root nor CAP_NET_RAW): those tests are skipped. */
const capturing = ((): boolean => {
  const probe = new PcapSource("lo", LOCAL_EXPERIMENTAL);
  try {
    probe.start(() => undefined);
    return true;
  } catch (e) {
    if (e instanceof Error && e.message.includes("Operation not permitted")) return false;
    throw e;
  } finally {
    probe.close();
  }
})();

describe("PcapSource before it starts", () => {
  it("filters for ARP and NDP, has no counters, and closes as a no-op", () => {
    const src = new PcapSource("lo");
    expect(src.filter).toBe(CAPTURE_FILTER);
    expect(src.stats()).toBeNull();
    src.close();
    expect(src.stats()).toBeNull();
  });

  it("loads the cap binding with patches/cap@0.2.1.patch applied (it adds stats)", () => {
    expect(typeof new cap.Cap().stats).toBe("function");
  });
});

describe.skipIf(!capturing)("PcapSource on loopback (root or CAP_NET_RAW)", () => {
  it("hears the frame it sends, with the kernel's capture time and the time it was read, and counts it", async () => {
    const marker = randomBytes(16);
    const sent = experimentalFrame(marker);
    const src = new PcapSource("lo", LOCAL_EXPERIMENTAL);
    try {
      const before = Date.now();
      const heard = new Promise<{ frame: Uint8Array; now: number; capturedAt: number }>((resolve) => {
        src.start((frame, now, capturedAt) => {
          // The frame is a view into the capture buffer: copy it before the next packet overwrites it.
          if (Buffer.from(frame.subarray(14, 30)).equals(marker)) resolve({ frame: Uint8Array.from(frame), now, capturedAt });
        });
      });
      // Sent, then the event loop kept busy: the frame is read at least 150 ms after the kernel captured it.
      src.send(sent);
      const sentBy = Date.now();
      while (Date.now() - sentBy < 150);
      const { frame, now, capturedAt } = await heard;
      expect(frame).toEqual(sent);
      // The kernel's time (microseconds, in ms) is the clock Date.now() reads, taken when the frame was sent.
      expect(capturedAt).toBeGreaterThanOrEqual(before);
      expect(capturedAt).toBeLessThanOrEqual(sentBy + 1);
      expect(now).toBeGreaterThanOrEqual(sentBy + 150);
      expect(now).toBeLessThanOrEqual(Date.now());
      const stats = src.stats();
      expect(stats?.received).toBeGreaterThanOrEqual(1);
      expect(stats?.dropped).toBe(0);
    } finally {
      src.close();
    }
    expect(src.stats()).toBeNull();
    src.close();
  });

  it("maps a kernel ring no larger than the buffer it asked for (two slots to a page)", () => {
    const bytes = 4 * 1024 * 1024;
    const before = packetRingBytes();
    const src = new PcapSource("lo", LOCAL_EXPERIMENTAL, bytes);
    try {
      src.start(() => undefined);
      const ring = packetRingBytes() - before;
      // At least the buffer (the ring exists), at most the buffer and a page (slots of a page each would double it).
      expect(ring).toBeGreaterThanOrEqual(bytes);
      expect(ring).toBeLessThanOrEqual(bytes + 4096);
    } finally {
      src.close();
    }
  });

  it("refuses a link that is not Ethernet and leaves no capture open", () => {
    // Linux's "any" pseudo-device has cooked (SLL) headers, not Ethernet ones.
    const src = new PcapSource("any", LOCAL_EXPERIMENTAL);
    expect(() => src.start(() => undefined)).toThrow(
      /^capture: any has link type LINKTYPE_LINUX_SLL\d?, whohas captures on Ethernet links only$/,
    );
    expect(src.stats()).toBeNull();
  });
});
