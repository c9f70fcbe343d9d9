#!/usr/bin/env bash
# The upstream Kubernetes e2e suite's binaries and images, for running it against our nodes.
# See shared/docs/UPSTREAM-E2E.md.
#
#   upstream-e2e.sh build           builds e2e.test, agnhost, kubectl and the ginkgo CLI from the Go module proxy
#   upstream-e2e.sh images          builds the e2e test images as OCI image layout tars (needs `build`)
#   upstream-e2e.sh import <sock>   imports those images into containerd's k8s.io namespace at <sock>
#
# build: k8s.io/kubernetes at KUBE_VERSION (default: the pin in scripts/kube-binaries.sh), built in a
#   throwaway module like kube-binaries.sh does, cached outside the repo:
#     $CACHE/e2e/<k8s-version>/bin/{e2e.test,agnhost,ginkgo,kubectl}
#     $CACHE/e2e/<k8s-version>/files/   (agnhost's porter certs and pause.c, copied from the module, so
#                                        `images` needs no Go afterwards)
#   with CACHE=${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}. Holds
#   $CACHE/.lock while building (as kube-binaries.sh does), so it waits for a running kube build.
#   The last stdout line is the bin dir.
# images: stand-ins under the exact upstream names and tags that `e2e.test --list-images` shows for the
#   images the NodeConformance specs of [sig-node], [sig-storage] and [sig-network] run (busybox,
#   agnhost, nginx, httpd, nonroot, nonewprivs, glibc-dns-testing, pause), built from Debian's
#   busybox-static and bash-static (apt-get installed when missing), the agnhost binary and a static
#   pause. Images the suite expects to be unpullable (invalid or private registries) are never built.
#   Cached in $CACHE/e2e-images/<recipe key>/; prints one line per tar: `<path> <name> [alias...]`.
# import: `images`, then `ctr -n k8s.io images import` of every tar whose names are not all present
#   with the same digest already.
#
# Progress goes to stderr. Exit 0: done; 1: a step failed; 2: a prerequisite (Go, root, a package, the
# `build` output) is missing; 64: usage.
set -euo pipefail
# Errors inside $(...) stop the script too.
shopt -s inherit_errexit

SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The OCI image layout writer shared with containerd.sh (build_image, deterministic_tar, image_arch, ...).
# shellcheck source=lib/oci.sh source-path=SCRIPTDIR
source "$SCRIPTS_DIR/lib/oci.sh"
OCI_CREATED_BY='kubelet-operator scripts/upstream-e2e.sh'

log() { echo "upstream-e2e: $*" >&2; }
fail() {
  echo "upstream-e2e: $*" >&2
  exit 1
}
die() {
  echo "upstream-e2e: $*" >&2
  exit 2
}
usage() {
  echo "usage: $0 build | images | import <containerd-socket>" >&2
  exit 64
}

# One pin for the whole project: kube-binaries.sh's default, unless KUBE_VERSION is set.
if [[ -z "${KUBE_VERSION:-}" ]]; then
  # shellcheck disable=SC2016 # the pattern matches the literal text `${KUBE_VERSION:-v…}`
  KUBE_VERSION="$(sed -n 's/^KUBE_VERSION="\${KUBE_VERSION:-\(v[0-9][^}"]*\)}"$/\1/p' "$SCRIPTS_DIR/kube-binaries.sh" | head -n 1)"
  [[ -n "$KUBE_VERSION" ]] || fail "cannot read the default KUBE_VERSION from $SCRIPTS_DIR/kube-binaries.sh"
fi
# Oldest Go that builds the pinned release (its go.mod `go` line); as in kube-binaries.sh.
GO_NEEDED="1.26"

CACHE_ROOT="${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}"
E2E_DIR="$CACHE_ROOT/e2e/$KUBE_VERSION"
E2E_BINS=(e2e.test agnhost ginkgo kubectl)
E2E_FILES=(localhost.crt localhost.key pause.c)

# ---------------------------------------------------------------------------------------------- build

e2e_cached() {
  local f
  for f in "${E2E_BINS[@]}"; do [[ -x "$E2E_DIR/bin/$f" ]] || return 1; done
  for f in "${E2E_FILES[@]}"; do [[ -s "$E2E_DIR/files/$f" ]] || return 1; done
}

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

need_go() {
  if ! command -v go >/dev/null 2>&1; then
    die "Go ${GO_NEEDED}+ is needed to build the e2e binaries the first time (nothing cached in $E2E_DIR): install it from https://go.dev/doc/install."
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
# requires and replaces with a local directory (kubernetes' staging repos).
local_replaces() {
  local gomod="$1" version="$2" m
  sed -n -E 's#^[[:space:]]*(replace[[:space:]]+)?([^[:space:]]+)[[:space:]]+=>[[:space:]]+\.{1,2}/.*#\2#p' "$gomod" |
    while read -r m; do
      if grep -Eq "^[[:space:]]*(require[[:space:]]+)?${m//./\\.}[[:space:]]+v" "$gomod"; then
        echo "-replace=$m=$m@$version"
      fi
    done
}

# The version of module $2 that the go.mod at $1 requires.
required_version() {
  sed -n -E "s#^[[:space:]]*(require[[:space:]]+)?${2//./\\.}[[:space:]]+(v[^[:space:]]+).*#\\2#p" "$1" | head -n 1
}

e2e_steps() {
  local work="$1" stage="$2" ldflags="$3" staging_version gomod replaces ginkgo_version got moddir t0
  cd "$work"
  go mod init kubelet-operator.invalid/e2e-build >/dev/null 2>&1
  gomod="$(mod_gomod "k8s.io/kubernetes@$KUBE_VERSION")"
  # k8s.io/kubernetes v1.Y.Z publishes its staging repos as k8s.io/<name> v0.Y.Z.
  staging_version="v0.${KUBE_VERSION#v1.}"
  mapfile -t replaces < <(local_replaces "$gomod" "$staging_version")
  if ((${#replaces[@]} == 0)); then
    echo "upstream-e2e: found no staging modules in $gomod" >&2
    return 1
  fi
  ginkgo_version="$(required_version "$gomod" github.com/onsi/ginkgo/v2)"
  if [[ -z "$ginkgo_version" ]]; then
    echo "upstream-e2e: $gomod requires no github.com/onsi/ginkgo/v2" >&2
    return 1
  fi
  go mod edit "-require=k8s.io/kubernetes@$KUBE_VERSION" "${replaces[@]}"
  # -t: the e2e suite is a test package; its imports are test-only.
  go get -t "k8s.io/kubernetes/test/e2e@$KUBE_VERSION" "k8s.io/kubernetes/test/images/agnhost@$KUBE_VERSION" \
    "k8s.io/kubernetes/cmd/kubectl@$KUBE_VERSION" "github.com/onsi/ginkgo/v2/ginkgo@$ginkgo_version"
  got="$(go list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)"
  if [[ "$got" != "$ginkgo_version" ]]; then
    echo "upstream-e2e: the build module selected ginkgo $got, kubernetes $KUBE_VERSION requires $ginkgo_version" >&2
    return 1
  fi

  t0=$SECONDS
  CGO_ENABLED=0 go test -c -trimpath -ldflags "$ldflags" -vet=off -o "$stage/bin/e2e.test" k8s.io/kubernetes/test/e2e
  echo "e2e.test: $((SECONDS - t0))s" >>"$stage/TIMES"
  echo "upstream-e2e: built e2e.test in $((SECONDS - t0))s" >&2
  t0=$SECONDS
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$stage/bin/agnhost" k8s.io/kubernetes/test/images/agnhost
  echo "agnhost: $((SECONDS - t0))s" >>"$stage/TIMES"
  echo "upstream-e2e: built agnhost in $((SECONDS - t0))s" >&2
  t0=$SECONDS
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$stage/bin/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
  echo "ginkgo $ginkgo_version: $((SECONDS - t0))s" >>"$stage/TIMES"
  echo "upstream-e2e: built ginkgo $ginkgo_version in $((SECONDS - t0))s" >&2
  # The suite drives kubectl (exec, logs, ...): one of the control plane's own version, not whatever is on PATH.
  t0=$SECONDS
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$stage/bin/kubectl" k8s.io/kubernetes/cmd/kubectl
  echo "kubectl: $((SECONDS - t0))s" >>"$stage/TIMES"
  echo "upstream-e2e: built kubectl in $((SECONDS - t0))s" >&2

  # What `images` needs from the module: copied so that it works without Go (and a module cache).
  moddir="$(go list -m -f '{{.Dir}}' k8s.io/kubernetes)"
  cp "$moddir/test/images/agnhost/porter/localhost.crt" "$moddir/test/images/agnhost/porter/localhost.key" \
    "$moddir/build/pause/linux/pause.c" "$stage/files/"
  chmod 0644 "$stage/files/"*
}

cmd_build() {
  if e2e_cached; then
    echo "$E2E_DIR/bin"
    return 0
  fi
  mkdir -p "$CACHE_ROOT/e2e"
  # The same lock as kube-binaries.sh: one Go build at a time on the machine, and a build that waited
  # for a kube build finds the Go build cache warm.
  exec 9>"$CACHE_ROOT/.lock"
  if ! flock -n 9; then
    log "another build holds $CACHE_ROOT/.lock; waiting for it"
    flock 9
  fi
  if e2e_cached; then
    echo "$E2E_DIR/bin"
    return 0
  fi
  # Leftovers of a build that was killed hard (we hold the lock, so nobody else is building).
  rm -rf "$CACHE_ROOT"/e2e/.partial-*
  need_go

  local start=$SECONDS work stage minor ldflags pkg
  log "building e2e.test, agnhost and ginkgo for Kubernetes $KUBE_VERSION from the Go module proxy (once; cached in $E2E_DIR)"
  log "a few minutes when kube-binaries.sh's build left the Go build cache warm, much longer when cold"
  new_workdir e2e-build
  work="$DIR"
  new_stage "$CACHE_ROOT/e2e"
  stage="$DIR"
  mkdir -p "$stage/bin" "$stage/files"
  # The same version stamp as kube-binaries.sh, so e2e.test reports the release it was built from.
  minor="${KUBE_VERSION#v1.}"
  minor="${minor%%.*}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean"
  done
  run_step e2e_steps "$work" "$stage" "$ldflags" >&2
  {
    printf 'kubernetes %s e2e binaries built with %s in %ss on %s\n' "$KUBE_VERSION" "$(go env GOVERSION)" \
      $((SECONDS - start)) "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    cat "$stage/TIMES"
  } >"$stage/BUILD-INFO"
  rm -f "$stage/TIMES"
  rm -rf "$E2E_DIR"
  mv -T "$stage" "$E2E_DIR"
  log "built in $((SECONDS - start))s"
  echo "$E2E_DIR/bin"
}

# ---------------------------------------------------------------------------------------------- images

# Bump when what the images hold changes: it is part of the cache key.
readonly IMAGES_RECIPE='3'
readonly IMAGE_PACKAGES=(busybox-static bash-static)
readonly E2E_REGISTRY='registry.k8s.io/e2e-test-images'
readonly NAMESPACE='k8s.io'
IMAGES_ROOT="$CACHE_ROOT/e2e-images"

# The images built, by short name. Each is one tar holding one image under every tag: those that
# `e2e.test --list-images` shows for its repository plus image_tags' (tags that specs use but
# --list-images leaves out, and the v1.37.2 tags for a build without the list).
readonly IMAGES=(busybox agnhost nginx httpd nonroot nonewprivs glibc-dns-testing pause)

image_repo() {
  case "$1" in
    pause) echo registry.k8s.io/pause ;;
    *) echo "$E2E_REGISTRY/$1" ;;
  esac
}

image_tags() {
  case "$1" in
    busybox) echo 1.37.0-2 1.36.1-1 ;;
    agnhost) echo 2.66.1 2.55 ;;
    nginx) echo 1.27.0-2 1.28.0-2 ;;
    # Not in v1.37.2's --list-images (no spec of it runs httpd); kept as UPSTREAM-E2E.md lists it, and
    # cheap: agnhost's layer again.
    httpd) echo 2.4.38-4 2.4.39-4 ;;
    nonroot) echo 1.5 ;;
    nonewprivs) echo 1.4 ;;
    glibc-dns-testing) echo 2.1.1 ;;
    pause) echo 3.10.2 ;;
  esac
}

# Which root filesystem (layer) the image has.
image_rootfs() {
  case "$1" in
    busybox | nonroot | glibc-dns-testing) echo busybox ;;
    agnhost | nginx | httpd) echo agnhost ;;
    *) echo "$1" ;;
  esac
}

# The config's process part, as in the upstream images (nginx and httpd stand-ins serve / on port 80).
image_config() {
  case "$1" in
    busybox | glibc-dns-testing) echo '"Cmd":["sh"]' ;;
    nonroot) echo '"Cmd":["sh"],"User":"1234"' ;;
    agnhost) echo '"Entrypoint":["/agnhost"],"Cmd":["pause"]' ;;
    nginx | httpd) echo '"Entrypoint":["/agnhost","test-webserver","--port","80"]' ;;
    nonewprivs) echo '"Cmd":["nnp"]' ;;
    pause) echo '"Entrypoint":["/pause"],"User":"65535:65535"' ;;
  esac
}

# Registries whose images the suite expects to fail to pull ("should not be able to pull" specs): never
# built, even if a recipe above ever named them.
unpullable() {
  case "$1" in
    invalid.registry.k8s.io/* | gcr.io/k8s-authenticated-test/* | gcr.io/authenticated-image-pulling/*) return 0 ;;
    *) return 1 ;;
  esac
}

need_root() {
  [[ "$(id -u)" == 0 ]] || die "$1 needs root: run as root or with sudo"
}

pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }

# apt-get installs busybox-static and bash-static when missing (as containerd.sh install does).
ensure_packages() {
  local missing=() p
  for p in "${IMAGE_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  need_root "installing ${missing[*]}"
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # A machine whose package lists were never fetched knows no candidate: update once, then install.
  for p in "${missing[@]}"; do
    if ! apt-cache show "$p" >/dev/null 2>&1; then
      apt-get update -q >/dev/null || die "apt-get update failed"
      break
    fi
  done
  local aptlog
  aptlog="$(mktemp "${TMPDIR:-/tmp}/kubelet-operator-apt.XXXXXX")"
  if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >"$aptlog" 2>&1; then
    tail -n 20 "$aptlog" >&2 || true
    rm -f "$aptlog"
    die "apt-get install ${missing[*]} failed"
  fi
  rm -f "$aptlog"
}

# ---- busybox, as upstream builds it
#
# registry.k8s.io/e2e-test-images/busybox is docker's busybox:1.37.0, upstream busybox with its default
# configuration. Debian's busybox differs where the e2e suite looks: Debian reverts upstream commit 9c143ce5,
# so its ash drops environment variables whose names are not shell identifiers (`data-1` from an envFrom
# ConfigMap) instead of passing them to its children. So the images carry upstream busybox 1.37.0, built here
# statically with `make defconfig`, from the pristine upstream tarball of Debian's source package (Debian
# trixie carries 1.37.0; the source is fetched with a private apt state dir, the machine's apt sources are not
# touched). Cached by version; about 40 s on two cores.
readonly BUSYBOX_VERSION='1.37.0'
readonly BUSYBOX_DEBIAN_SUITE='trixie'
BUSYBOX_BIN=''

ensure_busybox() {
  local dir="$CACHE_ROOT/e2e-images/busybox-$BUSYBOX_VERSION-$(image_arch)"
  BUSYBOX_BIN="$dir/busybox"
  [[ -x "$BUSYBOX_BIN" ]] && return 0
  command -v gcc >/dev/null && command -v make >/dev/null && command -v bzip2 >/dev/null ||
    die "building busybox needs gcc, make and bzip2 (apt-get install build-essential bzip2)"
  local work apt
  work="$(mktemp -d "${TMPDIR:-/tmp}/kubelet-operator-busybox.XXXXXX")"
  apt=(-q -o "Dir::Etc::sourcelist=$work/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$work/lists"
    -o APT::Get::List-Cleanup=0 -o APT::Sandbox::User=root)
  mkdir -p "$work/lists/partial" "$work/src"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $BUSYBOX_DEBIAN_SUITE main" \
    >"$work/sources.list"
  log "building busybox $BUSYBOX_VERSION (upstream defconfig, static) from Debian's $BUSYBOX_DEBIAN_SUITE source package"
  apt-get "${apt[@]}" update >"$work/apt.log" 2>&1 || { tail -n 5 "$work/apt.log" >&2; die "apt-get update of the $BUSYBOX_DEBIAN_SUITE sources failed"; }
  (cd "$work/src" && apt-get "${apt[@]}" source --download-only busybox >>"$work/apt.log" 2>&1) ||
    { tail -n 5 "$work/apt.log" >&2; die "apt-get source busybox ($BUSYBOX_DEBIAN_SUITE) failed"; }
  local orig="$work/src/busybox_${BUSYBOX_VERSION}.orig.tar.bz2"
  [[ -s "$orig" ]] || die "Debian $BUSYBOX_DEBIAN_SUITE no longer carries busybox $BUSYBOX_VERSION ($(ls "$work/src" | tr '\n' ' '))"
  tar -xjf "$orig" -C "$work/src"
  (
    cd "$work/src/busybox-$BUSYBOX_VERSION"
    make defconfig >/dev/null
    # Static, as the image has no libc; tc does not build against current kernel headers (CBQ is gone).
    sed -i 's/^# CONFIG_STATIC is not set/CONFIG_STATIC=y/; s/^CONFIG_TC=y/# CONFIG_TC is not set/' .config
    make -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -n 20 "$work/build.log" >&2; exit 1; }
  ) || die "building busybox $BUSYBOX_VERSION failed"
  mkdir -p "$dir"
  cp "$work/src/busybox-$BUSYBOX_VERSION/busybox" "$BUSYBOX_BIN.tmp"
  mv -f "$BUSYBOX_BIN.tmp" "$BUSYBOX_BIN"
  rm -rf "$work"
}

# The cache key: recipe, Kubernetes release, arch, busybox and the Debian packages whose files the images hold
# (bash-static; libc6-dev is statically linked into pause and nnp).
images_key() {
  local v key p
  key="r${IMAGES_RECIPE}_${KUBE_VERSION}_$(image_arch)_busybox-${BUSYBOX_VERSION}"
  for p in bash-static libc6-dev; do
    v="$(pkg_version "$p")"
    key+="_${p%%-*}-${v:-none}"
  done
  printf '%s\n' "$key" | tr -c 'A-Za-z0-9._+\n-' '_'
}

# Prints the images.txt lines as `<path> <name> [alias...]`.
print_images() {
  local dir="$1" file digest names
  while read -r file digest names; do
    echo "$dir/$file $names"
  done <"$dir/images.txt"
}

# The curl stand-in of the agnhost image: busybox wget behind the curl options the e2e suite passes
# (exec hooks: `curl http://host:port/path`; framework/network: -g -q -s, -i, -o /dev/null,
# -w %{http_code}, --max-time, --connect-timeout). Busybox 1.35's `wget -T` segfaults when the connection
# fails, so time limits go through `timeout` instead.
write_curl_shim() {
  cat >"$1" <<'SHIM'
#!/bin/sh
# curl stand-in over busybox wget (kubelet-operator scripts/upstream-e2e.sh), for the e2e test images.
# curl [-s] [-S] [-g] [-q] [-i] [-f] [-L] [-k] [-v] [-o FILE] [-w FORMAT] [-m|--max-time S]
#      [--connect-timeout S] [-X GET|POST] [-d DATA] [-H 'Name: value'] URL
# -w knows %{http_code}. Exit codes as curl's: 0, 6 (resolve), 7 (connect), 22 (-f and HTTP >= 400),
# 28 (timeout); --connect-timeout limits the whole request to S+10 s unless --max-time is given.
out=- include=0 fail=0 silent=0 wfmt='' maxtime='' ctimeout='' url='' method='' data='' hasdata=0
hdrs='' insecure=0
usage() {
  sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
}
secs() { s="${1%%.*}"; [ "$s" != "$1" ] && s=$((${s:-0} + 1)); [ "${s:-0}" -ge 1 ] 2>/dev/null || s=1; echo "$s"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --*) ;;
    -[sSgqifLkv][sSgqifLkv]*)
      rest="${1#-?}"
      first="${1%"$rest"}"
      shift
      set -- "$first" "-$rest" "$@"
      continue
      ;;
  esac
  case "$1" in
    -h | --help) usage; exit 0 ;;
    -V | --version) echo 'curl 0.0.0 (kubelet-operator stand-in over busybox wget)'; exit 0 ;;
    -s | --silent) silent=1 ;;
    -S | --show-error | -g | --globoff | -q | --disable | -L | --location | -v | --verbose) ;;
    -k | --insecure) insecure=1 ;;
    -i | --include) include=1 ;;
    -f | --fail) fail=1 ;;
    -o | --output) shift; out="$1" ;;
    -w | --write-out) shift; wfmt="$1" ;;
    -m | --max-time) shift; maxtime="$(secs "$1")" ;;
    --connect-timeout) shift; ctimeout="$(secs "$1")" ;;
    -X | --request) shift; method="$1" ;;
    -d | --data | --data-raw | --data-binary) shift; data="$1"; hasdata=1 ;;
    -H | --header) shift; hdrs="${hdrs:+$hdrs
}$1" ;;
    -*) echo "curl: option $1 is not supported by this stand-in" >&2; exit 2 ;;
    *) url="$1" ;;
  esac
  shift
done
[ -n "$url" ] || { echo 'curl: no URL specified' >&2; exit 2; }
case "$method" in
  '' | GET | get) [ "$hasdata" = 1 ] && method=POST ;;
  POST | post) method=POST ;;
  *) echo "curl: method $method is not supported by this stand-in" >&2; exit 2 ;;
esac
set -- -S
[ "$method" = POST ] && set -- "$@" --post-data "$data"
if [ -n "$hdrs" ]; then
  while IFS= read -r h; do set -- "$@" --header "$h"; done <<EOF
$hdrs
EOF
fi
[ "$insecure" = 1 ] && set -- "$@" --no-check-certificate
limit="$maxtime"
[ -z "$limit" ] && [ -n "$ctimeout" ] && limit=$((ctimeout + 10))
run() {
  if [ -n "$limit" ]; then timeout "$limit" wget "$@"; else wget "$@"; fi
}
# Body to $out (or to a temp file for -i, whose headers come first); wget's stderr (with -S the response
# headers, indented by two spaces) into $log.
exec 3>&1
if [ "$include" = 1 ]; then
  body="$(mktemp)" || exit 23
  log="$(run "$@" -O "$body" "$url" 2>&1 1>&3)"
else
  body=''
  log="$(run "$@" -O "$out" "$url" 2>&1 1>&3)"
fi
rc=$?
code="$(printf '%s\n' "$log" | sed -n 's#^  HTTP/[0-9.]* \([0-9][0-9][0-9]\).*#\1#p' | tail -n 1)"
if [ "$include" = 1 ]; then
  if [ "$out" = - ]; then
    printf '%s\n' "$log" | sed -n 's/^  //p'
    cat "$body"
  else
    { printf '%s\n' "$log" | sed -n 's/^  //p'; cat "$body"; } >"$out"
  fi
  rm -f "$body"
fi
if [ -n "$wfmt" ]; then
  printf '%b' "$(printf '%s' "$wfmt" | sed "s/%{http_code}/${code:-000}/g")"
fi
if [ -z "$code" ]; then
  case "$rc:$log" in
    143:* | 124:* | *'timed out'*) status=28 msg='Operation timed out' ;;
    *'bad address'*) status=6 msg="Could not resolve host" ;;
    *) status=7 msg="Failed to connect" ;;
  esac
  [ "$silent" = 1 ] || echo "curl: ($status) $msg: $url" >&2
  exit "$status"
fi
if [ "$code" -ge 400 ] && [ "$fail" = 1 ]; then
  [ "$silent" = 1 ] || echo "curl: (22) The requested URL returned error: $code" >&2
  exit 22
fi
exit 0
SHIM
}

# nonewprivs' program (upstream: test/images/nonewprivs/nnp.go), installed setuid root.
write_nnp_c() {
  cat >"$1" <<'NNP'
#include <stdio.h>
#include <unistd.h>

int main(void) {
  printf("Effective uid: %d\n", (int)geteuid());
  return 0;
}
NNP
}

# The upstream image's bash (agnhost's exec hooks run `bash -c`), from Debian's bash-static.
add_bash() {
  local r="$1"
  rm -f "$r/bin/bash"
  cp /bin/bash-static "$r/bin/bash"
  chmod 0755 "$r/bin/bash"
}

# Builds the root filesystems into <work>/rootfs-<name>/: busybox, agnhost, nonewprivs, pause.
make_rootfses() {
  local work="$1" pause_version="$2" files="$E2E_DIR/files" r
  # busybox: Debian's busybox-static with a symlink per applet (shared with containerd.sh's image).
  make_rootfs "$work/rootfs-busybox" "$BUSYBOX_BIN"

  # agnhost: the busybox root plus what the upstream image's specs use.
  r="$work/rootfs-agnhost"
  make_rootfs "$r" "$BUSYBOX_BIN"
  cp "$E2E_DIR/bin/agnhost" "$r/agnhost"
  chmod 0755 "$r/agnhost"
  ln -s agnhost "$r/agnhost-2"
  cp "$files/localhost.crt" "$files/localhost.key" "$r/"
  chmod 0644 "$r/localhost.crt" "$r/localhost.key"
  mkdir -m 0755 "$r/uploads" "$r/home/user-defined-in-image"
  add_bash "$r"
  write_curl_shim "$r/usr/bin/curl"
  chmod 0755 "$r/usr/bin/curl"
  echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$r/etc/passwd"
  printf '%s\n' 'user-defined-in-image:x:1000:' 'group-defined-in-image:x:50000:user-defined-in-image' \
    >>"$r/etc/group"

  # nonewprivs: the busybox root plus a setuid-root program printing its effective uid.
  r="$work/rootfs-nonewprivs"
  make_rootfs "$r" "$BUSYBOX_BIN"
  mkdir -p "$r/usr/local/bin"
  write_nnp_c "$work/nnp.c"
  (cd "$work" && gcc -Os -Wall -Werror -static -s -o "$r/usr/local/bin/nnp" nnp.c)
  chmod 4755 "$r/usr/local/bin/nnp"

  # pause: only /pause, from build/pause/linux/pause.c as build/pause/Makefile builds it (plus -s).
  r="$work/rootfs-pause"
  mkdir -p "$r"
  cp "$files/pause.c" "$work/pause.c"
  (cd "$work" && gcc -Os -Wall -Werror -static -s "-DVERSION=v$pause_version" -o "$r/pause" pause.c)
  chmod 0755 "$r/pause"
}

# Writes every image tar and images.txt (`<file> <manifest digest> <name> [alias...]`) into <out>.
build_images() {
  local out="$1" work="$1/.work" listed img repo tags tag names rootfs line t0=$SECONDS
  mkdir -p "$work"
  # The release's own image list (works without a cluster); map iteration makes its order random.
  listed="$("$E2E_DIR/bin/e2e.test" --list-images 2>/dev/null | LC_ALL=C sort -u)" ||
    fail "$E2E_DIR/bin/e2e.test --list-images failed"
  printf '%s\n' "$listed" >"$out/list-images.txt"

  local -A tags_of=()
  for img in "${IMAGES[@]}"; do
    repo="$(image_repo "$img")"
    tags="$(image_tags "$img")"
    while read -r line; do
      [[ "${line%:*}" == "$repo" ]] && tags+=" ${line##*:}"
    done <<<"$listed"
    # Newest tag first (it names the image; the others are aliases); the same order on every build.
    tags_of[$img]="$(tr ' ' '\n' <<<"$tags" | sed '/^$/d' | sort -u -r -V | tr '\n' ' ')"
  done

  local pause_tags
  read -r -a pause_tags <<<"${tags_of[pause]}"
  make_rootfses "$work" "${pause_tags[0]}"

  local -A layer_of=()
  local diff_id digest size
  for rootfs in busybox agnhost nonewprivs pause; do
    read -r diff_id digest size < <(make_layer "$work/rootfs-$rootfs" "$work/layer-$rootfs")
    layer_of[$rootfs]="$diff_id $digest $size"
  done

  : >"$out/images.txt"
  for img in "${IMAGES[@]}"; do
    repo="$(image_repo "$img")"
    names=()
    for tag in ${tags_of[$img]}; do
      unpullable "$repo:$tag" && continue
      names+=("$repo:$tag")
    done
    ((${#names[@]} > 0)) || continue
    rootfs="$(image_rootfs "$img")"
    read -r diff_id digest size <<<"${layer_of[$rootfs]}"
    LAYER_FILE="$work/layer-$rootfs.tar.gz"
    build_image "$out/$img.tar" "${names[0]}" "$digest" "$size" "$diff_id" "$(image_config "$img")" "${names[@]:1}"
    # The manifest digest, as `ctr images ls` shows it: read back from the tar's index.json.
    digest="$(tar -xOf "$out/$img.tar" index.json | sed -n 's/^{"schemaVersion":2,"manifests":\[{[^}]*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p')"
    [[ -n "$digest" ]] || fail "no manifest digest in $out/$img.tar"
    echo "$img.tar $digest ${names[*]}" >>"$out/images.txt"
  done
  rm -rf "$work"

  # What the release lists but is not built here, for the record (stderr).
  local built
  built=" $(cut -d' ' -f3- "$out/images.txt" | tr '\n' ' ') "
  while read -r line; do
    [[ -z "$line" || "$built" == *" $line "* ]] && continue
    if unpullable "$line"; then
      log "not built (the suite expects it unpullable): $line"
    else
      log "not built (no NodeConformance spec of sig-node/storage/network runs it): $line"
    fi
  done <<<"$listed"
  log "built $(wc -l <"$out/images.txt") image tars in $((SECONDS - t0))s"
}

# Sets IMAGES_DIR to the cache dir holding the image tars and images.txt, building them when absent.
# (Not a $(...) function: the cleanup of a failed build must run in this shell.)
IMAGES_DIR=""
ensure_images() {
  e2e_cached || die "no e2e binaries for $KUBE_VERSION in $E2E_DIR: run '$0 build' first"
  ensure_packages
  local key dir
  key="$(images_key)"
  dir="$IMAGES_ROOT/$key"
  IMAGES_DIR="$dir"
  [[ -s "$dir/images.txt" ]] && return 0
  command -v gcc >/dev/null || die "gcc is needed to build pause and nonewprivs: apt-get install gcc libc6-dev"
  [[ -n "$(pkg_version libc6-dev)" ]] || die "libc6-dev (static libc) is needed to build pause and nonewprivs: apt-get install libc6-dev"
  mkdir -p "$IMAGES_ROOT"
  # Its own lock: an image build takes a minute and must not wait for a Go build.
  exec 8>"$IMAGES_ROOT/.lock"
  if ! flock -n 8; then
    log "another image build holds $IMAGES_ROOT/.lock; waiting for it"
    flock 8
  fi
  [[ -s "$dir/images.txt" ]] && return 0
  rm -rf "$IMAGES_ROOT"/.partial-*
  ensure_busybox
  log "building the e2e test images (once; cached in $dir)"
  local stage
  new_stage "$IMAGES_ROOT"
  stage="$DIR"
  (
    umask 022
    build_images "$stage"
  ) >&2
  rm -rf "$dir"
  mv -T "$stage" "$dir"
}

cmd_images() {
  ensure_images
  print_images "$IMAGES_DIR"
}

# ---------------------------------------------------------------------------------------------- import

cmd_import() {
  local sock="${1:-}"
  [[ -n "$sock" ]] || usage
  [[ -S "$sock" ]] || fail "no containerd socket at $sock"
  command -v ctr >/dev/null || die "ctr (from the containerd package) is not installed"
  local dir
  ensure_images
  dir="$IMAGES_DIR"
  # What the namespace holds already: "<ref> <digest>" per image.
  local present
  present="$(ctr --address "$sock" -n "$NAMESPACE" images ls 2>/dev/null | awk 'NR > 1 {print $1, $3}')" ||
    fail "cannot list the images at $sock"
  local file digest names name missing imported=0 skipped=0 t0
  while read -r file digest names; do
    missing=0
    for name in $names; do
      grep -qxF "$name $digest" <<<"$present" || missing=1
    done
    if ((missing == 0)); then
      skipped=$((skipped + 1))
      continue
    fi
    t0=$SECONDS
    ctr --address "$sock" -n "$NAMESPACE" images import "$dir/$file" >/dev/null ||
      fail "importing $dir/$file failed"
    imported=$((imported + 1))
    log "imported $file ($names) in $((SECONDS - t0))s"
  done <"$dir/images.txt"
  log "imported $imported image tars, $skipped already present"
  print_images "$dir"
}

# ---------------------------------------------------------------------------------------------- main

case "${1:-}" in
  build) cmd_build ;;
  images) cmd_images ;;
  import) cmd_import "${2:-}" ;;
  *) usage ;;
esac
