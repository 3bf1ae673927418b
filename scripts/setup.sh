#!/usr/bin/env bash
# Idempotent set-up on a fresh Debian 12 machine (root, Node 20 and npm): system packages, pinned pnpm,
# dependencies, build. scripts/demo.sh and scripts/test.sh run it first; running it again does only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PNPM_VERSION=10.34.9
export NEXT_TELEMETRY_DISABLED=1 TURBO_TELEMETRY_DISABLED=1

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

# System packages: libpcap headers for the capture addon, iproute2 for the lab, arping as an independent ARP
# client in tests, tcpdump and tshark as independent capture writers (tests) and reference tools (bench/),
# Chromium for the e2e tests, podman with runc and debootstrap to build and run the container images on a base made
# here (deploy/images/build.sh --podman-host), PostgreSQL to run a throwaway server for the storage tests (the
# second engine the hub runs on). Debian's packages only (no browser downloads here).
missing=()
[ -f /usr/include/pcap/pcap.h ] || missing+=(libpcap-dev)
command -v ip >/dev/null || missing+=(iproute2)
command -v arping >/dev/null || missing+=(arping)
command -v tcpdump >/dev/null || missing+=(tcpdump)
command -v tshark >/dev/null || missing+=(tshark)
command -v taskset >/dev/null || missing+=(util-linux)
command -v chromium >/dev/null || missing+=(chromium)
command -v make >/dev/null || missing+=(make)
[ -x /usr/bin/time ] || missing+=(time)
command -v podman >/dev/null || missing+=(podman)
[ -x /usr/sbin/runc ] || missing+=(runc)
[ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
command -v g++ >/dev/null || missing+=(g++)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: these Debian packages are missing: ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ "$(pnpm --version 2>/dev/null || true)" != "$PNPM_VERSION" ]; then
  say "installing pnpm $PNPM_VERSION"
  npm install -g --no-fund --no-audit "pnpm@$PNPM_VERSION" >/dev/null
fi

say "installing dependencies"
pnpm install --frozen-lockfile --reporter=append-only 2>&1 | grep -vE '^\.\.\./|gyp info|^$' | tail -n 5 || true
test -d node_modules/.pnpm || { echo "setup: pnpm install failed" >&2; exit 1; }

say "building"
pnpm exec turbo run build --output-logs=errors-only
