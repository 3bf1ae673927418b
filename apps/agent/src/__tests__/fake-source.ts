import type { PacketSource } from "@whohas/capture";

/**
 * FakeSource lets a test push frames as if libpcap had captured them; its counters are libpcap's (`received` counts
 * what was pushed, `dropped` is what the kernel would have lost) and only what the test sets.
 */
export class FakeSource implements PacketSource {
  onFrame: ((f: Uint8Array, now: number) => void) | null = null;
  closed = false;
  received = 0;
  dropped = 0;
  constructor(readonly iface: string) {}
  start(onFrame: (f: Uint8Array, now: number) => void) {
    this.onFrame = onFrame;
  }
  push(frame: Uint8Array, now: number) {
    this.received++;
    this.onFrame?.(frame, now);
  }
  send() {
    /* not used */
  }
  stats() {
    return { received: this.received, dropped: this.dropped };
  }
  close() {
    this.closed = true;
  }
}
