// The fault tests' findings, for docs/reliability.md (scripts/reliability.sh): each test that proves a fault's
// outcome records one row with what it checked and what it measured. Recording is off unless the script asks for it.
import { appendFileSync } from "node:fs";

export interface ReliabilityRow {
  readonly fault: string;
  readonly checked: string;
  readonly result: string;
}

/** record appends a row to $WHOHAS_RELIABILITY_OUT (JSON lines) when set; tests call it after their assertions pass. */
export function record(row: ReliabilityRow): void {
  // eslint-disable-next-line no-restricted-properties -- the one switch of this test helper, set by scripts/reliability.sh
  const out = process.env.WHOHAS_RELIABILITY_OUT;
  if (out === undefined || out === "") return;
  appendFileSync(out, `${JSON.stringify(row)}\n`);
}
