import cap from "cap";

/** NDP_MATCH selects ICMPv6 neighbor solicitations (135) and advertisements (136); NDP carries no extension headers. */
const NDP_MATCH = "(icmp6 and (ip6[40] == 135 or ip6[40] == 136))";

/**
 * CAPTURE_FILTER is the kernel (BPF) filter of every agent capture, and a PcapSource's default: ARP and NDP neighbor
 * messages, also inside one or two VLAN tags (each `vlan` shifts the offsets after it). It keeps the capture loop free
 * of all other traffic.
 */
export const CAPTURE_FILTER = `arp or ${NDP_MATCH} or (vlan and (arp or ${NDP_MATCH})) or (vlan and vlan and (arp or ${NDP_MATCH}))`;

/** KernelStats are libpcap's counters for one capture (pcap_stats). */
export interface KernelStats {
  readonly received: number;
  readonly dropped: number;
}

/**
 * A FrameHandler takes one captured frame: `now` is when the event loop read it, `capturedAt` when the kernel
 * captured it (ms since the epoch, the clock Date.now() reads). A garbage collection or a busy CPU can put the first
 * hundreds of milliseconds after the second: capture points, whose sightings of one request are joined to within tens
 * of milliseconds, take the kernel's; a probe, which times replies against when it sent, takes the event loop's.
 */
export type FrameHandler = (frame: Uint8Array, now: number, capturedAt: number) => void;

/**
 * A PacketSource delivers frames to a handler and sends frames on the same link. Code that captures takes one, so
 * its tests inject frames without libpcap.
 */
export interface PacketSource {
  readonly iface: string;
  start(onFrame: FrameHandler): void;
  send(frame: Uint8Array): void;
  /** Kernel counters since start, or null where the source has none. */
  stats(): KernelStats | null;
  close(): void;
}

/**
 * SNAPLEN is how much of each frame is captured: a whole frame at the standard 1500-byte MTU with VLAN tags (ARP
 * and NDP are far smaller). It also sizes libpcap's ring slots (patches/cap@0.2.1.patch), so a short one lets the
 * kernel buffer hold thousands of frames while the event loop is busy. In immediate mode libpcap 1.10 uses
 * TPACKET_V2: on an Ethernet link with offloads (veth, most NICs) a slot is the snaplen plus 68 bytes of headers
 * and reserve, rounded up to 16, and slots do not straddle pages. Any snaplen from 1965 to 1980 makes a slot 2048
 * bytes, two to a 4 KiB page. At 2048 a slot was 2128 bytes with a page of its own, and the 16 MiB ring mapped
 * 30.8 MiB, all resident (the kernel maps a packet ring's pages at once).
 */
export const SNAPLEN = 1978;

/** PcapSource captures on one interface with libpcap in immediate mode. Needs root or CAP_NET_RAW. */
export class PcapSource implements PacketSource {
  readonly #cap = new cap.Cap();
  readonly #buffer = Buffer.alloc(SNAPLEN);
  #open = false;

  constructor(
    readonly iface: string,
    readonly filter = CAPTURE_FILTER,
    readonly kernelBufferBytes = 16 * 1024 * 1024,
  ) {}

  start(onFrame: FrameHandler): void {
    const linkType = this.#cap.open(this.iface, this.filter, this.kernelBufferBytes, this.#buffer);
    this.#open = true;
    if (linkType !== "ETHERNET") {
      this.close();
      throw new Error(`capture: ${this.iface} has link type ${linkType}, whohas captures on Ethernet links only`);
    }
    // The frame is a view into the shared buffer: handlers must copy what they keep (classify copies into strings).
    this.#cap.on("packet", (nbytes: number, _truncated: boolean, capturedAt: number) =>
      onFrame(this.#buffer.subarray(0, nbytes), Date.now(), capturedAt),
    );
  }

  send(frame: Uint8Array): void {
    this.#cap.send(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength), frame.byteLength);
  }

  stats(): KernelStats | null {
    if (!this.#open) return null;
    const s = this.#cap.stats();
    return { received: s.received, dropped: s.dropped + s.ifDropped };
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#cap.close();
  }
}
