import { describe, expect, it } from "vitest";
import { isClusterName } from "./cluster-name.js";

describe("isClusterName", () => {
  it("takes DNS labels of at most 40 characters", () => {
    for (const ok of ["default", "prod-eu-1", "a", "1", "x".repeat(40)]) expect(isClusterName(ok), ok).toBe(true);
  });
  it("refuses what is no DNS label, or too long", () => {
    for (const bad of ["", "Prod", "-a", "a-", "a_b", "a.b", "a b", "x".repeat(41), "ü"]) expect(isClusterName(bad), bad).toBe(false);
  });
});
