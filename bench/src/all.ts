// `pnpm bench`: every benchmark in turn, then one table of every target with its measured figure and whether it was
// met. Exits 1 when a target is missed or a benchmark fails (it is not part of the test command: figures depend on
// the machine, and tests check behaviour).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** BENCHES and how many targets each must print: one missing is a failure, not a smaller table. */
const BENCHES = {
  "analyze-bench": 2,
  "agent-bench": 6,
  "hub-bench": 4,
  "wire-bench": 0,
  "ui-bench": 2,
  "alert-bench": 2,
  "verify-bench": 2,
} as const;

interface Target {
  readonly bench: string;
  readonly target: string;
  readonly met: boolean;
}

/** run runs one benchmark, its output passed through, and returns what it printed. */
function run(name: string): Promise<{ out: string; code: number | null }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [fileURLToPath(new URL(`./${name}.js`, import.meta.url))], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      process.stdout.write(d);
    });
    child.on("close", (code) => resolve({ out, code }));
  });
}

/**
 * targetsOf reads a benchmark's "targets:" (or "target:") lines: each target is "what (met)" or "what (NOT met...)";
 * a target may say met or not for several parts ("x (a: met; b: NOT met)"): it is met only if every part is.
 */
export function targetsOf(bench: string, out: string): Target[] {
  const found: Target[] = [];
  for (const line of out.split("\n")) {
    const m = /^targets?: (.*)$/.exec(line.trim());
    if (m === null) continue;
    let depth = 0;
    let start = 0;
    const text = m[1] ?? "";
    for (let i = 0; i <= text.length; i++) {
      const c = text[i];
      if (c === "(") depth++;
      else if (c === ")") depth--;
      else if ((c === "," && depth === 0) || i === text.length) {
        const part = text.slice(start, i).trim();
        start = i + 1;
        if (part === "") continue;
        const verdicts = [...part.matchAll(/\b(NOT met|met)\b/g)].map((v) => v[1]);
        if (verdicts.length === 0) continue;
        found.push({ bench, target: part, met: verdicts.every((v) => v === "met") });
      }
    }
  }
  return found;
}

async function main(): Promise<void> {
  const targets: Target[] = [];
  const failed: string[] = [];
  for (const [b, expected] of Object.entries(BENCHES)) {
    process.stdout.write(`\n== ${b}\n`);
    const { out, code } = await run(b);
    const t = targetsOf(b, out);
    if (code !== 0 || t.length !== expected)
      failed.push(`${b} (exit ${code}${t.length !== expected ? `, ${t.length} of ${expected} targets printed` : ""})`);
    targets.push(...t);
  }
  const width = Math.max(...targets.map((t) => t.target.length), 10);
  const lines = ["", "== every target", "", `${"benchmark".padEnd(14)} ${"target".padEnd(width)}  result`];
  for (const t of targets) lines.push(`${t.bench.padEnd(14)} ${t.target.padEnd(width)}  ${t.met ? "met" : "NOT MET"}`);
  const missed = targets.filter((t) => !t.met).length;
  lines.push(
    "",
    `${targets.length - missed} of ${targets.length} targets met${failed.length > 0 ? `; failed to run: ${failed.join(", ")}` : ""}`,
  );
  process.stdout.write(lines.join("\n") + "\n");
  if (missed > 0 || failed.length > 0) process.exitCode = 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void main();
