// What the wire format costs the hub: the agents' observations message (the one 5,000 agents send ten times a second)
// as the JSON the wire carries, read by the hub's parser (JSON.parse and the hand-written checks), against the same
// message as a compact binary frame (wire-binary.ts), read into the same objects with the same checks, and against
// JSON.parse alone. Messages are the hub benchmark's (sim.ts). Prints bytes and microseconds per message, the ratios,
// and the share of the hub's whole cost per message when given (`--hub-us N`: from hub-bench.js, CPU seconds per
// message). `node wire-bench.js [ENTRIES_PER_MESSAGE] [SECONDS]`. Asserts nothing.
import { parseAgentMessage } from "@whohas/core";
import { isDeepStrictEqual, parseArgs } from "node:util";
import { observationsJson } from "@whohas/lab";
import { simIp } from "./sim.js";
import { decodeObservations, encodeObservations, type Observations } from "./wire-binary.js";

const { values, positionals } = parseArgs({ options: { "hub-us": { type: "string" } }, allowPositionals: true });
const perMessage = Number(positionals[0] ?? 25);
const seconds = Number(positionals[1] ?? 3);

/** 1,000 distinct messages from 50 agents, 300 IPs each, as the hub benchmark's agents send them. */
const texts: string[] = [];
for (let a = 0; a < 50; a++) {
  const ips = Array.from({ length: 300 }, (_, i) => simIp(a, i));
  const mac = `02:00:5e:10:00:${a.toString(16).padStart(2, "0")}`;
  for (let k = 0; k < 20; k++) texts.push(observationsJson(ips, mac, k * perMessage, perMessage, 1_764_400_000_000 + k * 100));
}
const parsed = texts.map((t) => {
  const r = parseAgentMessage(t);
  if (!r.ok || r.value.type !== "observations") throw new Error(`the hub refuses the bench's message: ${r.ok ? r.value.type : r.message}`);
  return r.value;
});
const frames = parsed.map((m) => encodeObservations(m));
// The binary frame must give what the hub's parser gives, or its figure means nothing (a JSON message may leave
// `vlan` out where the frame says null: the hub reads both as untagged).
const untagged = <T extends { vlan?: number | null }>(xs: readonly T[]) => xs.map((x) => ({ ...x, vlan: x.vlan ?? null }));
for (let i = 0; i < frames.length; i++) {
  const m = parsed[i] as Observations;
  const d = decodeObservations(frames[i] ?? new Uint8Array());
  const same = isDeepStrictEqual(
    { dropped: d.dropped, entries: untagged(d.entries), requests: untagged(d.requests) },
    { dropped: m.dropped, entries: untagged(m.entries), requests: untagged(m.requests) },
  );
  if (!same) throw new Error(`message ${i}: the binary frame does not decode to what the JSON parses to`);
}
const buffers = texts.map((t) => Buffer.from(t));

/** timed runs `f` over `items` for `seconds` (after a warm-up) and returns microseconds per item. */
function timed<T>(items: readonly T[], f: (x: T) => unknown): number {
  let sink = 0;
  const run = (ms: number) => {
    const end = performance.now() + ms;
    let n = 0;
    const start = performance.now();
    while (performance.now() < end) {
      for (const x of items) if (f(x) !== null) sink++;
      n += items.length;
    }
    return ((performance.now() - start) * 1000) / n;
  };
  run(500);
  const us = run(seconds * 1000);
  if (sink === 0) throw new Error("nothing decoded");
  return us;
}

// Each reads bytes as they come off the socket: the text is decoded from UTF-8 first, as the hub's gateway does.
const jsonHub = timed(buffers, (b) => parseAgentMessage(b.toString()));
const jsonBare = timed(buffers, (b) => JSON.parse(b.toString()) as unknown);
const binary = timed(frames, (f) => decodeObservations(f));

const mean = (xs: readonly { length: number }[]) => xs.reduce((n, x) => n + x.length, 0) / xs.length;
const jsonBytes = mean(buffers);
const binBytes = mean(frames);
const rows: [string, number, number][] = [
  ["JSON, the hub's parser (today)", jsonBytes, jsonHub],
  ["JSON.parse alone (reference)", jsonBytes, jsonBare],
  ["binary frame, same objects", binBytes, binary],
];
const out: string[] = [
  `wire format: the observations message, ${perMessage} aggregates and about ${Math.round(perMessage / 2)} request reports each (the hub benchmark's), ${texts.length} distinct messages, ${seconds} s each`,
  "",
  `${"".padEnd(34)}${"bytes/message".padStart(14)}${"µs/message".padStart(12)}${"µs/aggregate".padStart(14)}`,
  ...rows.map(
    ([name, bytes, us]) =>
      `${name.padEnd(34)}${bytes.toFixed(0).padStart(14)}${us.toFixed(1).padStart(12)}${(us / perMessage).toFixed(2).padStart(14)}`,
  ),
  "",
  `binary / JSON (the hub's parser): ${(binBytes / jsonBytes).toFixed(2)}x the bytes, ${(binary / jsonHub).toFixed(2)}x the time`,
  `the hub's parser / JSON.parse alone: ${(jsonHub / jsonBare).toFixed(2)}x the time`,
];
const hubUs = Number(values["hub-us"] ?? NaN);
if (Number.isFinite(hubUs)) {
  out.push(
    `the hub spends ${hubUs.toFixed(0)} µs of CPU per message in all (hub-bench.js): reading it is ${((jsonHub / hubUs) * 100).toFixed(1)} % of that; the binary frame would save ${(((jsonHub - binary) / hubUs) * 100).toFixed(1)} %`,
  );
}
process.stdout.write(out.join("\n") + "\n");
