import { LINKTYPE_ETHERNET, PCAP_RECORD_HEADER_LEN, newArpReply, newArpRequest, pcapFileHeader } from "@whohas/core";

/** The shape of the benchmark capture: a client-side view of an IPVS cluster with strictARP false. */
export interface CaptureShape {
  readonly frames: number;
  readonly vips: number;
  readonly clients: number;
  readonly responders: number;
}

export const ISSUE_SHAPE: CaptureShape = { frames: 2_000_000, vips: 300, clients: 30, responders: 3 };

const vip = (i: number) => `10.${96 + Math.floor(i / 65536)}.${Math.floor(i / 256) % 256}.${i % 256}`;
const clientIp = (i: number) => `10.0.1.${10 + i}`;
const mac = (prefix: number, i: number) =>
  `02:${prefix.toString(16).padStart(2, "0")}:00:00:${Math.floor(i / 256)
    .toString(16)
    .padStart(2, "0")}:${(i % 256).toString(16).padStart(2, "0")}`;

/**
 * generateCapture yields a pcap in chunks: each client asks for each VIP in turn (broadcast request) and every
 * responder answers it, 50 to 400 µs later. Frames are built once per (client, VIP, responder) and reused.
 */
export function* generateCapture(shape: CaptureShape, t0 = Date.UTC(2026, 10, 29), chunkFrames = 65_536): Generator<Uint8Array> {
  yield pcapFileHeader(LINKTYPE_ETHERNET);
  const perRequest = 1 + shape.responders;
  const requests = Math.ceil(shape.frames / perRequest);
  const respMacs = Array.from({ length: shape.responders }, (_, i) => mac(0xaa, i));
  const clientMacs = Array.from({ length: shape.clients }, (_, i) => mac(0xcc, i));
  const frameLen = 60;
  const rec = PCAP_RECORD_HEADER_LEN + frameLen;
  let buf = new Uint8Array(chunkFrames * rec);
  let view = new DataView(buf.buffer);
  let n = 0;
  let written = 0;
  const put = (frame: Uint8Array, tsMicros: number) => {
    const o = n * rec;
    const sec = Math.floor(tsMicros / 1e6);
    view.setUint32(o, sec, true);
    view.setUint32(o + 4, tsMicros - sec * 1e6, true);
    view.setUint32(o + 8, frameLen, true);
    view.setUint32(o + 12, frameLen, true);
    buf.set(frame, o + PCAP_RECORD_HEADER_LEN);
    n++;
    written++;
  };
  let t = t0 * 1000;
  for (let r = 0; r < requests && written < shape.frames; r++) {
    const c = r % shape.clients;
    const v = Math.floor(r / shape.clients) % shape.vips;
    const cm = clientMacs[c] ?? "";
    const ip = vip(v);
    t += 1000;
    put(newArpRequest(cm, clientIp(c), ip), t);
    for (let i = 0; i < shape.responders && written < shape.frames; i++) {
      put(newArpReply(respMacs[i] ?? "", ip, cm, clientIp(c)), t + 50 + 150 * i);
    }
    if (n + perRequest > chunkFrames) {
      yield buf.subarray(0, n * rec);
      buf = new Uint8Array(chunkFrames * rec);
      view = new DataView(buf.buffer);
      n = 0;
    }
  }
  if (n > 0) yield buf.subarray(0, n * rec);
}
