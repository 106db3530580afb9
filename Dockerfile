# bizops-sync: the daemon (default command) and every other bizops-sync command, in one image.
#
#   docker build -t bizops-sync .
#   docker run -d --name bizops-sync -v bizops-data:/data -p 127.0.0.1:8080:8080 \
#     -e BIZOPS_BASE_URL=https://api.example.com -e BIZOPS_TOKEN=... bizops-sync
#   docker exec bizops-sync node bin/bizops-sync.js status
#
# Node 24 runs the TypeScript sources directly (type stripping): there is no build output, only
# dependencies. better-sqlite3 ships prebuilt binaries for glibc x64/arm64, so no compiler is needed.

ARG NODE_IMAGE=node:24-slim

# Build stage: every dependency, a typecheck of the sources, then the dev dependencies removed.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY cli ./cli
COPY jobs ./jobs
COPY src ./src
COPY config ./config
RUN npx tsc -p tsconfig.build.json --noEmit \
 && npm prune --omit=dev --no-audit --no-fund \
 && npm cache clean --force

# Runtime stage: production dependencies and the sources, run as the unprivileged `node` user.
FROM ${NODE_IMAGE} AS runtime
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
COPY --from=build /app/node_modules ./node_modules
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
# Liveness of the daemon's HTTP port (slim images have no curl: node's fetch does it).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.BIZOPS_HTTP_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The daemon stops within 10 s of SIGTERM; `docker stop` waits 10 s by default (use -t 15 for margin).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--", "node", "bin/bizops-sync.js"]
CMD ["daemon"]
