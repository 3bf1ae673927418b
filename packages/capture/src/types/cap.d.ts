// Types for the parts of the `cap` package (libpcap bindings, CommonJS, untyped) that whohas uses.
declare module "cap" {
  import type { EventEmitter } from "node:events";

  export class Cap extends EventEmitter {
    /** Opens `device` with a BPF `filter`; returns the link type name ("ETHERNET", "LINKTYPE_LINUX_SLL", ...). */
    open(device: string, filter: string, bufSize: number, buffer: Buffer): string;
    close(): void;
    send(buffer: Buffer, nBytes?: number): void;
    /** Added by patches/cap@0.2.1.patch: pcap_stats(). */
    stats(): { received: number; dropped: number; ifDropped: number };
    setMinBytes?(n: number): void;
    /** `capturedAt`: the kernel's capture time, ms since the epoch (patches/cap@0.2.1.patch adds it). */
    on(event: "packet", listener: (nbytes: number, truncated: boolean, capturedAt: number) => void): this;
    static deviceList(): { name: string; addresses: { addr: string }[] }[];
  }
  const cap: { Cap: typeof Cap };
  export default cap;
}
