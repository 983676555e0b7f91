# tenet-server as a container image: built JavaScript only, installed from the packed packages
# exactly as `npm i @tenet/server` installs them, run as a non-root user on a read-only root
# filesystem (state lives in /var/lib/tenet; /tmp should be writable).
#   docker build -t tenet/tenet-server:0.2.0 .
ARG NODE_IMAGE=node:20-bookworm-slim

# 1. Build and pack every package (prepack compiles each one).
FROM ${NODE_IMAGE} AS build
RUN npm install -g pnpm@10
WORKDIR /src
COPY . .
RUN pnpm install --frozen-lockfile && pnpm -r pack --pack-destination /packs

# 2. Install the server from its tarballs, with production dependencies from the registry.
FROM ${NODE_IMAGE} AS install
WORKDIR /opt/tenet
COPY --from=build /packs /packs
RUN echo '{"name":"tenet-image","private":true}' > package.json && \
    npm install --omit=dev --no-audit --no-fund \
      /packs/tenet-server-*.tgz /packs/tenet-core-*.tgz /packs/tenet-adapters-memory-*.tgz \
      /packs/tenet-adapters-postgres-*.tgz /packs/tenet-adapters-k8s-*.tgz

# 3. The runtime: Node and the installed server, nothing else.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    TENET_HOST=0.0.0.0 \
    TENET_PORT=8080 \
    TENET_DATA_DIR=/var/lib/tenet
COPY --from=install /opt/tenet /opt/tenet
RUN mkdir -p /var/lib/tenet && chown 1000:1000 /var/lib/tenet
# The image's `node` user.
USER 1000:1000
WORKDIR /var/lib/tenet
VOLUME ["/var/lib/tenet"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.TENET_PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Node is PID 1 and handles SIGTERM itself: it stops accepting, drains, then exits.
ENTRYPOINT ["node", "/opt/tenet/node_modules/@tenet/server/dist/bin.js"]
