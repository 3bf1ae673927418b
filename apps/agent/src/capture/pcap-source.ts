import cap from "cap";

/**
 * ARP_FILTER is the kernel (BPF) filter for every capture: ARP, also inside one or two VLAN tags. It keeps the
 * capture loop free of all other traffic.
 */
export const ARP_FILTER = "arp or (vlan and arp) or (vlan and vlan and arp)";

/** A PacketSource delivers frames to a handler; tests inject frames without libpcap (STYLE 13). */
export interface PacketSource {
  readonly iface: string;
  start(onFrame: (frame: Uint8Array, now: number) => void): void;
  send(frame: Uint8Array): void;
  close(): void;
}

/** PcapSource captures on one interface with libpcap in immediate mode. Needs root or CAP_NET_RAW. */
export class PcapSource implements PacketSource {
  readonly #cap = new cap.Cap();
  readonly #buffer = Buffer.alloc(65535);
  #open = false;

  constructor(readonly iface: string, readonly filter = ARP_FILTER, readonly kernelBufferBytes = 4 * 1024 * 1024) {}

  start(onFrame: (frame: Uint8Array, now: number) => void): void {
    const linkType = this.#cap.open(this.iface, this.filter, this.kernelBufferBytes, this.#buffer);
    this.#open = true;
    if (linkType !== "ETHERNET") {
      this.close();
      throw new Error(`capture: ${this.iface} has link type ${linkType}, whohas captures on Ethernet links only`);
    }
    // The frame is a view into the shared buffer: handlers must copy what they keep (classify copies into strings).
    this.#cap.on("packet", (nbytes: number) => onFrame(this.#buffer.subarray(0, nbytes), Date.now()));
  }

  send(frame: Uint8Array): void {
    this.#cap.send(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength), frame.byteLength);
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#cap.close();
  }
}
