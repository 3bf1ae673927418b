import { describe, expect, it } from "vitest";
import { targetsOf } from "./all.js";

describe("targetsOf", () => {
  it("reads each target of a benchmark's targets line, met only when every part of it is", () => {
    const out = [
      "hub benchmark: ...",
      "targets: keeps up (met), p99 <= 50 ms (NOT met), RSS <= 500 MB (met, hub and launcher together)",
      "targets: first render <= 1.5 s (median of visits 2-5: met; the hub's first page load: NOT met), no frame over 100 ms (met)",
      "target: p99 <= 1 s (met)",
    ].join("\n");
    expect(targetsOf("x", out).map((t) => [t.target, t.met])).toEqual([
      ["keeps up (met)", true],
      ["p99 <= 50 ms (NOT met)", false],
      ["RSS <= 500 MB (met, hub and launcher together)", true],
      ["first render <= 1.5 s (median of visits 2-5: met; the hub's first page load: NOT met)", false],
      ["no frame over 100 ms (met)", true],
      ["p99 <= 1 s (met)", true],
    ]);
    expect(targetsOf("x", "no targets here")).toEqual([]);
  });
});
