// The Grafana dashboard (deploy/monitoring): well-formed for a current Grafana, every panel bound to the chosen
// Prometheus, every query readable PromQL, and shipped by the monitoring overlay as the sidecar's ConfigMap. Whether
// its series exist is the lab's to say (src/__integration__/grafana.test.ts).
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { REPO_ROOT } from "./hub-process.js";
import { dashboardQueries, promqlRefs } from "./metric-refs.js";

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access -- the dashboard and the rendered manifests are untyped JSON and YAML, asserted field by field */
type Obj = Record<string, any>;

const FILE = join(REPO_ROOT, "deploy/monitoring/whohas-dashboard.json");
const text = readFileSync(FILE, "utf8");
const dashboard = JSON.parse(text) as Obj;
const panels = (dashboard.panels as Obj[]).flatMap((p) => [p, ...((p.panels ?? []) as Obj[])]);
const queryPanels = panels.filter((p) => p.type !== "row");

describe("the Grafana dashboard", () => {
  it("is a dashboard of a current Grafana with a Prometheus datasource variable", () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(39);
    expect(dashboard.uid).toBe("whohas");
    const vars = dashboard.templating.list as Obj[];
    expect(vars.find((v) => v.name === "datasource")).toMatchObject({ type: "datasource", query: "prometheus" });
    for (const v of vars.filter((x) => x.type === "query"))
      expect(v.datasource, String(v.name)).toEqual({ type: "prometheus", uid: "${datasource}" });
  });

  it.each(queryPanels.map((p) => ({ case: String(p.title), p })))(
    "$case: bound to $datasource, described, with readable targets",
    ({ p }) => {
      expect(p.datasource).toEqual({ type: "prometheus", uid: "${datasource}" });
      expect(String(p.description).length).toBeGreaterThan(20);
      const targets = p.targets as Obj[];
      expect(targets.length).toBeGreaterThan(0);
      for (const t of targets) {
        expect(t.datasource).toEqual({ type: "prometheus", uid: "${datasource}" });
        expect(promqlRefs(String(t.expr)).selectors.length, String(t.expr)).toBeGreaterThan(0);
      }
      expect(new Set(targets.map((t) => String(t.refId))).size).toBe(targets.length);
    },
  );

  it("gives each panel its own id and a place on the 24-column grid", () => {
    expect(new Set(panels.map((p) => Number(p.id))).size).toBe(panels.length);
    for (const p of panels) expect(p.gridPos.x + p.gridPos.w, String(p.title)).toBeLessThanOrEqual(24);
  });

  it("reads every variable's values with label_values from a metric", () => {
    const vars = dashboardQueries(dashboard).filter((q) => q.where.startsWith("variable"));
    expect(vars.map((v) => v.where)).toEqual(["variable $namespace", "variable $service", "variable $ip", "variable $node"]);
    for (const v of vars) expect(promqlRefs(v.expr).labelValues, v.expr).toHaveLength(1);
  });
});

describe("the monitoring overlay", () => {
  const render = spawnSync("kubectl", ["kustomize", join(REPO_ROOT, "deploy/overlays/monitoring")], { encoding: "utf8" });
  const objects = () =>
    parseAllDocuments(render.stdout)
      .map((d) => d.toJS() as Obj | null)
      .filter((o): o is Obj => o !== null);

  it("renders with kubectl kustomize", () => {
    expect(render.error).toBeUndefined();
    expect(render.stderr).toBe("");
    expect(render.status).toBe(0);
  });

  it("carries the dashboard, byte for byte, in a ConfigMap the Grafana sidecar discovers", () => {
    const cm = objects().find((o) => o.kind === "ConfigMap" && o.metadata?.name === "whohas-grafana-dashboard");
    expect(cm?.metadata).toMatchObject({ namespace: "whohas", labels: { grafana_dashboard: "1" } });
    expect(cm?.data["whohas-dashboard.json"]).toBe(text);
  });

  it("keeps the hub's namespace and service labels (the LoadBalancer Service's), which the dashboard filters by", () => {
    // Without honorLabels the Prometheus Operator's own namespace and service labels (the hub's) win, and the hub's
    // become exported_namespace and exported_service: every namespace/Service filter and the rules' grouping break,
    // while a scrape of the hub (which the lab test reads) still shows the labels.
    const monitor = objects().find((o) => o.kind === "ServiceMonitor");
    expect((monitor?.spec.endpoints as Obj[]).map((e) => e.honorLabels as unknown)).toEqual([true]);
  });

  it("has alert rules that are readable PromQL", () => {
    const rule = objects().find((o) => o.kind === "PrometheusRule");
    const rules = (rule?.spec.groups as Obj[]).flatMap((g) => g.rules as Obj[]);
    expect(rules.length).toBeGreaterThan(0);
    for (const r of rules) expect(promqlRefs(String(r.expr)).selectors.length, String(r.expr)).toBeGreaterThan(0);
  });
});
