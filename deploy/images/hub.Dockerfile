# syntax=docker/dockerfile:1
# The whohas hub: dashboard, tRPC, read API and the agents' WebSocket in one Node process.
# Build from the repository root:  docker build -f deploy/images/hub.Dockerfile -t whohas/hub:0.1.0 .
# The build steps are scripts/setup.sh's (pnpm pinned, frozen lockfile, turbo build), then `pnpm deploy` copies the
# hub with its production dependencies only. The run stage has no compiler, no pnpm and no libpcap.
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
RUN pnpm --filter @whohas/web deploy --prod --legacy /out \
 && sh deploy/images/prune-hub.sh /out

FROM ${NODE_IMAGE}
ENV NODE_ENV=production NEXT_TELEMETRY_DISABLED=1
# A base made by make-base.sh trusts the build host's CAs (a TLS proxy in front of the registries) and points node-gyp
# at its headers, for the build: the running image does neither. Nothing to undo on the official Node image.
ENV NODE_EXTRA_CA_CERTS="" npm_config_nodedir=""
RUN if [ -e /usr/local/share/ca-certificates/host-trusted.crt ]; then \
      rm /usr/local/share/ca-certificates/host-trusted.crt && update-ca-certificates --fresh >/dev/null; \
    fi
WORKDIR /app
COPY --from=build --chown=0:0 /out /app
# Not root; the data directory is the PersistentVolume (deploy/base/hub/deployment.yaml mounts it, fsGroup 10001).
RUN mkdir -p /var/lib/whohas && chown 10001:10001 /var/lib/whohas
USER 10001:10001
EXPOSE 3000 9473
VOLUME ["/var/lib/whohas"]
ENTRYPOINT ["node", "/app/bin/whohas-hub.js"]
