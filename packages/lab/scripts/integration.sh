#!/usr/bin/env bash
# The lab's integration tests (root: real namespaces; build first). The fault tests, which spend most of their six
# minutes waiting out the outages they cause, run in a second vitest beside the other files, each in labs of its own;
# their report follows the others'. Arguments (file filters, -t) go to both. Exit status 1 when either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
faults_log=$(mktemp /tmp/whohas-faults.XXXXXX)
trap 'rm -f "$faults_log"' EXIT
npx vitest run --project faults --passWithNoTests "$@" >"$faults_log" 2>&1 &
faults=$!
npx vitest run --project integration --passWithNoTests "$@"
rest=$?
wait "$faults"
failed_faults=$?
printf '\n== the fault tests (run beside the above)\n'
cat "$faults_log"
[ "$rest" -eq 0 ] && [ "$failed_faults" -eq 0 ]
