# syntax=docker/dockerfile:1
# The whohas agent and CLI (`whohas agent`, `whohas analyze`, `whohas probe`): libpcap capture on each node.
# Build from the repository root:  docker build -f deploy/images/agent.Dockerfile -t whohas/agent:0.1.0 .
# Same build steps as scripts/setup.sh; the run stage adds only libpcap's runtime and iproute2 (`ip -j addr`, which
# the agent reads for kube-ipvs0 and the node's interfaces).
ARG NODE_IMAGE=node:20.20.2-bookworm-slim

FROM ${NODE_IMAGE} AS build
# The build stage is the same text in hub.Dockerfile and agent.Dockerfile up to `pnpm deploy`, so that an engine
# building both reuses its layers. better-sqlite3 and cap compile native addons (cap needs libpcap's headers even
# for the hub, which never captures).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ libpcap-dev ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN npm install -g --no-fund --no-audit pnpm@10.34.9
ENV NEXT_TELEMETRY_DISABLED=1 TURBO_TELEMETRY_DISABLED=1
WORKDIR /src
# Dependencies before sources, so that editing the code reuses these layers: downloads from the lockfile alone
# (`pnpm fetch`), then the install (native addons compile here) from the workspace's package.json files.
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
COPY patches patches
RUN pnpm fetch --frozen-lockfile
COPY apps/agent/package.json apps/agent/
COPY apps/web/package.json apps/web/
COPY bench/package.json bench/
COPY e2e/package.json e2e/
COPY packages/capture/package.json packages/capture/
COPY packages/core/package.json packages/core/
COPY packages/lab/package.json packages/lab/
COPY tooling/eslint/package.json tooling/eslint/
COPY tooling/prettier/package.json tooling/prettier/
COPY tooling/typescript/package.json tooling/typescript/
RUN pnpm install --offline --frozen-lockfile
COPY . .
RUN pnpm install --offline --frozen-lockfile \
 && pnpm exec turbo run build --filter=@whohas/web... --filter=@whohas/agent...
RUN pnpm --filter @whohas/agent deploy --prod --legacy /out

FROM ${NODE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends libpcap0.8 iproute2 \
 && rm -rf /var/lib/apt/lists/*
# A base made by make-base.sh trusts the build host's CAs (a TLS proxy in front of the registries) and points node-gyp
# at its headers, for the build: the running image does neither. Nothing to undo on the official Node image.
ENV NODE_EXTRA_CA_CERTS="" npm_config_nodedir=""
RUN if [ -e /usr/local/share/ca-certificates/host-trusted.crt ]; then \
      rm /usr/local/share/ca-certificates/host-trusted.crt && update-ca-certificates --fresh >/dev/null; \
    fi
WORKDIR /app
COPY --from=build --chown=0:0 /out /app
# Root inside the container, but the DaemonSet drops every capability except NET_RAW and NET_ADMIN, forbids
# privilege escalation and mounts the root filesystem read-only (deploy/base/agent/daemonset.yaml).
ENTRYPOINT ["node", "/app/dist/main.js"]
CMD ["--help"]
