#!/usr/bin/env bash
# Ensures a kwok binary for the scale benchmark (bench/), built once from the Go module proxy and cached
# outside the repo, keyed by version:
#   $CACHE/kwok/<kwok-version>/bin/kwok
#   $CACHE/kwok/<kwok-version>/stages/*.yaml   (kwok's own "fast" node and pod stages, from the module)
#   $CACHE/kwok/<kwok-version>/rbac/           (kwok's own install of its ServiceAccount: ClusterRole, binding,
#                                               FlowSchema; a kustomization, from the module)
# with CACHE=${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}.
#
# kwok run standalone has no built-in stages (kwokctl writes them into its config): the benchmark passes
# these files with --config, exactly as kwokctl's defaults are: node-initialize, node-heartbeat-with-lease,
# pod-ready, pod-complete, pod-delete.
#
# The benchmark installs kwok's ServiceAccount with rbac/ as kwok's manifests do, and runs kwok with its token.
#
# Progress goes to stderr; the last (and only) stdout line is the kwok dir (bin/kwok, stages/ and rbac/).
# Exit 2: a prerequisite (Go) is missing. Override the pin with KWOK_VERSION.
set -euo pipefail

# The one place the kwok release is pinned (bench/lib/kwok.ts reads it from here).
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"

CACHE_ROOT="${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}"
KWOK_DIR="$CACHE_ROOT/kwok/$KWOK_VERSION"

log() { echo "kwok-binary: $*" >&2; }
die() {
  echo "kwok-binary: $*" >&2
  exit 2
}

STAGE_FILES=(
  node/fast/node-initialize.yaml
  node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
  pod/fast/pod-ready.yaml
  pod/fast/pod-complete.yaml
  pod/fast/pod-delete.yaml
)
cached() {
  [[ -x "$KWOK_DIR/bin/kwok" && -f "$KWOK_DIR/stages/pod-delete.yaml" && -f "$KWOK_DIR/rbac/kustomization.yaml" ]]
}

if cached; then
  echo "$KWOK_DIR"
  exit 0
fi

mkdir -p "$CACHE_ROOT/kwok"
exec 9>"$CACHE_ROOT/.kwok-lock"
if ! flock -n 9; then
  log "another build holds $CACHE_ROOT/.kwok-lock; waiting for it"
  flock 9
fi
if cached; then
  echo "$KWOK_DIR"
  exit 0
fi

command -v go >/dev/null 2>&1 ||
  die "Go is needed to build kwok $KWOK_VERSION the first time: install it from https://go.dev/doc/install"

STAGE="$(mktemp -d "$CACHE_ROOT/kwok/.partial-XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
start=$SECONDS
log "building sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION from the Go module proxy (once; cached in $KWOK_DIR)"
# kwok's go.mod has no local replace directives, so go install works directly.
CGO_ENABLED=0 GOBIN="$STAGE/bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
MOD_DIR="$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
[[ -d "$MOD_DIR/kustomize/stage" ]] || die "kwok $KWOK_VERSION: no kustomize/stage in the module at $MOD_DIR"
mkdir -p "$STAGE/stages"
for f in "${STAGE_FILES[@]}"; do cp "$MOD_DIR/kustomize/stage/$f" "$STAGE/stages/"; done
[[ -f "$MOD_DIR/kustomize/rbac/kustomization.yaml" ]] || die "kwok $KWOK_VERSION: no kustomize/rbac in the module"
mkdir -p "$STAGE/rbac"
cp "$MOD_DIR"/kustomize/rbac/*.yaml "$STAGE/rbac/"
printf 'kwok %s built with %s in %ss on %s\n' "$KWOK_VERSION" "$(go env GOVERSION)" $((SECONDS - start)) \
  "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$STAGE/BUILD-INFO"
chmod 755 "$STAGE"
rm -rf "$KWOK_DIR"
mv -T "$STAGE" "$KWOK_DIR"
log "kwok $KWOK_VERSION built in $((SECONDS - start))s"
echo "$KWOK_DIR"
