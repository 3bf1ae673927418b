#!/usr/bin/env bash
# Builds the whohas container images from the repository: NAME/hub:TAG (hub.Dockerfile) and NAME/agent:TAG
# (agent.Dockerfile), then prints each image's size. The two share their build stage, so the second reuses its layers.
#
#   deploy/images/build.sh [options] [hub] [agent]        (both when neither is named)
#
#   --engine CMD    the engine and its global flags (default: docker, or podman when there is no docker)
#   --tag TAG       image tag (default 0.1.0)
#   --name NAME     repository prefix (default whohas): NAME/hub:TAG, NAME/agent:TAG
#   --base IMAGE    the Node base image (the Dockerfiles' NODE_IMAGE; default their pinned node:20...-bookworm-slim)
#   --local-base    make the base here instead of pulling one (make-base.sh: debootstrap bookworm + this host's node)
#   --podman-host   podman as root on a host without registry access or with hybrid cgroups: the same as
#                     --engine "podman --runtime runc" --local-base -- --network host \
#                     --ulimit nofile=1024:1024 --ulimit nproc=1024:1024
#   -- FLAGS...     passed to `ENGINE build` as they are
#
# Examples:
#   deploy/images/build.sh --name registry.example/whohas                  # Docker, the pinned base from Docker Hub
#   deploy/images/build.sh --podman-host --name localhost/whohas           # podman, offline base (scripts/test.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

engine=""
tag=0.1.0
name=whohas
base=""
local_base=false
build_flags=()
images=()
while [ $# -gt 0 ]; do
  case $1 in
    --engine) engine=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --local-base) local_base=true; shift ;;
    --podman-host)
      engine="podman --runtime runc"
      local_base=true
      build_flags+=(--network host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
      shift ;;
    --) shift; build_flags+=("$@"); break ;;
    hub | agent) images+=("$1"); shift ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#images[@]} -gt 0 ] || images=(hub agent)
if [ -z "$engine" ]; then
  if command -v docker >/dev/null; then engine=docker; else engine=podman; fi
fi
if $local_base; then
  [ -z "$base" ] || { echo "build.sh: --base and --local-base exclude each other" >&2; exit 2; }
  base=$(bash "$here/make-base.sh" --engine "$engine")
fi
base_arg=()
[ -z "$base" ] || base_arg=(--build-arg "NODE_IMAGE=$base")

for image in "${images[@]}"; do
  start=$(date +%s)
  # shellcheck disable=SC2086 # engine is a command with its global flags
  # ${a[@]+"${a[@]}"}: an empty array under set -u, which bash before 4.4 (macOS's) calls unbound.
  $engine build ${build_flags[@]+"${build_flags[@]}"} ${base_arg[@]+"${base_arg[@]}"} -f "$here/$image.Dockerfile" -t "$name/$image:$tag" "$root"
  echo "build.sh: $name/$image:$tag built in $(($(date +%s) - start)) s"
done
for image in "${images[@]}"; do
  # shellcheck disable=SC2086
  size=$($engine image inspect --format '{{.Size}}' "$name/$image:$tag")
  echo "build.sh: size $name/$image:$tag $size bytes ($((size / 1000000)) MB)"
done
