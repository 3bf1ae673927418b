// arp-join: the floor of `whohas analyze`'s per-request work in JavaScript, a reference for the analyze benchmark.
// It reads a classic pcap of Ethernet ARP frames in large blocks, joins each reply to its asker's latest request
// within the judge's reply window (once per MAC), and takes each request, in time order, once final: counted per IP,
// with the MACs that answered it. No aggregates, no verdicts, no hysteresis, no VLANs or NDP: what any
// implementation of per-request judging in JavaScript on one core must at least do. Prints one line per IP
// (`IP requests multi MAC,MAC...`, multi being the requests answered by two or more MACs) and a summary on stderr.
//
//   node bench/dist/arp-join.js FILE
import { closeSync, openSync, readSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { FINAL_MS, REPLY_WINDOW_MS, formatIPv4Number, formatMacNumber } from "@whohas/core";

const BLOCK = 4 << 20;
const MAX_RECORD = 65_536 + 16;
/** Open requests, a ring in time order (a capture with more open at once than this stops the run). */
const RING = 1 << 18;
/** Replies a request keeps (more are counted as answered, not named). */
const REPLIES = 4;
/** (IP, asker) keys, open addressing; never removed (a reference, not a product). */
const KEYS = 1 << 20;

const reqIp = new Uint32Array(RING);
const reqAsker = new Uint32Array(RING);
const reqT = new Float64Array(RING);
const reqN = new Uint8Array(RING);
const reqMacs = new Float64Array(RING * REPLIES);
let head = 0;
let tail = 0;

const keyIp = new Uint32Array(KEYS);
const keyAsker = new Uint32Array(KEYS);
const keyLatest = new Int32Array(KEYS).fill(-1);
let keys = 0;

/** slotOf is the bucket of (ip, asker): the one holding it, or the empty one where it goes. */
function slotOf(ip: number, asker: number): number {
  for (let i = Math.imul(ip ^ Math.imul(asker, 0x9e3779b1), 0x85ebca77) >>> 11; ; i = (i + 1) & (KEYS - 1)) {
    if (keyLatest[i] === -1 || (keyIp[i] === ip && keyAsker[i] === asker)) return i;
  }
}

interface PerIp {
  requests: number;
  multi: number;
  readonly macs: Set<number>;
}
const ips = new Map<number, PerIp>();

/** take counts one final request for its IP. */
function take(r: number): void {
  let p = ips.get(reqIp[r] ?? 0);
  if (p === undefined) ips.set(reqIp[r] ?? 0, (p = { requests: 0, multi: 0, macs: new Set() }));
  p.requests++;
  const n = reqN[r] ?? 0;
  if (n >= 2) p.multi++;
  for (let k = 0; k < Math.min(n, REPLIES); k++) p.macs.add(reqMacs[r * REPLIES + k] ?? 0);
}

/** joinFile reads `file` and returns one line per IP, and the frames read. */
export function joinFile(file: string): { lines: string[]; frames: number } {
  head = tail = keys = 0;
  keyLatest.fill(-1);
  ips.clear();
  const fd = openSync(file, "r");
  const buf = Buffer.allocUnsafe(BLOCK + MAX_RECORD);
  let have = readSync(fd, buf, 0, BLOCK + MAX_RECORD, null);
  if (have < 24 || buf.readUInt32LE(0) !== 0xa1b2c3d4) throw new Error("arp-join reads classic little-endian microsecond pcap only");
  let off = 24;
  let frames = 0;
  for (;;) {
    if (have - off < MAX_RECORD) {
      buf.copy(buf, 0, off, have);
      have -= off;
      off = 0;
      const n = readSync(fd, buf, have, BLOCK, null);
      have += n;
      if (have - off < 16) break;
    }
    const t = buf.readUInt32LE(off) * 1000 + buf.readUInt32LE(off + 4) / 1000;
    const len = buf.readUInt32LE(off + 8);
    const p = off + 16;
    off = p + len;
    if (off > have) break;
    frames++;
    while (head !== tail && t - (reqT[tail] ?? 0) >= FINAL_MS) {
      take(tail);
      tail = (tail + 1) & (RING - 1);
    }
    if (len < 42 || buf[p + 12] !== 0x08 || buf[p + 13] !== 0x06) continue;
    const op = buf.readUInt16BE(p + 20);
    const mac = buf.readUInt16BE(p + 22) * 4_294_967_296 + buf.readUInt32BE(p + 24);
    const sender = buf.readUInt32BE(p + 28);
    const target = buf.readUInt32BE(p + 38);
    if (op === 1) {
      if (sender === target || sender === 0) continue;
      const r = head;
      head = (head + 1) & (RING - 1);
      if (head === tail) throw new Error(`arp-join holds at most ${RING} open requests`);
      reqIp[r] = target;
      reqAsker[r] = sender;
      reqT[r] = t;
      reqN[r] = 0;
      const s = slotOf(target, sender);
      if (keyLatest[s] === -1) {
        if (++keys > KEYS / 2) throw new Error(`arp-join holds at most ${KEYS / 2} (IP, asker) pairs`);
        keyIp[s] = target;
        keyAsker[s] = sender;
      }
      keyLatest[s] = r;
    } else if (op === 2) {
      const r = keyLatest[slotOf(sender, target)] ?? -1;
      if (r < 0 || reqIp[r] !== sender || reqAsker[r] !== target || t - (reqT[r] ?? 0) > REPLY_WINDOW_MS) continue;
      const n = reqN[r] ?? 0;
      let seen = false;
      for (let k = 0; k < Math.min(n, REPLIES); k++) if (reqMacs[r * REPLIES + k] === mac) seen = true;
      if (seen) continue;
      if (n < REPLIES) reqMacs[r * REPLIES + n] = mac;
      reqN[r] = n + 1;
    }
  }
  closeSync(fd);
  while (head !== tail) {
    take(tail);
    tail = (tail + 1) & (RING - 1);
  }
  const lines: string[] = [];
  for (const [ip, p] of ips) {
    lines.push(`${formatIPv4Number(ip)} ${p.requests} ${p.multi} ${[...p.macs].map(formatMacNumber).sort().join(",")}`);
  }
  return { lines, frames };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (file === undefined) throw new Error("usage: arp-join FILE");
  const { lines, frames } = joinFile(file);
  process.stdout.write(lines.join("\n") + "\n");
  process.stderr.write(`arp-join: ${frames} frames, ${lines.length} IPs\n`);
}
