#!/usr/bin/env bash
# The upstream Kubernetes e2e suite's binaries and images, for running it against our nodes.
# See shared/docs/UPSTREAM-E2E.md.
#
#   upstream-e2e.sh build           builds e2e.test, agnhost, kubectl, the ginkgo CLI and sample-apiserver from
#                                   the Go module proxy
#   upstream-e2e.sh images [--csi]  builds the e2e test images as OCI image layout tars (needs `build`)
#   upstream-e2e.sh import <sock>   imports those images into containerd's k8s.io namespace at <sock>
#   upstream-e2e.sh import <sock> --csi   the same plus the sig-storage images of the DRA and CSI mock specs
#   upstream-e2e.sh images --csi-node / import <sock> --csi-node   only the hostpathplugin and
#                                   csi-node-driver-registrar images (a CSI node DaemonSet's), not the e2e images
#
# build: k8s.io/kubernetes at KUBE_VERSION (default: the pin in scripts/kube-binaries.sh), built in a
#   throwaway module like kube-binaries.sh does, cached outside the repo:
#     $CACHE/e2e/<k8s-version>/bin/{e2e.test,agnhost,ginkgo,kubectl}
#     $CACHE/e2e/<k8s-version>/bin/{sample-apiserver,etcd}   (k8s.io/sample-apiserver at the staging version
#                                        v0.Y.Z of v1.Y.Z; kube-binaries.sh's etcd, copied)
#     $CACHE/e2e/<k8s-version>/files/   (agnhost's porter certs, pause.c and the kitten and nautilus images'
#                                        files, copied from the module, so `images` needs no Go afterwards)
#   with CACHE=${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}. Holds
#   $CACHE/.lock while building (as kube-binaries.sh does), so it waits for a running kube build. A cache
#   that has the first four binaries but lacks sample-apiserver, etcd or the kitten/nautilus files gets only
#   those added. The last stdout line is the bin dir.
# images: stand-ins under the exact upstream names and tags that `e2e.test --list-images` shows for the
#   images the [Conformance] and NodeConformance specs run (busybox, agnhost, nginx, httpd, nonroot,
#   nonewprivs, glibc-dns-testing, pause, kitten, nautilus, sample-apiserver, etcd), built from upstream
#   busybox, Debian's bash-static (apt-get installed when missing), Debian bookworm's netcat-openbsd,
#   bind9-dnsutils, iproute2, curl and getent with the shared libraries they need (apt-get download, cached
#   in $CACHE/e2e-images/debs-<arch>/), the agnhost, sample-apiserver and etcd binaries and a static pause.
#   Images the suite expects to be unpullable (invalid or private registries) are never built.
#   Cached in $CACHE/e2e-images/<recipe key>/; prints one line per tar: `<path> <name> [alias...]`.
# import: `images`, then `ctr -n k8s.io images import` of every tar whose names are not all present
#   with the same digest already.
# --csi: also registry.k8s.io/sig-storage/{hostpathplugin,csi-node-driver-registrar,csi-provisioner,
#   csi-attacher,csi-resizer} under the tags e2e.test lists, each holding the binary that scripts/csi-plugins.sh
#   builds from the pinned upstream sources (hostpathplugin over the busybox root: the DRA specs run a shell
#   in it). Built here, never pulled; cached in $CACHE/e2e-images/csi-<key>/.
# --csi-node: the same recipe for hostpathplugin and csi-node-driver-registrar alone (the controller sidecars
#   are not built); `images` prints only their lines and `import` imports only them.
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
# apt-get that waits for the apt/dpkg lock, the Depends closure and the .deb cache (apt_get, debs_fetch, ...).
# shellcheck source=lib/apt.sh source-path=SCRIPTDIR
source "$SCRIPTS_DIR/lib/apt.sh"

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
  echo "usage: $0 build | images [--csi | --csi-node] | import <containerd-socket> [--csi | --csi-node]" >&2
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
# Added to a cache that lacks them without rebuilding the rest (they came later than the above).
E2E_EXTRA_BINS=(sample-apiserver etcd)
E2E_EXTRA_FILES=(kitten.jpg kitten.data.json nautilus.jpg nautilus.data.json)

# ---------------------------------------------------------------------------------------------- build

e2e_cached() {
  local f
  for f in "${E2E_BINS[@]}"; do [[ -x "$E2E_DIR/bin/$f" ]] || return 1; done
  for f in "${E2E_FILES[@]}"; do [[ -s "$E2E_DIR/files/$f" ]] || return 1; done
}
extras_cached() {
  local f
  for f in "${E2E_EXTRA_BINS[@]}"; do [[ -x "$E2E_DIR/bin/$f" ]] || return 1; done
  for f in "${E2E_EXTRA_FILES[@]}"; do [[ -s "$E2E_DIR/files/$f" ]] || return 1; done
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

# What the e2e images need besides the core binaries: sample-apiserver, built from k8s.io/sample-apiserver
# at the staging version of KUBE_VERSION (upstream's image builds a release of that repository's main
# package), and the kitten and nautilus images' picture and data.json (test/images/<name>/html/).
extras_steps() {
  local work="$1" staging_version json moddir img t0
  cd "$work"
  go mod init kubelet-operator.invalid/e2e-extras >/dev/null 2>&1
  staging_version="v0.${KUBE_VERSION#v1.}"
  if [[ ! -s "$E2E_DIR/files/kitten.jpg" || ! -s "$E2E_DIR/files/kitten.data.json" ||
    ! -s "$E2E_DIR/files/nautilus.jpg" || ! -s "$E2E_DIR/files/nautilus.data.json" ]]; then
    json="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION")"
    moddir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")"
    for img in kitten nautilus; do
      cp "$moddir/test/images/$img/html/$img.jpg" "$E2E_DIR/files/.$img.jpg.tmp"
      cp "$moddir/test/images/$img/html/data.json" "$E2E_DIR/files/.$img.data.json.tmp"
      chmod 0644 "$E2E_DIR/files/.$img.jpg.tmp" "$E2E_DIR/files/.$img.data.json.tmp"
      mv -f "$E2E_DIR/files/.$img.jpg.tmp" "$E2E_DIR/files/$img.jpg"
      mv -f "$E2E_DIR/files/.$img.data.json.tmp" "$E2E_DIR/files/$img.data.json"
    done
  fi
  if [[ ! -x "$E2E_DIR/bin/sample-apiserver" ]]; then
    go get "k8s.io/sample-apiserver@$staging_version"
    t0=$SECONDS
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$E2E_DIR/bin/.sample-apiserver.tmp" k8s.io/sample-apiserver
    mv -f "$E2E_DIR/bin/.sample-apiserver.tmp" "$E2E_DIR/bin/sample-apiserver"
    echo "sample-apiserver $staging_version: $((SECONDS - t0))s ($(date -u +%Y-%m-%dT%H:%M:%SZ))" >>"$E2E_DIR/BUILD-INFO"
    echo "upstream-e2e: built sample-apiserver $staging_version in $((SECONDS - t0))s" >&2
  fi
}

# Adds what extras_cached wants to a cache that has the core binaries; etcd is a copy of <etcd> (the
# caller runs kube-binaries.sh before it takes the build lock, which kube-binaries.sh takes too).
build_extras() {
  local etcd="$1"
  rm -f "$E2E_DIR"/bin/.*.tmp "$E2E_DIR"/files/.*.tmp
  if [[ ! -x "$E2E_DIR/bin/etcd" ]]; then
    [[ -x "$etcd" ]] || fail "no etcd binary to copy (scripts/kube-binaries.sh)"
    cp "$etcd" "$E2E_DIR/bin/.etcd.tmp"
    chmod 0755 "$E2E_DIR/bin/.etcd.tmp"
    mv -f "$E2E_DIR/bin/.etcd.tmp" "$E2E_DIR/bin/etcd"
  fi
  extras_cached && return 0
  need_go
  log "adding sample-apiserver and the kitten/nautilus files to $E2E_DIR (once)"
  new_workdir e2e-extras
  run_step extras_steps "$DIR" >&2
  extras_cached || fail "the extras build left $E2E_DIR incomplete"
}

# The etcd that kube-binaries.sh builds (or finds cached) for the control plane, for the etcd image.
control_plane_etcd() {
  local assets
  assets="$(env -u KUBEBUILDER_ASSETS bash "$SCRIPTS_DIR/kube-binaries.sh" | tail -n 1)" ||
    fail "scripts/kube-binaries.sh failed"
  [[ -x "$assets/etcd" ]] || fail "scripts/kube-binaries.sh left no etcd in $assets"
  readlink -f "$assets/etcd"
}

cmd_build() {
  if e2e_cached && extras_cached; then
    echo "$E2E_DIR/bin"
    return 0
  fi
  local etcd=""
  # Before the lock (see build_extras); a core build starts a new $E2E_DIR, without the old etcd.
  if ! e2e_cached || [[ ! -x "$E2E_DIR/bin/etcd" ]]; then
    etcd="$(control_plane_etcd)"
  fi
  mkdir -p "$CACHE_ROOT/e2e"
  # The same lock as kube-binaries.sh: one Go build at a time on the machine, and a build that waited
  # for a kube build finds the Go build cache warm.
  exec 9>"$CACHE_ROOT/.lock"
  if ! flock -n 9; then
    log "another build holds $CACHE_ROOT/.lock; waiting for it"
    flock 9
  fi
  e2e_cached || build_core
  extras_cached || build_extras "$etcd"
  echo "$E2E_DIR/bin"
}

# e2e.test, agnhost, ginkgo and kubectl, into a new $E2E_DIR (the caller holds the build lock).
build_core() {
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
}

# ---------------------------------------------------------------------------------------------- images

# Bump when what the images hold changes: it is part of the cache key.
readonly IMAGES_RECIPE='5'
readonly IMAGE_PACKAGES=(busybox-static bash-static)
readonly E2E_REGISTRY='registry.k8s.io/e2e-test-images'
readonly NAMESPACE='k8s.io'
IMAGES_ROOT="$CACHE_ROOT/e2e-images"

# The images built, by short name. Each is one tar holding one image under every tag: those that
# `e2e.test --list-images` shows for its repository plus image_tags' (tags that specs use but
# --list-images leaves out, and the v1.37.2 tags for a build without the list).
readonly IMAGES=(busybox agnhost nginx httpd nonroot nonewprivs glibc-dns-testing pause kitten nautilus sample-apiserver etcd)

image_repo() {
  case "$1" in
    pause) echo registry.k8s.io/pause ;;
    etcd) echo registry.k8s.io/etcd ;;
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
    kitten | nautilus) echo 1.8 ;;
    sample-apiserver) echo 1.29.2 ;;
    etcd) echo 3.7.0-0 ;;
  esac
}

# The image's layers, bottom first, by root filesystem name (rootfs-<name> in make_rootfses). Images that
# add a few files to another get them as a layer of their own over the other's, which they share.
image_layers() {
  case "$1" in
    busybox | nonroot) echo busybox ;;
    # glibc-dns-testing: the DNS specs' "glibc" prober runs dig and getent there, against glibc's resolver
    # (upstream: a Debian-based image with dnsutils); the agnhost layer has exactly those from Debian.
    agnhost | nginx | httpd | glibc-dns-testing) echo agnhost ;;
    # Upstream: agnhost plus its picture and data.json in /, served by `agnhost test-webserver`.
    kitten | nautilus) echo "agnhost $1" ;;
    # Upstream: alpine plus /sample-apiserver; etcd: distroless plus /usr/local/bin/etcd.
    sample-apiserver | etcd) echo "busybox $1" ;;
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
    kitten | nautilus) echo '"Entrypoint":["/agnhost"],"Cmd":["test-webserver"]' ;;
    # The Aggregator spec passes only args (--etcd-servers, --tls-cert-file, ...).
    sample-apiserver) echo '"Entrypoint":["/sample-apiserver"]' ;;
    # The spec's etcd container names /usr/local/bin/etcd as its command.
    etcd) echo '"Cmd":["/usr/local/bin/etcd"]' ;;
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
  apt_lists_know "${missing[@]}"
  log "installing ${missing[*]}"
  apt_get install -y --no-install-recommends "${missing[@]}" || die "apt-get install ${missing[*]} failed"
}

# ---- Debian tools in the agnhost image
#
# Upstream's agnhost is Alpine plus bind-tools, curl, netcat-openbsd, iproute2, iperf, bash, socat and
# util-linux-misc. What the [Conformance] specs run in it: `nc -v -t -w 2 <host> <port>` and `nc -v -u`
# (busybox nc has no -t), `nslookup`, `dig +notcp|+tcp +noall +answer +search`, `getent hosts` (answered
# from /etc/hosts first), `curl -g -q -s -w %{http_code} --interface ...`. So the image gets these tools
# from Debian (the machine's apt sources: bookworm), with every shared library they load, taken from the
# Depends closure of DEB_PACKAGES: `apt-get download` (cached by file name in $IMAGES_ROOT/debs-<arch>/),
# `dpkg -x` into a scratch dir, and the packages' own dynamic loader (`ld.so --list` with the scratch dir
# as library path) names the libraries each binary loads. No maintainer script runs; nothing is installed
# on the machine.
readonly DEB_PACKAGES=(netcat-openbsd bind9-dnsutils bind9-host iproute2 curl libc-bin ca-certificates netbase)
# "<path in the packages> <path in the image>". A busybox applet of the same name in /bin, /sbin, /usr/bin
# or /usr/sbin becomes a symlink to the tool (PATH has /usr/sbin and /usr/bin before /sbin and /bin too).
readonly DEB_TOOLS=(
  'bin/nc.openbsd usr/bin/nc'
  'usr/bin/dig usr/bin/dig'
  'usr/bin/host usr/bin/host'
  'usr/bin/nslookup usr/bin/nslookup'
  'usr/bin/delv usr/bin/delv'
  'usr/bin/nsupdate usr/bin/nsupdate'
  'usr/bin/curl usr/bin/curl'
  'usr/bin/getent usr/bin/getent'
  'bin/ip usr/sbin/ip'
  'bin/ss usr/sbin/ss'
  'sbin/bridge usr/sbin/bridge'
)
# Set by resolve_debs: where the .deb files are cached (lib/apt.sh's debs_resolve sets DEB_ROWS, one
# "<file> <size> <sha256>" per package, sorted, and DEBS_KEY, a short hash of that list for the images' cache
# key).
DEBS_DIR=""

# Sets DEBS_DIR, DEB_ROWS and DEBS_KEY from the package lists (`apt-get download --print-uris`: no download)
# for DEB_PACKAGES and everything they depend on.
resolve_debs() {
  local names
  DEBS_DIR="$IMAGES_ROOT/debs-$(dpkg --print-architecture)"
  apt_lists_know "${DEB_PACKAGES[@]}"
  mapfile -t names < <(deb_closure "${DEB_PACKAGES[@]}")
  ((${#names[@]} >= ${#DEB_PACKAGES[@]})) || fail "apt-cache depends listed no packages for ${DEB_PACKAGES[*]}"
  debs_resolve "the agnhost image" "${names[@]}"
}

# Downloads what DEB_ROWS names and DEBS_DIR lacks, and drops the files it no longer names. Returns 1 when
# apt-get download fails (stale package lists, say).
fetch_debs() { debs_fetch "$DEBS_DIR" "the agnhost image"; }

# Prints <path> (relative to the tree <x>) with its symlinks resolved inside <x>: the packages' absolute
# links (/sbin/ip -> /bin/ip, /lib64/ld-linux-x86-64.so.2 -> /lib/...) must not lead out to the machine.
in_tree() {
  local x="$1" p="${2#/}" t n=0
  while [[ -L "$x/$p" ]]; do
    ((++n <= 40)) || return 1
    t="$(readlink "$x/$p")"
    if [[ "$t" == /* ]]; then p="${t#/}"; else p="$(dirname "$p")/$t"; fi
  done
  [[ -e "$x/$p" ]] || return 1
  echo "$p"
}

# The ELF program interpreter (dynamic loader) that <file> names, e.g. /lib64/ld-linux-x86-64.so.2.
elf_interp() {
  readelf -l "$1" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p'
}

# Prints the absolute paths of the shared libraries that <binary> loads, as the loader <ld.so> finds
# them in <libpath> (colon-separated); fails if one is missing or found outside <prefix>/.
shared_libs() {
  local ld="$1" libpath="$2" bin="$3" prefix="$4" out line path
  out="$("$ld" --library-path "$libpath" --list "$bin" 2>&1)" || {
    printf '%s\n' "$out" >&2
    return 1
  }
  while read -r line; do
    case "$line" in
      *'=> not found'*)
        echo "upstream-e2e: ${bin##*/} needs ${line%% *}, which no package provides" >&2
        return 1
        ;;
      *' => '*)
        path="${line#* => }"
        path="${path% (0x*}"
        if [[ "$path" != "$prefix"/* ]]; then
          echo "upstream-e2e: ${bin##*/}: ${line%% *} resolved to $path, outside $prefix" >&2
          return 1
        fi
        echo "$path"
        ;;
    esac
  done <<<"$out"
}

# Extracts the packages into <x> (dpkg -x: files only, no maintainer scripts).
extract_debs() {
  local x="$1" row file
  mkdir -p "$x"
  for row in "${DEB_ROWS[@]}"; do
    read -r file _ <<<"$row"
    dpkg -x "$DEBS_DIR/$file" "$x"
  done
}

# Adds DEB_TOOLS, their libraries and loader, and the files they read to the root <r>, from the packages
# extracted into <x>. The loader finds the libraries in its default directories (/lib/<triplet>,
# /usr/lib/<triplet>); no ld.so.cache.
add_debian_tools() {
  local r="$1" x="$2" spec src dst real name d interp ld_rel libdir libs=() lib rel
  real="$(in_tree "$x" usr/bin/curl)" || fail "the packages hold no usr/bin/curl"
  interp="$(elf_interp "$x/$real")"
  [[ -n "$interp" ]] || fail "cannot read the program interpreter of $x/$real (readelf)"
  ld_rel="$(in_tree "$x" "$interp")" || fail "the packages hold no $interp"
  # The loader lives in the multiarch library dir (lib/x86_64-linux-gnu/ld-linux-x86-64.so.2).
  libdir="$(dirname "$ld_rel")"
  local libpath="$x/$libdir:$x/usr/$libdir:$x/lib:$x/usr/lib"
  for spec in "${DEB_TOOLS[@]}"; do
    read -r src dst <<<"$spec"
    real="$(in_tree "$x" "$src")" || fail "the packages hold no $src"
    mkdir -p "$r/$(dirname "$dst")"
    cp "$x/$real" "$r/$dst"
    chmod 0755 "$r/$dst"
    mapfile -t -O "${#libs[@]}" libs < <(shared_libs "$x/$ld_rel" "$libpath" "$x/$real" "$x") ||
      fail "cannot resolve the shared libraries of $src"
    name="${dst##*/}"
    for d in bin sbin usr/bin usr/sbin; do
      [[ "$d/$name" == "$dst" ]] && continue
      if [[ -L "$r/$d/$name" && "$(readlink "$r/$d/$name")" == busybox ]]; then
        ln -sfn "/$dst" "$r/$d/$name"
      fi
    done
  done
  # Each library as the package lays it out: the file, and the soname link the loader looks for
  # (libbpf.so.1 -> libbpf.so.1.1.0: `ip -V` reads libbpf's version from the file name).
  for lib in $(printf '%s\n' "${libs[@]}" | LC_ALL=C sort -u); do
    rel="${lib#"$x"/}"
    real="$(in_tree "$x" "$rel")" || fail "cannot resolve $rel in the packages"
    mkdir -p "$r/$(dirname "$rel")"
    if [[ "$real" != "$rel" && "$(dirname "$real")" == "$(dirname "$rel")" ]]; then
      cp "$x/$real" "$r/$real"
      ln -sfn "${real##*/}" "$r/$rel"
    else
      cp "$x/$real" "$r/$rel"
    fi
  done
  mkdir -p "$r/$(dirname "${interp#/}")"
  cp "$x/$ld_rel" "$r/${interp#/}"
  chmod 0755 "$r/${interp#/}"
  # ip and ss read their tables from /etc/iproute2; /etc/services and /etc/protocols for port and protocol
  # names; curl's CA bundle as update-ca-certificates would write it.
  cp -R "$x/etc/iproute2" "$r/etc/iproute2"
  cp "$x/etc/services" "$x/etc/protocols" "$r/etc/"
  mkdir -p "$r/etc/ssl/certs"
  LC_ALL=C find "$x/usr/share/ca-certificates" -name '*.crt' -type f | LC_ALL=C sort | xargs -r awk 1 \
    >"$r/etc/ssl/certs/ca-certificates.crt"
  [[ -s "$r/etc/ssl/certs/ca-certificates.crt" ]] || fail "no CA certificates in the ca-certificates package"
  # glibc without nsswitch.conf asks DNS before /etc/hosts; the specs' `getent hosts` wants /etc/hosts
  # first (as musl, upstream's libc, does).
  printf '%s\n' 'passwd: files' 'group: files' 'shadow: files' 'hosts: files dns' 'networks: files' \
    'protocols: files' 'services: files' 'ethers: files' 'rpc: files' >"$r/etc/nsswitch.conf"
  chmod -R u=rwX,go=rX "$r/etc/iproute2" "$r/etc/ssl"
  chmod 0644 "$r/etc/services" "$r/etc/protocols" "$r/etc/nsswitch.conf"

  # Every tool finds every library in the root itself.
  local ld="$r/${interp#/}" rpath="$r/$libdir:$r/usr/$libdir"
  for spec in "${DEB_TOOLS[@]}"; do
    read -r src dst <<<"$spec"
    shared_libs "$ld" "$rpath" "$r/$dst" "$r" >/dev/null || fail "$dst misses a shared library in the image"
  done
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

# The cache key: recipe, Kubernetes release, arch, busybox, the installed Debian packages whose files the
# images hold (bash-static; libc6-dev is statically linked into pause and nnp), the downloaded ones (a hash
# of their file names and checksums: resolve_debs) and etcd's version (sample-apiserver's is the release's).
images_key() {
  local v key p
  key="r${IMAGES_RECIPE}_${KUBE_VERSION}_$(image_arch)_busybox-${BUSYBOX_VERSION}"
  for p in bash-static libc6-dev; do
    v="$(pkg_version "$p")"
    key+="_${p%%-*}-${v:-none}"
  done
  key+="_debs-${DEBS_KEY}"
  v="$("$E2E_DIR/bin/etcd" --version 2>/dev/null | sed -n 's/^etcd Version: *//p')"
  key+="_etcd-${v:-unknown}"
  printf '%s\n' "$key" | tr -c 'A-Za-z0-9._+\n-' '_'
}

# Prints the images.txt lines as `<path> <name> [alias...]`.
print_images() {
  local dir="$1" file digest names
  while read -r file digest names; do
    echo "$dir/$file $names"
  done <"$dir/images.txt"
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

# Builds the root filesystems into <work>/rootfs-<name>/: busybox, agnhost, nonewprivs, pause, and the
# upper layers kitten, nautilus (over agnhost), sample-apiserver and etcd (over busybox). <debs> holds the
# extracted Debian packages.
make_rootfses() {
  local work="$1" pause_version="$2" debs="$3" files="$E2E_DIR/files" r img
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
  add_debian_tools "$r" "$debs"
  # Upstream's agnhost is Alpine, and the ImageVolume [Conformance] spec reads the kitten image's
  # /etc/os-release for "Alpine Linux": say what this is, in words that contain it.
  printf '%s\n' 'NAME="Alpine Linux stand-in"' 'ID=kubelet-operator-e2e-stand-in' 'ID_LIKE=alpine' \
    'PRETTY_NAME="Stand-in for an Alpine Linux e2e test image: busybox and Debian bookworm tools (kubelet-operator scripts/upstream-e2e.sh)"' \
    >"$r/etc/os-release"
  chmod 0644 "$r/etc/os-release"
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

  # kitten, nautilus: upstream's picture and data.json ({"image": "<name>.jpg"}, what the kubectl Update
  # Demo specs read through the pod proxy) in /, where `agnhost test-webserver` serves files from.
  for img in kitten nautilus; do
    r="$work/rootfs-$img"
    mkdir -p "$r"
    cp "$files/$img.jpg" "$r/$img.jpg"
    cp "$files/$img.data.json" "$r/data.json"
    chmod 0644 "$r/$img.jpg" "$r/data.json"
  done

  # sample-apiserver: /sample-apiserver. etcd: /usr/local/bin/etcd.
  r="$work/rootfs-sample-apiserver"
  mkdir -p "$r"
  cp "$E2E_DIR/bin/sample-apiserver" "$r/sample-apiserver"
  chmod 0755 "$r/sample-apiserver"
  r="$work/rootfs-etcd"
  mkdir -p "$r/usr/local/bin"
  cp "$E2E_DIR/bin/etcd" "$r/usr/local/bin/etcd"
  chmod 0755 "$r/usr/local/bin/etcd"
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
  extract_debs "$work/debs"
  make_rootfses "$work" "${pause_tags[0]}" "$work/debs"
  rm -rf "$work/debs"

  local -A layer_of=()
  local diff_id digest size rootfses
  rootfses="$(for img in "${IMAGES[@]}"; do image_layers "$img"; done | tr ' ' '\n' | LC_ALL=C sort -u)"
  for rootfs in $rootfses; do
    read -r diff_id digest size < <(make_layer "$work/rootfs-$rootfs" "$work/layer-$rootfs")
    layer_of[$rootfs]="$diff_id $digest $size"
  done

  local layers=() upper u_diff u_digest u_size
  : >"$out/images.txt"
  for img in "${IMAGES[@]}"; do
    repo="$(image_repo "$img")"
    names=()
    for tag in ${tags_of[$img]}; do
      unpullable "$repo:$tag" && continue
      names+=("$repo:$tag")
    done
    ((${#names[@]} > 0)) || continue
    read -r -a layers <<<"$(image_layers "$img")"
    rootfs="${layers[0]}"
    read -r diff_id digest size <<<"${layer_of[$rootfs]}"
    LAYER_FILE="$work/layer-$rootfs.tar.gz"
    OCI_UPPER_LAYERS=()
    for upper in "${layers[@]:1}"; do
      read -r u_diff u_digest u_size <<<"${layer_of[$upper]}"
      OCI_UPPER_LAYERS+=("$work/layer-$upper.tar.gz $u_digest $u_size $u_diff")
    done
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
      log "not built (no [Conformance] or NodeConformance spec runs it): $line"
    fi
  done <<<"$listed"
  log "built $(wc -l <"$out/images.txt") image tars in $((SECONDS - t0))s"
}

# Sets IMAGES_DIR to the cache dir holding the image tars and images.txt, building them when absent.
# (Not a $(...) function: the cleanup of a failed build must run in this shell.)
IMAGES_DIR=""
ensure_images() {
  if ! e2e_cached || ! extras_cached; then
    die "no e2e binaries for $KUBE_VERSION in $E2E_DIR (or not all of them): run '$0 build' first"
  fi
  ensure_packages
  resolve_debs
  local key dir
  key="$(images_key)"
  dir="$IMAGES_ROOT/$key"
  IMAGES_DIR="$dir"
  [[ -s "$dir/images.txt" ]] && return 0
  command -v gcc >/dev/null || die "gcc is needed to build pause and nonewprivs: apt-get install gcc libc6-dev"
  command -v readelf >/dev/null || die "readelf is needed to find the Debian tools' loader: apt-get install binutils"
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
  if ! fetch_debs; then
    # A package list older than the mirror names files it no longer has: refresh it once, and build what
    # the new list names (a new key).
    need_root "apt-get update (apt-get download failed)"
    log "apt-get download failed; apt-get update and once more"
    apt_get update || die "apt-get update failed"
    resolve_debs
    key="$(images_key)"
    dir="$IMAGES_ROOT/$key"
    IMAGES_DIR="$dir"
    [[ -s "$dir/images.txt" ]] && return 0
    fetch_debs || fail "apt-get download of the agnhost image's Debian packages failed"
  fi
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
  if [[ "${1:-}" == --csi-node ]]; then
    ensure_busybox
    ensure_csi_images node
    print_images "$CSI_IMAGES_DIR"
    return 0
  fi
  ensure_images
  print_images "$IMAGES_DIR"
  if [[ "${1:-}" == --csi ]]; then
    ensure_busybox
    ensure_csi_images
    print_images "$CSI_IMAGES_DIR"
  elif [[ -n "${1:-}" ]]; then
    usage
  fi
}

# ---- the sig-storage images of the DRA and CSI mock specs
#
# Upstream's are distroless (alpine for hostpathplugin) with one binary as entrypoint. Here each binary comes
# from scripts/csi-plugins.sh (upstream's sources at a pinned tag): the hostpath driver's proxy mode relays
# the kubelet's and the sidecars' unix-socket connections to the TCP port that e2e.test port-forwards to,
# where the specs' own CSI driver and DRA kubelet plugin answer.
readonly CSI_IMAGES_RECIPE='1'
readonly CSI_REGISTRY='registry.k8s.io/sig-storage'
CSI_IMAGES_DIR=""

# ensure_csi_images [node]: every sig-storage image (csi-plugins.sh sidecars), or the two node plugins' only.
ensure_csi_images() {
  local set="${1:-sidecars}" bins key dir name bin
  ensure_images
  bins="$(bash "$SCRIPTS_DIR/csi-plugins.sh" "$set")" || die "scripts/csi-plugins.sh $set failed"
  # The binaries' cache paths name their repositories and tags: part of the key.
  key="csi-r${CSI_IMAGES_RECIPE}_$(printf '%s\n' "$bins" "$(basename "$IMAGES_DIR")" | sha256sum | cut -c1-16)"
  dir="$IMAGES_ROOT/$key"
  CSI_IMAGES_DIR="$dir"
  [[ -s "$dir/images.txt" ]] && return 0
  exec 8>"$IMAGES_ROOT/.lock"
  flock 8
  [[ -s "$dir/images.txt" ]] && return 0
  log "building the sig-storage images (once; cached in $dir)"
  local stage work listed tags tag names diff_id digest size
  new_stage "$IMAGES_ROOT"
  stage="$DIR"
  work="$stage/.work"
  mkdir -p "$work"
  listed="$(cut -d' ' -f1 <"$IMAGES_DIR/list-images.txt" 2>/dev/null || "$E2E_DIR/bin/e2e.test" --list-images 2>/dev/null)"
  : >"$stage/images.txt"
  while read -r name bin; do
    [[ -x "$bin" ]] || fail "csi-plugins.sh printed no binary for $name"
    tags="$(sed -n "s#^$CSI_REGISTRY/$name:##p" <<<"$listed" | sort -u -r -V | tr '\n' ' ')"
    [[ -n "$tags" ]] || { log "e2e.test lists no $CSI_REGISTRY/$name; not built"; continue; }
    names=()
    for tag in $tags; do names+=("$CSI_REGISTRY/$name:$tag"); done
    rm -rf "$work/root"
    if [[ "$name" == hostpathplugin ]]; then
      make_rootfs "$work/root" "$BUSYBOX_BIN"
    else
      mkdir -p "$work/root/tmp"
      chmod 1777 "$work/root/tmp"
    fi
    cp "$bin" "$work/root/$name"
    chmod 0755 "$work/root/$name"
    read -r diff_id digest size < <(make_layer "$work/root" "$work/layer-$name")
    LAYER_FILE="$work/layer-$name.tar.gz"
    OCI_UPPER_LAYERS=()
    build_image "$stage/$name.tar" "${names[0]}" "$digest" "$size" "$diff_id" "\"Entrypoint\":[\"/$name\"]" "${names[@]:1}"
    digest="$(tar -xOf "$stage/$name.tar" index.json | sed -n 's/^{"schemaVersion":2,"manifests":\[{[^}]*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p')"
    [[ -n "$digest" ]] || fail "no manifest digest in $stage/$name.tar"
    echo "$name.tar $digest ${names[*]}" >>"$stage/images.txt"
  done <<<"$bins"
  rm -rf "$work"
  rm -rf "$dir"
  mv -T "$stage" "$dir"
}

# ---------------------------------------------------------------------------------------------- import

cmd_import() {
  local sock="${1:-}"
  [[ -n "$sock" ]] || usage
  [[ -S "$sock" ]] || fail "no containerd socket at $sock"
  command -v ctr >/dev/null || die "ctr (from the containerd package) is not installed"
  local dirs=()
  if [[ "${2:-}" == --csi-node ]]; then
    ensure_busybox
    ensure_csi_images node
    dirs=("$CSI_IMAGES_DIR")
  else
    ensure_images
    dirs=("$IMAGES_DIR")
  fi
  if [[ "${2:-}" == --csi-node ]]; then
    :
  elif [[ "${2:-}" == --csi ]]; then
    ensure_busybox
    ensure_csi_images
    dirs+=("$CSI_IMAGES_DIR")
  elif [[ -n "${2:-}" ]]; then
    usage
  fi
  # What the namespace holds already: "<ref> <digest>" per image.
  local present
  present="$(ctr --address "$sock" -n "$NAMESPACE" images ls 2>/dev/null | awk 'NR > 1 {print $1, $3}')" ||
    fail "cannot list the images at $sock"
  local dir file digest names name missing imported=0 skipped=0 t0
  for dir in "${dirs[@]}"; do
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
  done
  log "imported $imported image tars, $skipped already present"
  for dir in "${dirs[@]}"; do print_images "$dir"; done
}

# ---------------------------------------------------------------------------------------------- main

case "${1:-}" in
  build) cmd_build ;;
  images) cmd_images "${2:-}" ;;
  import) cmd_import "${2:-}" "${3:-}" ;;
  *) usage ;;
esac
