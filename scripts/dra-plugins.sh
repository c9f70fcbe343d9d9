#!/usr/bin/env bash
# Ensures the DRA kubelet plugin the DRA manager's e2e test runs as a host process: Kubernetes' own test
# driver (k8s.io/kubernetes/test/e2e/dra/test-driver, whose `kubelet-plugin` subcommand registers through
# plugins_registry/, publishes a ResourceSlice of its node and writes one CDI spec per prepared claim with the
# claim's parameters as env `user_<k>=<v>`).
#
# Built from the Go module proxy at the pinned release, with the staging modules (k8s.io/<name> v0.Y.Z)
# replacing kubernetes' local ones, as scripts/upstream-e2e.sh builds e2e.test. Cached outside the repo:
#   $CACHE/dra/<k8s-version>/bin/dra-test-driver
# with CACHE=${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}.
# Progress goes to stderr; stdout is the binary's path. Exit 2: Go is missing. Override the pin with
# KUBE_VERSION.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
CACHE_ROOT="${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}"
DIR="$CACHE_ROOT/dra/$KUBE_VERSION"
BIN="$DIR/bin/dra-test-driver"

log() { echo "dra-plugins: $*" >&2; }

mkdir -p "$CACHE_ROOT/dra"
exec 9>"$CACHE_ROOT/.dra-lock"
flock 9
if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi
command -v go >/dev/null || {
  log "Go is needed to build the DRA test driver $KUBE_VERSION the first time (nothing cached in $DIR)"
  exit 2
}

work="$(mktemp -d)"
stage="$(mktemp -d "$CACHE_ROOT/dra/.stage.XXXXXX")"
trap 'rm -rf "$work" "$stage"' EXIT
log "building the DRA test driver of Kubernetes $KUBE_VERSION from the Go module proxy (once; cached in $DIR)"
cd "$work"
go mod init kubelet-operator.invalid/dra-build >/dev/null 2>&1
json="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION")"
gomod="$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")"
staging_version="v0.${KUBE_VERSION#v1.}"
# Every staging module kubernetes both requires and replaces with a local directory.
mapfile -t replaces < <(
  sed -n -E 's#^[[:space:]]*(replace[[:space:]]+)?([^[:space:]]+)[[:space:]]+=>[[:space:]]+\.{1,2}/.*#\2#p' "$gomod" |
    while read -r m; do
      if grep -Eq "^[[:space:]]*(require[[:space:]]+)?${m//./\\.}[[:space:]]+v" "$gomod"; then
        echo "-replace=$m=$m@$staging_version"
      fi
    done
)
((${#replaces[@]} > 0)) || {
  log "found no staging modules in $gomod"
  exit 1
}
go mod edit "-require=k8s.io/kubernetes@$KUBE_VERSION" "${replaces[@]}"
go get "k8s.io/kubernetes/test/e2e/dra/test-driver@$KUBE_VERSION" >&2
mkdir -p "$stage/bin"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$stage/bin/dra-test-driver" k8s.io/kubernetes/test/e2e/dra/test-driver >&2
printf 'kubernetes %s dra-test-driver built with %s on %s\n' "$KUBE_VERSION" "$(go env GOVERSION)" \
  "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$stage/BUILD-INFO"
rm -rf "$DIR"
mv -T "$stage" "$DIR"
trap 'rm -rf "$work"' EXIT
echo "$BIN"
