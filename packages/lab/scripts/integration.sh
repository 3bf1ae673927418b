#!/usr/bin/env bash
# The lab's integration tests (root: real namespaces; build first). The files that spend most of their time waiting
# (the fault tests' outages, remediation's rollouts; vitest.config.ts lists them) run in a second vitest beside the
# others, each in labs of its own; their report follows the others'. Arguments (file filters, -t) go to both. Exit
# status 1 when either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
beside_log=$(mktemp /tmp/whohas-beside.XXXXXX)
trap 'rm -f "$beside_log"' EXIT
npx vitest run --project beside --passWithNoTests "$@" >"$beside_log" 2>&1 &
beside=$!
npx vitest run --project integration --passWithNoTests "$@"
rest=$?
wait "$beside"
failed_beside=$?
printf '\n== the files run beside the above (fault tests, remediation, ...)\n'
cat "$beside_log"
[ "$rest" -eq 0 ] && [ "$failed_beside" -eq 0 ]
