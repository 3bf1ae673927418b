// How every benchmark prints its verdicts: bench/all.ts reads these lines back ("targets: what (figure: met), ...").

/** met is a target's verdict as the benchmarks print it. */
export const met = (ok: boolean): string => (ok ? "met" : "NOT met");

/** target is one target: "what (figure: met)", or "what (met)" without a figure. */
export const target = (what: string, figure: string, ok: boolean): string => `${what} (${figure === "" ? "" : `${figure}: `}${met(ok)})`;

/** targets is a benchmark's line of targets, each made by target(). */
export const targets = (...each: readonly string[]): string => `${each.length === 1 ? "target" : "targets"}: ${each.join(", ")}`;

/** cells lays out one row of a table: the first cell padded to its width on the right, the others on the left. */
export const cells = (widths: readonly number[], ...values: readonly string[]): string =>
  values.map((v, i) => (i === 0 ? v.padEnd(widths[0] ?? 0) : v.padStart(widths[i] ?? 0))).join(" ");
