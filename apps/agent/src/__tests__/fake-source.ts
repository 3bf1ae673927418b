import type { FrameHandler, PacketSource } from "@whohas/capture";

/**
 * FakeSource lets a test push frames as if libpcap had captured them; its counters are libpcap's (`received` counts
 * what was pushed, `dropped` is what the kernel would have lost) and only what the test sets.
 */
export class FakeSource implements PacketSource {
  onFrame: FrameHandler | null = null;
  closed = false;
  received = 0;
  dropped = 0;
  constructor(readonly iface: string) {}
  start(onFrame: FrameHandler) {
    this.onFrame = onFrame;
  }
  /** push delivers `frame`, read at `now` and captured at `capturedAt` (the same moment unless given). */
  push(frame: Uint8Array, now: number, capturedAt = now) {
    this.received++;
    this.onFrame?.(frame, now, capturedAt);
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
