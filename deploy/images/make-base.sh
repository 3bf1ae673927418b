#!/usr/bin/env bash
# Makes a Node base image without pulling one, for hosts that cannot reach a container registry: Debian bookworm
# (debootstrap, minbase variant, from the host's Debian mirror) with this host's `node`, its npm and its headers
# copied to /usr/local, where the official node:20-bookworm-slim image keeps them, and the host's trusted CAs (so that
# builds reach the npm registry through a TLS-inspecting proxy the host trusts). Prints the image's name.
#
#   deploy/images/make-base.sh [--engine "podman --runtime runc"]
#
# The tag carries a digest of what went in (this script, the node binary, npm's version), so a second run finds the
# image and returns at once; a new Node or an edit here makes a new one. Needs root, debootstrap and the engine.
set -euo pipefail

ENGINE="podman --runtime runc"
MIRROR=${WHOHAS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
while [ $# -gt 0 ]; do
  case $1 in
    --engine) ENGINE=$2; shift 2 ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "make-base.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

node_bin=$(command -v node)
node_version=$("$node_bin" --version)
node_prefix=$(dirname "$(dirname "$(readlink -f "$node_bin")")")
npm_dir=$node_prefix/lib/node_modules/npm
headers=$node_prefix/include/node
for need in "$npm_dir/package.json" "$headers/node.h"; do
  [ -f "$need" ] || { echo "make-base.sh: $need is missing (Node's npm and headers come from the host)" >&2; exit 1; }
done
npm_version=$("$node_bin" -p "require('$npm_dir/package.json').version")

ca_bundle=/etc/ssl/certs/ca-certificates.crt
key=$(cat "$0" "$node_bin" "$ca_bundle" <(echo "npm $npm_version $MIRROR") | sha256sum | cut -c1-12)
image="localhost/whohas-node-base:${node_version#v}-bookworm-$key"
# shellcheck disable=SC2086 # ENGINE is a command with its global flags
if $ENGINE image exists "$image" 2>/dev/null; then
  echo "$image"
  exit 0
fi

root=$(mktemp -d /var/tmp/whohas-base.XXXXXX)
trap 'rm -rf "$root" "$root.log"' EXIT
echo "make-base.sh: debootstrap bookworm into $root" >&2
debootstrap --variant=minbase --include=ca-certificates bookworm "$root" "$MIRROR" >"$root.log" 2>&1 || {
  tail -n 20 "$root.log" >&2
  exit 1
}
rm -f "$root.log"

# The official image's layout: node, npm and npx in /usr/local/bin, the headers in /usr/local/include/node (native
# addons compile against them; node-gyp would otherwise download them from nodejs.org).
install -D -m 0755 "$node_bin" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/lib/node_modules" "$root/usr/local/include"
cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
cp -a "$headers" "$root/usr/local/include/node"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
# Updates and security fixes as the official Debian images have them.
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
# The host's bundle as a local CA: update-ca-certificates (run again by any later install of ca-certificates) keeps it.
cp "$ca_bundle" "$root/usr/local/share/ca-certificates/host-trusted.crt"
chroot "$root" update-ca-certificates >/dev/null 2>&1
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/log/*

echo "make-base.sh: importing $image" >&2
# shellcheck disable=SC2086
tar -C "$root" -c . | $ENGINE import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=${node_version#v}" \
  --change 'ENV npm_config_nodedir=/usr/local' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["node"]' \
  - "$image" >"$root.log" 2>&1 || {
  cat "$root.log" >&2
  exit 1
}
rm -f "$root.log"
echo "$image"
