import { describe, expect, it } from "vitest";
import { dashboardQueries, parseExposition, promqlRefs, unexported } from "./metric-refs.js";

const SCRAPE = `# HELP whohas_hub_ips IPs seen, by state.
# TYPE whohas_hub_ips gauge
whohas_hub_ips{state="single"} 0
whohas_hub_ips{state="multi-responder"} 1
# TYPE whohas_handover_gap_seconds histogram
whohas_handover_gap_seconds_bucket{le="0.05"} 0
whohas_handover_gap_seconds_bucket{le="+Inf"} 0
whohas_handover_gap_seconds_sum 0
whohas_handover_gap_seconds_count 0
# TYPE whohas_ip_responders gauge
whohas_ip_responders{ip="198.18.0.200",vlan="",namespace="demo",service="web-0"} 3
# TYPE whohas_hub_agent_rejected_total counter
whohas_agent_hub_connected 1
`;

describe("promqlRefs", () => {
  it.each([
    { case: "a bare metric", expr: "whohas_agents_connected", metrics: ["whohas_agents_connected"], grouping: [] },
    {
      case: "matchers, an aggregation and a Grafana interval",
      expr: 'sum by (reason) (rate(whohas_hub_agent_bad_messages_total{reason!="binary"}[$__rate_interval]))',
      metrics: ["whohas_hub_agent_bad_messages_total"],
      grouping: ["reason"],
    },
    {
      case: "histogram_quantile over buckets, grouping after the argument",
      expr: "histogram_quantile(0.99, sum(rate(whohas_hub_tick_seconds_bucket[5m])) by (pass, le))",
      metrics: ["whohas_hub_tick_seconds_bucket"],
      grouping: ["pass", "le"],
    },
    {
      case: "a binary operation with on (), a number and vector()",
      expr: "whohas_strictarp_configured == 1 and on () (min(whohas_node_arp_ignore) < 1) or vector(0)",
      metrics: ["whohas_strictarp_configured", "whohas_node_arp_ignore"],
      grouping: [],
    },
    {
      case: "Grafana variables in label values, ranges and ${var} form",
      expr: 'increase(whohas_first_answer_changes_total{namespace=~"$namespace", ip=~"${ip:regex}"}[${window}]) offset 1h',
      metrics: ["whohas_first_answer_changes_total"],
      grouping: [],
    },
    { case: "a __name__ selector", expr: '{__name__="whohas_hub_ips", state="idle"}', metrics: ["whohas_hub_ips"], grouping: [] },
    {
      case: "a ratio of _sum and _count",
      expr: "sum(rate(x_sum[$__interval])) / sum(rate(x_count[$__interval]))",
      metrics: ["x_sum", "x_count"],
      grouping: [],
    },
  ])("$case", ({ expr, metrics, grouping }) => {
    const r = promqlRefs(expr);
    expect(r.selectors.map((s) => s.metric)).toEqual(metrics);
    expect(r.grouping).toEqual(grouping);
  });

  it("names the labels of each selector's matchers", () => {
    expect(promqlRefs('max by (ip) (whohas_ip_responders{namespace=~"$namespace", service="a,b"}) > 1').selectors).toEqual([
      { metric: "whohas_ip_responders", labels: ["namespace", "service"] },
    ]);
  });

  it("reads a template variable's label_values", () => {
    expect(promqlRefs('label_values(whohas_ip_responders{namespace=~"$namespace"}, service)').labelValues).toEqual([
      { metric: "whohas_ip_responders", label: "service" },
    ]);
  });

  it.each([
    { case: "a function PromQL does not have", expr: "rates(whohas_hub_ips[5m])" },
    { case: "an unterminated string", expr: 'whohas_hub_ips{state="single}' },
    { case: "a matcher without a value", expr: "whohas_hub_ips{state=}" },
  ])("refuses $case", ({ expr }) => {
    expect(() => promqlRefs(expr)).toThrow(SyntaxError);
  });
});

describe("parseExposition", () => {
  it("lists each sample name with its labels, histogram suffixes included, and skips families without samples", () => {
    const e = parseExposition(SCRAPE);
    expect([...e.keys()]).toEqual([
      "whohas_hub_ips",
      "whohas_handover_gap_seconds_bucket",
      "whohas_handover_gap_seconds_sum",
      "whohas_handover_gap_seconds_count",
      "whohas_ip_responders",
      "whohas_agent_hub_connected",
    ]);
    expect(e.get("whohas_ip_responders")).toEqual(new Set(["ip", "vlan", "namespace", "service"]));
    expect(e.get("whohas_handover_gap_seconds_bucket")).toEqual(new Set(["le"]));
    expect(e.has("whohas_hub_agent_rejected_total")).toBe(false);
  });
});

describe("unexported", () => {
  const exported = parseExposition(SCRAPE);
  it.each([
    { case: "a real gauge", expr: 'sum by (state) (whohas_hub_ips{state="single"})', problems: [] },
    {
      case: "a quantile of a real histogram",
      expr: "histogram_quantile(0.9, sum by (le) (rate(whohas_handover_gap_seconds_bucket[$__rate_interval])))",
      problems: [],
    },
    { case: "a made-up metric", expr: "sum(rate(whohas_hub_arp_storms_total[5m]))", problems: ["metric whohas_hub_arp_storms_total"] },
    {
      case: "a histogram read without its suffix",
      expr: "histogram_quantile(0.9, rate(whohas_handover_gap_seconds[5m]))",
      problems: ["metric whohas_handover_gap_seconds"],
    },
    {
      case: "a family declared but with no sample",
      expr: "rate(whohas_hub_agent_rejected_total[5m])",
      problems: ["metric whohas_hub_agent_rejected_total"],
    },
    { case: "a matcher on a label the metric lacks", expr: 'whohas_hub_ips{kind="x"}', problems: ["label kind of whohas_hub_ips"] },
    {
      case: "grouping by a label no metric has",
      expr: "sum by (node) (whohas_hub_ips)",
      problems: ["label node (grouping) of whohas_hub_ips"],
    },
    {
      case: "a variable reading a label the metric lacks",
      expr: "label_values(whohas_ip_responders, pod)",
      problems: ["label pod of whohas_ip_responders"],
    },
  ])("$case", ({ expr, problems }) => {
    expect(unexported(expr, exported)).toEqual(problems);
  });

  it("accepts the labels Prometheus adds to every target", () => {
    expect(unexported("sum by (node) (whohas_agent_hub_connected)", exported, new Set(["node"]))).toEqual([]);
  });
});

describe("dashboardQueries", () => {
  it("lists panel targets, nested panels of collapsed rows and query variables", () => {
    const queries = dashboardQueries({
      panels: [
        { title: "a", type: "timeseries", targets: [{ refId: "A", expr: "x" }] },
        { title: "r", type: "row", panels: [{ title: "b", type: "stat", targets: [{ refId: "B", expr: "y" }] }] },
      ],
      templating: {
        list: [
          { name: "datasource", type: "datasource", query: "prometheus" },
          { name: "ip", type: "query", query: { query: "label_values(z, ip)" } },
        ],
      },
    });
    expect(queries).toEqual([
      { where: 'panel "a" A', expr: "x" },
      { where: 'panel "b" B', expr: "y" },
      { where: "variable $ip", expr: "label_values(z, ip)" },
    ]);
  });
});
