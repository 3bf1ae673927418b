import { describe, expect, it } from "vitest";
import type { CoreV1Event } from "@kubernetes/client-node";
import { latestAssignments } from "../kube/inventory.js";

const ev = (name: string, node: string, t: string, reason = "nodeAssigned", kind = "Service"): CoreV1Event => ({
  metadata: { name: `${name}.${t}`, namespace: "demo" },
  involvedObject: { kind, namespace: "demo", name },
  reason,
  message: `announcing from node "${node}" with protocol "layer2"`,
  lastTimestamp: new Date(t),
});

describe("latestAssignments", () => {
  it("keeps the newest nodeAssigned event per Service and reads the node from MetalLB's message", () => {
    const m = latestAssignments([
      ev("web", "node-1", "2026-11-29T10:00:00Z"),
      ev("web", "node-2", "2026-11-29T10:05:00Z"),
      ev("api", "node-3", "2026-11-29T09:00:00Z"),
      ev("web", "node-9", "2026-11-29T11:00:00Z", "Other"),
      ev("web", "node-8", "2026-11-29T11:00:00Z", "nodeAssigned", "Pod"),
    ]);
    expect([...m]).toEqual([
      ["demo/web", "node-2"],
      ["demo/api", "node-3"],
    ]);
  });
});
