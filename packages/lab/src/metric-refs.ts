// What a Grafana dashboard or a Prometheus rule asks of the series, and what a scrape has: enough PromQL to name every
// metric and label an expression reads, and enough of the text exposition format to list what a component exports.

/** A Selector is one metric an expression reads, with the labels its matchers name. */
export interface Selector {
  readonly metric: string;
  readonly labels: readonly string[];
}

/** MetricRefs is everything one expression reads: its selectors, and the labels of its grouping clauses. */
export interface MetricRefs {
  readonly selectors: readonly Selector[];
  /** Labels of by / without / on / ignoring / group_left / group_right clauses. */
  readonly grouping: readonly string[];
  /** label_values(metric, label): the label a Grafana variable reads from its metric. */
  readonly labelValues: readonly { readonly metric: string; readonly label: string }[];
}

/** PROMQL_FUNCTIONS are the functions and aggregation operators of PromQL (Prometheus 2.x and 3.x). */
const PROMQL_FUNCTIONS = new Set(
  (
    "abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil changes clamp clamp_max clamp_min cos " +
    "cosh count_over_time day_of_month day_of_week day_of_year days_in_month deg delta deriv exp floor histogram_avg " +
    "histogram_count histogram_fraction histogram_quantile histogram_stddev histogram_stdvar histogram_sum holt_winters " +
    "double_exponential_smoothing hour idelta increase info irate label_join label_replace last_over_time ln log10 log2 " +
    "mad_over_time max_over_time min_over_time minute month pi predict_linear present_over_time quantile_over_time rad rate " +
    "resets round scalar sgn sin sinh sort sort_by_label sort_by_label_desc sort_desc sqrt stddev_over_time stdvar_over_time " +
    "sum_over_time tan tanh time timestamp vector year " +
    "sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio"
  ).split(" "),
);
const GROUPING = new Set(["by", "without", "on", "ignoring", "group_left", "group_right"]);
const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"]);

/**
 * substituteGrafana puts a duration where Grafana puts its variables' values before Prometheus sees the query: an
 * interval inside range brackets is a duration, and inside a label value (a string) any text will do.
 */
function substituteGrafana(expr: string): string {
  return expr
    .replace(/\$__(rate_interval|interval|range)(_ms|_s)?\b/g, "5m")
    .replace(/\$\{[A-Za-z_]\w*(:\w+)?\}/g, "5m")
    .replace(/\$[A-Za-z_]\w*/g, "5m")
    .replace(/\[\[[A-Za-z_]\w*\]\]/g, "5m");
}

type Token =
  | { readonly kind: "ident"; readonly text: string; readonly at: number }
  | { readonly kind: "string" | "number" | "op"; readonly text: string; readonly at: number };

/** tokenize splits PromQL into identifiers (metric names may hold colons), strings, numbers and operators. */
function tokenize(expr: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr.charAt(i);
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === "#") {
      const nl = expr.indexOf("\n", i);
      i = nl === -1 ? expr.length : nl;
      continue;
    }
    if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < expr.length && expr.charAt(j) !== c) j += expr.charAt(j) === "\\" && c !== "`" ? 2 : 1;
      if (j >= expr.length) throw new SyntaxError(`promql: unterminated string at ${i} in ${JSON.stringify(expr)}`);
      out.push({ kind: "string", text: expr.slice(i + 1, j), at: i });
      i = j + 1;
      continue;
    }
    const num = /^(0x[0-9a-f]+|\d+(\.\d*)?(e[+-]?\d+)?|\.\d+(e[+-]?\d+)?)([smhdwy]|ms)?/i.exec(expr.slice(i));
    if (num !== null && /[\d.]/.test(c)) {
      out.push({ kind: "number", text: num[0], at: i });
      i += num[0].length;
      continue;
    }
    const id = /^[A-Za-z_:][\w:]*/.exec(expr.slice(i));
    if (id !== null) {
      out.push({ kind: "ident", text: id[0], at: i });
      i += id[0].length;
      continue;
    }
    const op = /^(==|!=|=~|!~|>=|<=|[-+*/%^=<>(){}[\],@])/.exec(expr.slice(i));
    if (op === null) throw new SyntaxError(`promql: unexpected ${JSON.stringify(c)} at ${i} in ${JSON.stringify(expr)}`);
    out.push({ kind: "op", text: op[0], at: i });
    i += op[0].length;
  }
  return out;
}

/**
 * readMatchers reads `{a="x", b=~"y"}` from the `{` at `start`: the labels matched, the metric name of a `__name__`
 * matcher (or null), and the index after the `}`.
 */
function readMatchers(tokens: readonly Token[], start: number, expression: string): [string[], string | null, number] {
  const labels: string[] = [];
  let name: string | null = null;
  let j = start + 1;
  while (!(tokens[j]?.kind === "op" && tokens[j]?.text === "}")) {
    const [label, op, value] = [tokens[j], tokens[j + 1], tokens[j + 2]];
    if (label?.kind !== "ident" || op?.kind !== "op" || !["=", "!=", "=~", "!~"].includes(op.text) || value?.kind !== "string")
      throw new SyntaxError(`promql: bad label matcher at ${label?.at ?? expression.length} in ${JSON.stringify(expression)}`);
    if (label.text === "__name__" && op.text === "=") name = value.text;
    else labels.push(label.text);
    j += 3;
    if (tokens[j]?.text === ",") j++;
  }
  return [labels, name, j + 1];
}

/**
 * promqlRefs names the metrics and labels a PromQL expression (as a Grafana target holds it, variables included)
 * reads. Throws a SyntaxError on what it cannot read, and on a call of a function PromQL does not have, so a typo
 * cannot pass for a metric name.
 */
export function promqlRefs(expression: string): MetricRefs {
  const labelValues = /^\s*label_values\(\s*(.*?)\s*,\s*([A-Za-z_]\w*)\s*\)\s*$/s.exec(expression);
  if (labelValues !== null) {
    const inner = promqlRefs(labelValues[1] ?? "");
    const metric = inner.selectors[0]?.metric;
    if (inner.selectors.length !== 1 || metric === undefined)
      throw new SyntaxError(`promql: label_values of one metric expected: ${expression}`);
    return { ...inner, labelValues: [{ metric, label: labelValues[2] ?? "" }] };
  }
  const tokens = tokenize(substituteGrafana(expression));
  const selectors: Selector[] = [];
  const grouping: string[] = [];
  const at = (k: number) => tokens[k];
  let k = 0;
  while (k < tokens.length) {
    const t = tokens[k];
    if (t === undefined) break;
    if (t.kind === "op" && t.text === "[") {
      // A range or subquery: durations only.
      while (k < tokens.length && at(k)?.text !== "]") k++;
      k++;
      continue;
    }
    if (t.kind === "op" && t.text === "{") {
      const [labels, name, next] = readMatchers(tokens, k, expression);
      if (name === null) throw new SyntaxError(`promql: a selector without a metric name in ${JSON.stringify(expression)}`);
      selectors.push({ metric: name, labels });
      k = next;
      continue;
    }
    if (t.kind !== "ident") {
      k++;
      continue;
    }
    const lower = t.text.toLowerCase();
    if (GROUPING.has(lower) && at(k + 1)?.text === "(") {
      let j = k + 2;
      for (; at(j)?.text !== ")"; j++) {
        const l = at(j);
        if (l === undefined) throw new SyntaxError(`promql: unclosed ${t.text}( in ${JSON.stringify(expression)}`);
        if (l.kind === "ident") grouping.push(l.text);
      }
      k = j + 1;
      continue;
    }
    if (KEYWORDS.has(lower) || GROUPING.has(lower)) {
      k++;
      continue;
    }
    const next = at(k + 1)?.text.toLowerCase();
    // An aggregation may put its grouping first: `sum by (le) (...)`.
    if (PROMQL_FUNCTIONS.has(t.text) && (next === "by" || next === "without")) {
      k++;
      continue;
    }
    if (next === "(") {
      if (!PROMQL_FUNCTIONS.has(t.text))
        throw new SyntaxError(`promql: no function ${t.text} in PromQL (in ${JSON.stringify(expression)})`);
      k++;
      continue;
    }
    if (at(k + 1)?.text === "{") {
      const [labels, , next] = readMatchers(tokens, k + 1, expression);
      selectors.push({ metric: t.text, labels });
      k = next;
      continue;
    }
    selectors.push({ metric: t.text, labels: [] });
    k++;
  }
  return { selectors, grouping, labelValues: [] };
}

/** Exported is what scrapes hold: the name of each sample line, with every label name seen on it. */
export type Exported = ReadonlyMap<string, ReadonlySet<string>>;

/** parseExposition reads Prometheus's text exposition format into each sample name and the label names it carries. */
export function parseExposition(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([A-Za-z_:][\w:]*)(\{(.*)\})?\s+\S+/.exec(line);
    if (m === null) throw new SyntaxError(`exposition: unreadable line ${JSON.stringify(line)}`);
    const name = m[1] ?? "";
    const labels = out.get(name) ?? new Set<string>();
    for (const l of (m[3] ?? "").matchAll(/([A-Za-z_]\w*)="(?:[^"\\]|\\.)*"/g)) labels.add(l[1] ?? "");
    out.set(name, labels);
  }
  return out;
}

/**
 * unexported lists, for one expression, each metric no scrape has a sample of and each label that is on none of its
 * metrics' samples (nor among `targetLabels`, which Prometheus adds when it scrapes). Empty when the expression reads
 * only what is exported.
 */
export function unexported(expression: string, exported: Exported, targetLabels: ReadonlySet<string> = new Set()): string[] {
  const refs = promqlRefs(expression);
  const problems: string[] = [];
  const known = (metric: string, label: string) => targetLabels.has(label) || exported.get(metric)?.has(label) === true;
  for (const s of refs.selectors) {
    if (!exported.has(s.metric)) {
      problems.push(`metric ${s.metric}`);
      continue;
    }
    for (const l of s.labels) if (!known(s.metric, l)) problems.push(`label ${l} of ${s.metric}`);
  }
  for (const { metric, label } of refs.labelValues)
    if (exported.has(metric) && !known(metric, label)) problems.push(`label ${label} of ${metric}`);
  // A grouping label is on the result of some selector (which one is the expression's structure): one with it suffices.
  const present = refs.selectors.filter((s) => exported.has(s.metric));
  for (const l of refs.grouping)
    if (present.length > 0 && !present.some((s) => known(s.metric, l)))
      problems.push(`label ${l} (grouping) of ${present.map((s) => s.metric).join(", ")}`);
  return problems;
}

/** A DashboardQuery is one PromQL expression of a dashboard: a panel's target or a template variable's query. */
export interface DashboardQuery {
  readonly where: string;
  readonly expr: string;
}

interface GrafanaPanel {
  readonly title?: string;
  readonly type?: string;
  readonly targets?: readonly { readonly refId?: string; readonly expr?: string }[];
  readonly panels?: readonly GrafanaPanel[];
}
interface GrafanaDashboard {
  readonly panels?: readonly GrafanaPanel[];
  readonly templating?: { readonly list?: readonly { readonly name: string; readonly type: string; readonly query?: unknown }[] };
}

/** dashboardQueries lists every PromQL expression of a Grafana dashboard (rows' nested panels included). */
export function dashboardQueries(dashboard: unknown): DashboardQuery[] {
  const d = dashboard as GrafanaDashboard;
  const out: DashboardQuery[] = [];
  const walk = (panels: readonly GrafanaPanel[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? [])
        if (t.expr !== undefined) out.push({ where: `panel "${p.title ?? ""}" ${t.refId ?? ""}`, expr: t.expr });
      walk(p.panels ?? []);
    }
  };
  walk(d.panels ?? []);
  for (const v of d.templating?.list ?? []) {
    if (v.type !== "query") continue;
    const q = typeof v.query === "string" ? v.query : (v.query as { query?: string } | undefined)?.query;
    if (q !== undefined) out.push({ where: `variable $${v.name}`, expr: q });
  }
  return out;
}
