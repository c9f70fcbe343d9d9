#!/usr/bin/env bash
# Ensures a metrics-server binary (the resource metrics API behind `kubectl top`) for `npm run up` and the
# cluster suite. It is built once from the Go module proxy (there is no other download here) and cached
# outside the repo, keyed by version:
#   $CACHE/metrics-server/<version>/bin/metrics-server
# with CACHE=${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}.
#
# Progress goes to stderr; the last (and only) stdout line is the path of the metrics-server binary.
# Exit 2: a prerequisite (Go) is missing. Override the pin with METRICS_SERVER_VERSION.
set -euo pipefail

# The one place the metrics-server release is pinned.
METRICS_SERVER_VERSION="${METRICS_SERVER_VERSION:-v0.8.0}"
# Oldest Go that builds the pinned release (the `go` line of its go.mod).
GO_NEEDED="1.24"

CACHE_ROOT="${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}"
MS_DIR="$CACHE_ROOT/metrics-server/$METRICS_SERVER_VERSION"
MS_BIN="$MS_DIR/bin/metrics-server"
MODULE="sigs.k8s.io/metrics-server"

log() { echo "metrics-server: $*" >&2; }
die() {
  echo "metrics-server: $*" >&2
  exit 2
}
cached() { [[ -x "$MS_BIN" ]]; }

# --- 1. Fast path: cached; no Go needed.
if cached; then
  echo "$MS_BIN"
  exit 0
fi

# --- 2. Slow path, serialized by a lock so concurrent callers wait for one build.
mkdir -p "$CACHE_ROOT/metrics-server"
exec 9>"$CACHE_ROOT/.metrics-server-lock"
if ! flock -n 9; then
  log "another build holds $CACHE_ROOT/.metrics-server-lock; waiting for it"
  flock 9
fi
# The build we waited for may have produced it.
if cached; then
  echo "$MS_BIN"
  exit 0
fi

STAGE=""
cleanup() {
  [[ -n "$STAGE" ]] && rm -rf "$STAGE"
  return 0
}
# Signals a process and all its descendants (the build runs as go -> compile/link children).
kill_tree() {
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$child"; done
  kill -TERM "$1" 2>/dev/null || true
}
BG_PID=""
on_signal() {
  trap - INT TERM
  [[ -n "$BG_PID" ]] && kill_tree "$BG_PID"
  exit "$1"
}
# Runs a step in the background and waits for it, so INT/TERM reach the trap at once instead of
# after the step finishes.
run_step() {
  "$@" &
  BG_PID=$!
  wait "$BG_PID"
  BG_PID=""
}
trap cleanup EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

# Leftovers of a build that was killed hard (we hold the lock, so nobody else is building).
rm -rf "$CACHE_ROOT"/metrics-server/.partial-*

if ! command -v go >/dev/null 2>&1; then
  die "Go ${GO_NEEDED}+ is needed to build metrics-server $METRICS_SERVER_VERSION the first time (nothing cached in $MS_DIR): install it from https://go.dev/doc/install (or apt-get install golang if your distribution's is new enough)."
fi
go_version="$(go env GOVERSION 2>/dev/null || true)"
go_version="${go_version#go}"
go_major="${go_version%%.*}"
go_minor="${go_version#*.}"
go_minor="${go_minor%%[!0-9]*}"
if [[ "$go_major" =~ ^[0-9]+$ && "$go_minor" =~ ^[0-9]+$ ]] && ((go_major == 1 && go_minor < ${GO_NEEDED#1.})); then
  if ((go_minor < 21)) || [[ "$(go env GOTOOLCHAIN)" == local* ]]; then
    die "Go ${GO_NEEDED}+ is needed to build metrics-server $METRICS_SERVER_VERSION, found go$go_version: install a newer Go from https://go.dev/doc/install (or set GOTOOLCHAIN=auto with Go 1.21+ so go fetches one)."
  fi
  log "go$go_version is older than $GO_NEEDED; relying on GOTOOLCHAIN to fetch a newer toolchain"
fi

# A staging dir on the cache's filesystem, so the final mv is an atomic rename.
STAGE="$(mktemp -d "$CACHE_ROOT/metrics-server/.partial-XXXXXX")"
chmod 755 "$STAGE"
start=$SECONDS
log "building $MODULE/cmd/metrics-server@$METRICS_SERVER_VERSION from the Go module proxy (once; cached in $MS_DIR)."
log "a cold build takes a few minutes on 2 cores"

build() {
  local commit ldflags pkg=k8s.io/client-go/pkg/version
  # The release's commit, as the module proxy records it (metrics-server reports it in its version).
  commit="$(go mod download -json "$MODULE@$METRICS_SERVER_VERSION" |
    sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]*\)",\{0,1\}$/\1/p')"
  ldflags="-s -w -X $pkg.gitVersion=$METRICS_SERVER_VERSION -X $pkg.gitTreeState=clean"
  [[ -n "$commit" ]] && ldflags+=" -X $pkg.gitCommit=$commit"
  # metrics-server's go.mod has no local replace directives, so go install works directly.
  CGO_ENABLED=0 GOBIN="$STAGE/bin" go install -trimpath -ldflags "$ldflags" \
    "$MODULE/cmd/metrics-server@$METRICS_SERVER_VERSION"
}
run_step build
[[ -x "$STAGE/bin/metrics-server" ]] || die "the build produced no $STAGE/bin/metrics-server"
printf 'metrics-server %s built with %s in %ss on %s\n' "$METRICS_SERVER_VERSION" "$(go env GOVERSION)" \
  $((SECONDS - start)) "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$STAGE/BUILD-INFO"
rm -rf "$MS_DIR"
mv -T "$STAGE" "$MS_DIR"
STAGE=""
log "metrics-server $METRICS_SERVER_VERSION built in $((SECONDS - start))s"
echo "$MS_BIN"
