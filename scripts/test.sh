#!/usr/bin/env bash
# The whole test suite: formatting (prettier, sherif), lint, typecheck, unit tests, integration tests in the network
# lab (real namespaces, real kernels), and e2e tests in Chromium. Does its own set-up first. Needs root (the lab
# creates namespaces).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
export NEXT_TELEMETRY_DISABLED=1 TURBO_TELEMETRY_DISABLED=1

logs=$(mktemp -d /tmp/whohas-test.XXXXXX)
failed_stages=()
stage() {
  local name=$1; shift
  printf '\n\033[1m== %s\033[0m\n' "$name"
  if ! "$@" 2>&1 | tee "$logs/$name.log"; then failed_stages+=("$name"); fi
}

# Leftovers of a killed run would only waste memory: remove labs whose process is gone.
node packages/lab/dist/cli.js gc

# The container images take minutes to build (cold, on a new machine): they are built in the background beside the
# format, static and unit stages, which time nothing, for the integration stage's container test, which waits for
# them (packages/lab/src/__integration__/container-images.test.ts; run alone, that test builds them itself).
export WHOHAS_SUITE_IMAGES_NAME="localhost/whohas-suite-$$" WHOHAS_SUITE_IMAGES_TAG="suite"
export WHOHAS_SUITE_IMAGES_LOG="$logs/images-build.txt" WHOHAS_SUITE_IMAGES_STATUS="$logs/images-build.status"
# In a process group of its own (setsid), so that ending the suite ends the whole build.
setsid bash -c '
  nice bash deploy/images/build.sh --podman-host --name "$WHOHAS_SUITE_IMAGES_NAME" --tag "$WHOHAS_SUITE_IMAGES_TAG" \
    >"$WHOHAS_SUITE_IMAGES_LOG" 2>&1
  echo $? >"$WHOHAS_SUITE_IMAGES_STATUS.part" && mv "$WHOHAS_SUITE_IMAGES_STATUS.part" "$WHOHAS_SUITE_IMAGES_STATUS"
' &
images_build=$!
images_done() {
  kill -- -"$images_build" 2>/dev/null
  if command -v podman >/dev/null; then
    podman rmi --force "$WHOHAS_SUITE_IMAGES_NAME/hub:$WHOHAS_SUITE_IMAGES_TAG" "$WHOHAS_SUITE_IMAGES_NAME/agent:$WHOHAS_SUITE_IMAGES_TAG" >/dev/null 2>&1
    # Build stages of earlier commits, untagged: the latest ones stay as the next run's cache.
    podman image prune --force --filter until=24h >/dev/null 2>&1
  fi
}
trap images_done EXIT

stage format bash -c "pnpm format && pnpm exec sherif"
stage static pnpm exec turbo run lint typecheck --output-logs=errors-only
stage unit pnpm exec turbo run test --output-logs=full
# The integration stage runs `pnpm deploy`, which rewrites the lockfile for a moment: not while the build copies the
# checkout. Its container test needs the images anyway.
[ -e "$WHOHAS_SUITE_IMAGES_STATUS" ] || echo "waiting for the container images' build ($WHOHAS_SUITE_IMAGES_LOG)"
wait "$images_build" 2>/dev/null
stage integration pnpm --filter @whohas/lab integration
stage e2e pnpm --filter @whohas/e2e e2e

# One closing line over every runner: vitest prints "Tests  N passed | M failed", Playwright "N passed" / "N failed".
counts=$(sed -E 's/\x1b\[[0-9;]*m//g; s/^@whohas\/[a-z0-9-]+:[a-z]+: //' "$logs"/*.log | awk '
  /^ *Tests +/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } next }
  /^ +[0-9]+ passed( |$)/ { p += $1 }
  /^ +[0-9]+ failed( |$)/ { f += $1 }
  END { printf "%d %d", p, f }')
read -r passed failed <<<"$counts"
echo
if [ ${#failed_stages[@]} -gt 0 ]; then
  echo "failed stages: ${failed_stages[*]} (logs in $logs)"
  [ "$failed" -gt 0 ] || failed=${#failed_stages[@]}
  echo "whohas: $passed passed, $failed failed"
  exit 1
fi
echo "whohas: $passed passed, $failed failed"
