#!/bin/sh
# Removes from the hub's `pnpm deploy` output what only building needs, where pnpm still links it as a dependency:
# Next's SWC compiler (next.config.mjs is plain JavaScript), TypeScript, Playwright (a peer Next resolves from the
# workspace's e2e tests) and sharp (the dashboard uses no next/image); then trims the next package to what the running
# hub reaches (trim-next.mjs). The hub image runs it after `pnpm deploy`, and
# packages/lab/src/__integration__/images.test.ts runs it before starting the result.
set -eu
out=${1:?usage: prune-hub.sh DEPLOY_OUTPUT_DIR}
node "$(dirname "$0")/trim-next.mjs" "$out"
cd "$out/node_modules/.pnpm"
rm -rf @next+swc-* typescript@* playwright@* playwright-core@* @playwright+test@* sharp@* @img+sharp-*
