#!/usr/bin/env bash
# The demo: set-up, then a network lab of three nodes that all answer ARP for every VIP (kube-proxy IPVS with
# strictARP false), one agent per node, a client asking for the VIPs, and the hub with its dashboard.
# Ctrl-C stops everything and removes the lab. PORT picks the dashboard port (default 3000); REPLICAS=2 runs two hub
# replicas on PostgreSQL (WHOHAS_STORAGE_URL, or a throwaway one), one leading, one standing by; CLUSTERS=2 runs a
# fleet of two clusters (two labs, two hubs) on such a PostgreSQL, both on each hub's Clusters page.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node packages/lab/dist/cli.js demo --port "${PORT:-3000}" --nodes "${NODES:-3}" --vips "${VIPS:-3}" --replicas "${REPLICAS:-1}" --clusters "${CLUSTERS:-1}"
