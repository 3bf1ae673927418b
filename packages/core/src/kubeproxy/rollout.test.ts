import { describe, expect, it } from "vitest";
import { daemonSetRollout, rolloutComplete } from "./rollout.js";

describe("rolloutComplete", () => {
  const ds = (generation: number, observedGeneration: number | undefined, desired: number, updated: number, available: number) => ({
    metadata: { generation },
    status: { observedGeneration, desiredNumberScheduled: desired, updatedNumberScheduled: updated, numberAvailable: available },
  });
  it.each([
    { case: "every pod updated and available", ds: ds(3, 3, 3, 3, 3), complete: true },
    { case: "the controller has not seen the new spec", ds: ds(4, 3, 3, 3, 3), complete: false },
    { case: "a pod still old", ds: ds(3, 3, 3, 2, 3), complete: false },
    { case: "an updated pod not yet available", ds: ds(3, 3, 3, 3, 2), complete: false },
    { case: "no status yet", ds: { metadata: { generation: 1 } }, complete: false },
  ])("$case: $complete", ({ ds: d, complete }) => {
    expect(rolloutComplete(daemonSetRollout(d))).toBe(complete);
  });
});
