#!/usr/bin/env bash
# Runs the fault tests in the lab (root: real namespaces) and writes their results to docs/reliability.md.
# Takes about 9 minutes: the hub is stopped for 2 minutes and the API server for 1, as the faults say.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
rows=$(mktemp /tmp/whohas-reliability.XXXXXX)
trap 'rm -f "$rows"' EXIT
# The fault tests, the capture churn (probes opening and closing captures), the two-operators check, and how fast a
# second IPv6 responder shows.
WHOHAS_RELIABILITY_OUT=$rows pnpm --filter @whohas/lab exec vitest run --project integration --project beside \
  src/__integration__/faults.test.ts src/__integration__/capture-churn.test.ts src/__integration__/remediation.test.ts \
  src/__integration__/ipv6-vlans.test.ts
node scripts/reliability-doc.mjs "$rows" docs/reliability.md
echo "wrote docs/reliability.md ($(wc -l <"$rows") faults)"
