import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { joinFile } from "./arp-join.js";
import { generateCapture, type CaptureShape } from "./generate.js";

function joinCapture(shape: CaptureShape): string[] {
  const dir = mkdtempSync(join(tmpdir(), "whohas-arp-join-"));
  try {
    const file = join(dir, "bench.pcap");
    writeFileSync(file, Buffer.concat([...generateCapture(shape, Date.UTC(2026, 0, 1), 256)]));
    const { lines, frames } = joinFile(file);
    expect(frames).toBe(shape.frames);
    return lines.sort();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("arp-join, the JavaScript floor of the analyze benchmark", () => {
  it("joins every answer to its request and counts the requests answered by several MACs", () => {
    const lines = joinCapture({ frames: 4000, vips: 10, clients: 5, responders: 3 });
    expect(lines).toHaveLength(10);
    for (const line of lines) expect(line).toMatch(/^10\.96\.0\.\d+ 100 100 02:aa:00:00:00:00,02:aa:00:00:00:01,02:aa:00:00:00:02$/);
  });

  it("counts no request answered twice where one MAC answers", () => {
    const lines = joinCapture({ frames: 1000, vips: 5, clients: 4, responders: 1 });
    expect(lines).toHaveLength(5);
    for (const line of lines) expect(line).toMatch(/^10\.96\.0\.\d+ 100 0 02:aa:00:00:00:00$/);
  });
});
