# kubelet-operator image: compiled JavaScript and production dependencies only, on Node 22 LTS, as a
# non-root user. No HEALTHCHECK: Kubernetes probes /healthz and /readyz (manifests/base/deployment.yaml).
# Without a docker engine, scripts/image-build-check.sh runs these same steps in a temp dir.

# ---- build: dev dependencies, TypeScript -> dist ------------------------------------------------
FROM node:22-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# tsc emits only .js: the CRI client loads its proto at run time from beside the compiled module.
RUN npm run build \
    && mkdir -p dist/runtime/cri/proto \
    && cp src/runtime/cri/proto/api.proto dist/runtime/cri/proto/api.proto

# ---- runtime: production dependencies + dist ----------------------------------------------------
FROM node:22-bookworm-slim
ARG VERSION=0.1.0
ARG SOURCE=https://github.com/kubelet-operator/kubelet-operator
LABEL org.opencontainers.image.title="kubelet-operator" \
      org.opencontainers.image.description="Plays the kubelet for VirtualNode objects" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /src/dist ./dist
# Numeric, so that runAsNonRoot can verify it; the manifests run as the same uid.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["node", "dist/main.js"]
