import { describe, expect, it } from "vitest";
import { selectorMatches } from "./selector.js";

describe("selectorMatches", () => {
  const labels = { zone: "a", role: "edge" };
  it.each([
    { case: "empty selector", sel: {}, match: true },
    { case: "matchLabels hit", sel: { matchLabels: { zone: "a" } }, match: true },
    { case: "matchLabels miss", sel: { matchLabels: { zone: "b" } }, match: false },
    { case: "In", sel: { matchExpressions: [{ key: "zone", operator: "In" as const, values: ["a", "b"] }] }, match: true },
    { case: "In on a missing key", sel: { matchExpressions: [{ key: "rack", operator: "In" as const, values: ["1"] }] }, match: false },
    {
      case: "NotIn on a missing key",
      sel: { matchExpressions: [{ key: "rack", operator: "NotIn" as const, values: ["1"] }] },
      match: true,
    },
    { case: "NotIn hit", sel: { matchExpressions: [{ key: "role", operator: "NotIn" as const, values: ["edge"] }] }, match: false },
    { case: "Exists", sel: { matchExpressions: [{ key: "role", operator: "Exists" as const }] }, match: true },
    { case: "DoesNotExist", sel: { matchExpressions: [{ key: "role", operator: "DoesNotExist" as const }] }, match: false },
    {
      case: "labels AND expressions",
      sel: { matchLabels: { zone: "a" }, matchExpressions: [{ key: "role", operator: "In" as const, values: ["core"] }] },
      match: false,
    },
  ])("$case", ({ sel, match }) => expect(selectorMatches(sel, labels)).toBe(match));
});
