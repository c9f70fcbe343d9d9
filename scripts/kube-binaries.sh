#!/usr/bin/env bash
# Ensures a real kube-apiserver, kube-scheduler, kube-controller-manager, kube-proxy and etcd for the tests
# (the tests do not run kube-proxy themselves: scripts/cluster-addons.sh puts it in an image).
#
# The binaries are built once from the Go module proxy (there is no other download here) and cached
# outside the repo, keyed by version:
#   $CACHE/kube/<k8s-version>/bin/{kube-apiserver,kube-scheduler,kube-controller-manager,kube-proxy}
#   $CACHE/etcd/<etcd-version>/bin/etcd
#   $CACHE/assets/kube-<k8s-version>_etcd-<etcd-version>/   (symlinks to all five: one bin dir)
# with CACHE=${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}.
# The build is incremental: a version dir that lacks some binaries (one cached before kube-proxy was on the
# list) gets only those built, each moved in with an atomic rename; the binaries it holds are never rebuilt.
# If KUBEBUILDER_ASSETS names a directory holding kube-apiserver and etcd, that directory is used instead.
#
# Progress goes to stderr; the last (and only) stdout line is the bin dir holding all the binaries.
# Exit 2: a prerequisite (Go) is missing. Override the pins with KUBE_VERSION / ETCD_VERSION.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
# Oldest Go that builds the pinned releases (their go.mod `go` lines).
GO_NEEDED="1.26"

CACHE_ROOT="${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}"
KUBE_DIR="$CACHE_ROOT/kube/$KUBE_VERSION"
ETCD_DIR="$CACHE_ROOT/etcd/$ETCD_VERSION"
ASSETS_DIR="$CACHE_ROOT/assets/kube-${KUBE_VERSION}_etcd-${ETCD_VERSION}"
KUBE_BINS=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy)

log() { echo "kube-binaries: $*" >&2; }
die() {
  echo "kube-binaries: $*" >&2
  exit 2
}

# --- 1. KUBEBUILDER_ASSETS (envtest convention): use it as is, build nothing.
if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  if [[ -x "$KUBEBUILDER_ASSETS/kube-apiserver" && -x "$KUBEBUILDER_ASSETS/etcd" ]]; then
    (cd "$KUBEBUILDER_ASSETS" && pwd -P)
    exit 0
  fi
  log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS holds no kube-apiserver and etcd; using the cache instead"
fi

kube_cached() {
  local b
  for b in "${KUBE_BINS[@]}"; do [[ -x "$KUBE_DIR/bin/$b" ]] || return 1; done
}
# The Kubernetes binaries the cache lacks, one per line.
kube_missing() {
  local b
  for b in "${KUBE_BINS[@]}"; do [[ -x "$KUBE_DIR/bin/$b" ]] || echo "$b"; done
  return 0
}
etcd_cached() { [[ -x "$ETCD_DIR/bin/etcd" ]]; }
assets_ready() {
  local b
  for b in "${KUBE_BINS[@]}" etcd; do [[ -x "$ASSETS_DIR/$b" ]] || return 1; done
}

# --- 2. Fast path: everything cached; no Go needed.
if kube_cached && etcd_cached && assets_ready; then
  echo "$ASSETS_DIR"
  exit 0
fi

# --- 3. Slow path, serialized by a lock so concurrent callers wait for one build.
mkdir -p "$CACHE_ROOT/kube" "$CACHE_ROOT/etcd" "$CACHE_ROOT/assets"
exec 9>"$CACHE_ROOT/.lock"
if ! flock -n 9; then
  log "another build holds $CACHE_ROOT/.lock; waiting for it"
  flock 9
fi

STAGES=()
WORKDIRS=()
cleanup() {
  local d
  for d in "${STAGES[@]}" "${WORKDIRS[@]}"; do [[ -n "$d" ]] && rm -rf "$d"; done
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
# Runs a step in the background and waits for it: a waiting bash runs its traps at once (a
# foreground child would delay them until it finished), so INT/TERM stop the build promptly.
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
rm -rf "$CACHE_ROOT"/kube/.partial-* "$CACHE_ROOT"/etcd/.partial-* "$CACHE_ROOT"/assets/.partial-*

need_go() {
  if ! command -v go >/dev/null 2>&1; then
    die "Go ${GO_NEEDED}+ is needed to build kube-apiserver and etcd the first time (nothing cached in $CACHE_ROOT): install it from https://go.dev/doc/install (or apt-get install golang if your distribution's is new enough), or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd."
  fi
  local v major minor
  v="$(go env GOVERSION 2>/dev/null || true)"
  v="${v#go}"
  major="${v%%.*}"
  minor="${v#*.}"
  minor="${minor%%[!0-9]*}"
  if [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ ]]; then
    local need_minor="${GO_NEEDED#1.}"
    if ((major == 1 && minor < need_minor)); then
      if ((minor < 21)) || [[ "$(go env GOTOOLCHAIN)" == local* ]]; then
        die "Go ${GO_NEEDED}+ is needed to build Kubernetes $KUBE_VERSION, found go$v: install a newer Go from https://go.dev/doc/install (or set GOTOOLCHAIN=auto with Go 1.21+ so go fetches one)."
      fi
      log "go$v is older than $GO_NEEDED; relying on GOTOOLCHAIN to fetch a newer toolchain"
    fi
  fi
}

# Prints the path of a module's go.mod from the module proxy.
mod_gomod() {
  local json
  json="$(go mod download -json "$1")"
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$json"
}

# Writes `-replace=M=M@VERSION` flags, one per line, for each module that the go.mod at $1 both
# requires and replaces with a local directory (kubernetes' staging repos, etcd's sibling modules).
local_replaces() {
  local gomod="$1" version="$2" m
  sed -n -E 's#^[[:space:]]*(replace[[:space:]]+)?([^[:space:]]+)[[:space:]]+=>[[:space:]]+\.{1,2}/.*#\2#p' "$gomod" |
    while read -r m; do
      if grep -Eq "^[[:space:]]*(require[[:space:]]+)?${m//./\\.}[[:space:]]+v" "$gomod"; then
        echo "-replace=$m=$m@$version"
      fi
    done
}

# Both set DIR (not echoed: a $(...) subshell would lose the cleanup registration).
new_workdir() {
  DIR="$(mktemp -d "${TMPDIR:-/tmp}/kubelet-operator-$1.XXXXXX")"
  WORKDIRS+=("$DIR")
}

# A staging dir on the cache's filesystem, so the final mv is an atomic rename.
new_stage() {
  DIR="$(mktemp -d "$1/.partial-XXXXXX")"
  chmod 755 "$DIR"
  STAGES+=("$DIR")
}

etcd_steps() {
  local work="$1" stage="$2" gomod replaces
  cd "$work"
  go mod init kubelet-operator.invalid/etcd-build >/dev/null 2>&1
  gomod="$(mod_gomod "go.etcd.io/etcd/server/v3@$ETCD_VERSION")"
  mapfile -t replaces < <(local_replaces "$gomod" "$ETCD_VERSION")
  go mod edit "-require=go.etcd.io/etcd/server/v3@$ETCD_VERSION" "${replaces[@]}"
  go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$stage/bin/etcd" go.etcd.io/etcd/server/v3
}

kube_steps() {
  local work="$1" stage="$2" staging_version="$3" ldflags="$4" gomod replaces gets b t0
  shift 4
  # The binaries to build: the rest of the arguments.
  local bins=("$@")
  cd "$work"
  go mod init kubelet-operator.invalid/kube-build >/dev/null 2>&1
  gomod="$(mod_gomod "k8s.io/kubernetes@$KUBE_VERSION")"
  mapfile -t replaces < <(local_replaces "$gomod" "$staging_version")
  if ((${#replaces[@]} == 0)); then
    echo "kube-binaries: found no staging modules in $gomod" >&2
    return 1
  fi
  go mod edit "-require=k8s.io/kubernetes@$KUBE_VERSION" "${replaces[@]}"
  gets=()
  for b in "${bins[@]}"; do gets+=("k8s.io/kubernetes/cmd/$b@$KUBE_VERSION"); done
  go get "${gets[@]}"
  # One go build per binary; they share the module and build caches, so later ones reuse packages.
  for b in "${bins[@]}"; do
    t0=$SECONDS
    CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$stage/bin/$b" "k8s.io/kubernetes/cmd/$b"
    echo "kube-binaries: built $b in $((SECONDS - t0))s" >&2
  done
}

build_etcd() {
  local start=$SECONDS work stage
  log "building etcd $ETCD_VERSION from the Go module proxy (once; cached in $ETCD_DIR)"
  new_workdir etcd-build
  work="$DIR"
  new_stage "$CACHE_ROOT/etcd"
  stage="$DIR"
  mkdir -p "$stage/bin"
  run_step etcd_steps "$work" "$stage"
  printf 'etcd %s built with %s in %ss on %s\n' "$ETCD_VERSION" "$(go env GOVERSION)" $((SECONDS - start)) \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$stage/BUILD-INFO"
  rm -rf "$ETCD_DIR"
  mv -T "$stage" "$ETCD_DIR"
  log "etcd $ETCD_VERSION built in $((SECONDS - start))s"
}

# Builds the Kubernetes binaries the cache lacks into a stage dir next to $KUBE_DIR, then moves each into
# $KUBE_DIR/bin with a rename (atomic: a reader sees no file or the whole new one; the binaries already
# there, perhaps running, are not touched).
build_kube() {
  local start=$SECONDS work stage staging_version minor ldflags pkg b missing
  mapfile -t missing < <(kube_missing)
  if [[ -d "$KUBE_DIR/bin" ]] && ((${#missing[@]} < ${#KUBE_BINS[@]})); then
    log "building ${missing[*]} $KUBE_VERSION from the Go module proxy, next to the binaries cached in $KUBE_DIR"
  else
    log "building Kubernetes $KUBE_VERSION (${missing[*]}) from the Go module proxy (once; cached in $KUBE_DIR)."
    log "a cold build takes a long time (tens of minutes on 2 cores)"
  fi
  new_workdir kube-build
  work="$DIR"
  new_stage "$CACHE_ROOT/kube"
  stage="$DIR"
  mkdir -p "$stage/bin"
  # k8s.io/kubernetes v1.Y.Z publishes its staging repos as k8s.io/<name> v0.Y.Z.
  staging_version="v0.${KUBE_VERSION#v1.}"
  minor="${KUBE_VERSION#v1.}"
  minor="${minor%%.*}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean"
  done
  run_step kube_steps "$work" "$stage" "$staging_version" "$ldflags" "${missing[@]}"
  # BUILD-INFO: one line per build that added binaries, oldest first.
  {
    if [[ -f "$KUBE_DIR/BUILD-INFO" ]]; then cat "$KUBE_DIR/BUILD-INFO"; fi
    printf 'kubernetes %s (%s) built with %s in %ss on %s\n' "$KUBE_VERSION" "${missing[*]}" "$(go env GOVERSION)" \
      $((SECONDS - start)) "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } >"$stage/BUILD-INFO"
  if [[ -d "$KUBE_DIR/bin" ]]; then
    for b in "${missing[@]}"; do mv -f -T "$stage/bin/$b" "$KUBE_DIR/bin/$b"; done
    mv -f -T "$stage/BUILD-INFO" "$KUBE_DIR/BUILD-INFO"
  else
    rm -rf "$KUBE_DIR"
    mv -T "$stage" "$KUBE_DIR"
  fi
  log "Kubernetes $KUBE_VERSION (${missing[*]}) built in $((SECONDS - start))s"
}

# The assets dir: a symlink per binary. A new dir is staged and renamed into place; an existing one (say,
# from before kube-proxy was on the list) gets the missing links renamed into it, so it never disappears
# under a reader.
link_assets() {
  local stage b
  new_stage "$CACHE_ROOT/assets"
  stage="$DIR"
  for b in "${KUBE_BINS[@]}"; do ln -s "$KUBE_DIR/bin/$b" "$stage/$b"; done
  ln -s "$ETCD_DIR/bin/etcd" "$stage/etcd"
  if [[ -d "$ASSETS_DIR" && ! -L "$ASSETS_DIR" ]]; then
    for b in "${KUBE_BINS[@]}" etcd; do
      [[ -x "$ASSETS_DIR/$b" ]] || mv -f -T "$stage/$b" "$ASSETS_DIR/$b"
    done
  else
    rm -rf "$ASSETS_DIR"
    mv -T "$stage" "$ASSETS_DIR"
  fi
}

if ! etcd_cached || ! kube_cached; then
  need_go
  etcd_cached || build_etcd
  kube_cached || build_kube
fi
assets_ready || link_assets
echo "$ASSETS_DIR"
