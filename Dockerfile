# kubelet-operator image: compiled JavaScript and production dependencies only, on Node 22 LTS, as a
# non-root user. No HEALTHCHECK: Kubernetes probes /healthz and /readyz (manifests/base/deployment.yaml).
# Without a docker engine, `npm run image` (scripts/image.sh) replays these steps on a stand-in for the base
# image and writes an OCI image tar; scripts/image-build-check.sh runs that image in containerd.

# ---- build: dev dependencies, TypeScript -> dist ------------------------------------------------
FROM node:22-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# tsc emits only .js: the CRI client, the kubelet's local APIs and plugin clients and /metrics load their
# protos (and the pods API its pod.json) at run time from beside the compiled modules, so every one is copied.
RUN npm run build \
    && cd src && find . \( -name '*.proto' -o -name 'pod.json' \) -exec cp --parents {} ../dist/ \;

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
# Node's compile cache (Node 22+), filled at build time: the process starts from its modules' compiled code
# instead of compiling them again (on this image's Node, as its uid, `--help` took 0.40 s at the median of 20
# runs with it against 0.50 s without; bench/README.md, issue #17, 2026-11-28 evening). Node keys the cache by
# its version, the V8 flags and the uid, so it is filled as the runtime uid with the ENTRYPOINT's flags
# (scripts/image-build-check.sh holds the two together and checks that a start reads every module from it);
# under readOnlyRootFilesystem it is read and never written.
ENV NODE_COMPILE_CACHE=/app/.compile-cache
RUN mkdir .compile-cache && chown 65532:65532 .compile-cache
# Numeric, so that runAsNonRoot can verify it; the manifests run as the same uid.
USER 65532:65532
RUN node --heap-growing-percent=100 dist/main.js --help > /dev/null
EXPOSE 8080
# A fixed old-generation growth of 2x (V8 picks up to 4x on a machine with memory to spare) keeps the heap near
# what is live: at 10,000 pods 288 MiB when all are Ready against 352 to 370 with V8's defaults, for the same
# CPU. The young generation is V8's own (16 MiB semi-spaces on Node 20 and 22): 32 MiB saved about 6 % of the
# CPU of a pod start for 30 MiB more RSS, which the memory target cannot spare (bench/README.md, issue #17,
# "V8 flags", "the young generation measured again" and 2026-11-30 (morning)). The benchmarks read these flags
# from here.
ENTRYPOINT ["node", "--heap-growing-percent=100", "dist/main.js"]
