# bizops-sync: the daemon (default command) and every other bizops-sync command, in one image.
#
#   docker build -t bizops-sync .
#   docker run -d --name bizops-sync -v bizops-data:/data -p 127.0.0.1:8080:8080 \
#     -e BIZOPS_BASE_URL=https://api.example.com -e BIZOPS_TOKEN=... bizops-sync
#   docker exec bizops-sync node bin/bizops-sync.js status
#   docker run --rm -v bizops-data:/data:ro bizops-sync status      (a one-off command on the daemon's volume)
#
# Several companies (a config file with "connections"): mount it as /app/config/bizops-sync.json and
# give each connection its own file on the volume, -e 'BIZOPS_DB=/data/{connection}.db': the
# BIZOPS_DB set below would be every connection's one file, which the configuration check refuses.
#
# Node 24 runs the TypeScript sources directly (type stripping): there is no build output, only
# dependencies. better-sqlite3 ships prebuilt binaries for glibc x64/arm64, so no compiler is needed.
#
# The API simulator (packages/simulator, a development package) is not in this image: `simulate` and
# `demo` say so and exit 2. docker-compose.yml builds the `simulator` target below for its profile.

# Pinned by version: a rebuild gets the same Node.js (bump it here, and in docker-compose.yml's comment).
ARG NODE_IMAGE=node:24.21.0-slim

# Build stage: every dependency, a typecheck of the sources, then the dev dependencies removed.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci links the workspace packages the lockfile names: their manifests must be there first.
COPY packages/simulator/package.json ./packages/simulator/
COPY packages/client/package.json ./packages/client/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
# simulate and demo import the simulator (when run), so the typecheck reads its sources.
COPY packages/simulator/src ./packages/simulator/src
COPY bin ./bin
COPY cli ./cli
COPY jobs ./jobs
COPY src ./src
COPY config ./config
RUN npx tsc -p tsconfig.build.json --noEmit \
 && npm prune --omit=dev --no-audit --no-fund \
 && npm cache clean --force

# Development target, for docker-compose's "simulator" profile (docker build --target simulator):
# the build stage as it is, production dependencies plus the simulator workspace, which npm keeps
# through --omit=dev (a workspace is neither a dependency nor a devDependency to npm).
FROM build AS simulator
USER node
EXPOSE 4010
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:4010/__admin/state').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "bin/bizops-sync.js"]
CMD ["simulate", "--host", "0.0.0.0", "--port", "4010"]

# The runtime's node_modules: --workspaces=false drops the workspace links that --omit=dev keeps,
# so nothing of the simulator reaches the runtime stage (checked, in case npm ever changes).
FROM build AS production-dependencies
RUN npm prune --omit=dev --workspaces=false --no-audit --no-fund \
 && test ! -e node_modules/@bizops-sync/simulator && test ! -L node_modules/@bizops-sync/simulator

# Runtime stage: production dependencies and the sources, run as the unprivileged `node` user.
FROM ${NODE_IMAGE} AS runtime
# OCI image labels (docker inspect, registries). VERSION follows package.json; REVISION: the git commit
# (docker build --build-arg REVISION=$(git rev-parse HEAD) .).
ARG NODE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="bizops-sync" \
      org.opencontainers.image.description="Integration sync worker for the Business Operations Public API: a mirror, a changelog with signed webhooks, and a rate-limit-aware write queue" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
# tini as PID 1 forwards SIGTERM/SIGINT to node (graceful stop: checkpoints kept, exit 0) and reaps zombies.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    BIZOPS_DB=/data/mirror.db \
    BIZOPS_HTTP_HOST=0.0.0.0 \
    BIZOPS_HTTP_PORT=8080 \
    BIZOPS_LOG_FORMAT=json
WORKDIR /app
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/bin ./bin
COPY --from=build /app/cli ./cli
COPY --from=build /app/jobs ./jobs
COPY --from=build /app/src ./src
COPY --from=build /app/config ./config
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
# Liveness: the daemon's /healthz when the container runs `daemon`; a one-off command (`docker run …
# backfill`) has no port and is healthy while it runs (bin/container-health.js reads PID 1's command).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "bin/container-health.js"]
# The daemon stops within 10 s of SIGTERM; `docker stop` waits 10 s by default (use -t 15 for margin).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--max-semi-space-size=16", "bin/bizops-sync.js"]
CMD ["daemon"]
