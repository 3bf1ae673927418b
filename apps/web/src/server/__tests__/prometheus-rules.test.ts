import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { Hub } from "../hub/hub.js";
import { HubMetrics } from "../metrics.js";

describe("the example PrometheusRule", () => {
  it("alerts only on series the hub exports", async () => {
    const file = fileURLToPath(new URL("../../../../../deploy/overlays/monitoring/prometheusrule.yaml", import.meta.url));
    const doc = parse(readFileSync(file, "utf8")) as { kind: string; spec: { groups: { rules: { alert: string; expr: string }[] }[] } };
    expect(doc.kind).toBe("PrometheusRule");
    const exported = new Set((await new HubMetrics(await Hub.open()).registry.getMetricsAsJSON()).map((m) => m.name));
    const rules = doc.spec.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert)).toContain("WhohasSeveralResponders");
    for (const r of rules)
      for (const name of r.expr.match(/whohas_[a-z_]+/g) ?? []) expect(exported, `${r.alert}: ${name}`).toContain(name);
  });
});
