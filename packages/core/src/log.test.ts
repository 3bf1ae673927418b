import { describe, expect, it } from "vitest";
import { jsonLogger } from "./log.js";

describe("jsonLogger", () => {
  it("writes one JSON line per event with level, component and fields", () => {
    const lines: string[] = [];
    const log = jsonLogger(
      "agent",
      (l) => lines.push(l),
      () => new Date(0),
    );
    log.warn("hub.disconnected", { code: 1006 });
    expect(lines).toEqual([
      JSON.stringify({ t: "1970-01-01T00:00:00.000Z", level: "warn", component: "agent", event: "hub.disconnected", code: 1006 }) + "\n",
    ]);
  });
});
