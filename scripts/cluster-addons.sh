#!/usr/bin/env bash
# The two cluster add-ons that give pods Services and cluster DNS, as container images for a private
# containerd: real kube-proxy (the control plane's release) and real CoreDNS. The objects that run them are
# scripts/addons/{kube-proxy,coredns}.yaml, rendered and applied by scripts/lib/addons.ts.
#
#   cluster-addons.sh build           builds CoreDNS from the Go module proxy and both image tars (kube-proxy
#                                     comes from scripts/kube-binaries.sh); the last stdout line is the
#                                     directory holding kube-proxy.tar and coredns.tar
#   cluster-addons.sh import <sock>   `build`, then `ctr -n k8s.io images import` of each tar whose image is
#                                     not present with the same digest already; prints `<tar> <image>` lines
#   cluster-addons.sh images          prints the two image references
#
# Images (OCI image layout tars, named by their io.containerd.image.name annotation; no registry here):
#   registry.k8s.io/kube-proxy:<k8s-version>    /usr/local/bin/kube-proxy, Debian's iptables (the nft variant:
#       iptables, iptables-save, iptables-restore and ip6tables* link to xtables-nft-multi), nft and conntrack
#       with the libraries they load (libc6 included), each package unpacked with `dpkg -x` from `apt-get
#       download`, and Debian's busybox-static for a shell. Entrypoint kube-proxy.
#   registry.k8s.io/coredns/coredns:<version>   only /coredns (static). Entrypoint /coredns. It runs as root
#       (the upstream image runs as 65532 with a file capability to bind :53; a file capability needs xattrs
#       in the layer, which these layers do not carry): the Deployment grants NET_BIND_SERVICE.
#
# Cache, outside the repo (CACHE=${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}):
#   $CACHE/coredns/<coredns-version>/bin/coredns
#   $CACHE/addon-images/<key>/{kube-proxy.tar,coredns.tar,images.txt,PACKAGES}
# keyed by ADDONS_RECIPE, the Kubernetes and CoreDNS versions, the architecture, the Debian release and
# busybox-static's version (PACKAGES lists the exact .deb versions in the kube-proxy image). The Go build
# holds $CACHE/.lock as kube-binaries.sh and upstream-e2e.sh do (one Go build at a time on the machine).
#
# Pins: KUBE_VERSION (default: the pin in scripts/kube-binaries.sh), COREDNS_VERSION. apt-get waits for a
# lock that another apt-get or dpkg holds (up to APT_LOCK_WAIT seconds, default 600) instead of failing.
# Progress goes to stderr. Exit 0: done; 1: a step failed; 2: a prerequisite (Go, root, a package) is
# missing; 64: usage.
set -euo pipefail
# Errors inside $(...) stop the script too.
shopt -s inherit_errexit

SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The OCI image layout writer shared with containerd.sh and upstream-e2e.sh (build_image, make_rootfs, ...).
# shellcheck source=lib/oci.sh source-path=SCRIPTDIR
source "$SCRIPTS_DIR/lib/oci.sh"
OCI_CREATED_BY='kubelet-operator scripts/cluster-addons.sh'
# apt-get that waits for the apt/dpkg lock and the Depends closure (apt_get, apt_lists_know, deb_closure).
# shellcheck source=lib/apt.sh source-path=SCRIPTDIR
source "$SCRIPTS_DIR/lib/apt.sh"

log() { echo "cluster-addons: $*" >&2; }
fail() {
  echo "cluster-addons: $*" >&2
  exit 1
}
die() {
  echo "cluster-addons: $*" >&2
  exit 2
}
usage() {
  echo "usage: $0 build | import <containerd-socket> | images" >&2
  exit 64
}

# The one place the CoreDNS release is pinned.
COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
# One Kubernetes pin for the whole project: kube-binaries.sh's default, unless KUBE_VERSION is set.
if [[ -z "${KUBE_VERSION:-}" ]]; then
  # shellcheck disable=SC2016 # the pattern matches the literal text `${KUBE_VERSION:-v…}`
  KUBE_VERSION="$(sed -n 's/^KUBE_VERSION="\${KUBE_VERSION:-\(v[0-9][^}"]*\)}"$/\1/p' "$SCRIPTS_DIR/kube-binaries.sh" | head -n 1)"
  [[ -n "$KUBE_VERSION" ]] || fail "cannot read the default KUBE_VERSION from $SCRIPTS_DIR/kube-binaries.sh"
fi
export KUBE_VERSION
# Oldest Go that builds the pinned CoreDNS (the `go` line of its go.mod).
GO_NEEDED="1.26"
# Bump when what the images hold changes: it is part of the cache key.
readonly ADDONS_RECIPE='1'

readonly KUBE_PROXY_IMAGE="registry.k8s.io/kube-proxy:$KUBE_VERSION"
readonly COREDNS_IMAGE="registry.k8s.io/coredns/coredns:$COREDNS_VERSION"
readonly NAMESPACE='k8s.io'
# Debian packages whose files make the kube-proxy image's userspace (their Depends and Pre-Depends are
# added, recursively): iptables for the rules kube-proxy writes, nftables for `nft` (kube-proxy in iptables
# mode looks for it to clean up what an nftables-mode kube-proxy left behind; also handy to look at the
# rules), conntrack to look at or flush connection tracking by hand.
readonly KUBE_PROXY_PACKAGES=(iptables nftables conntrack)
# iptables names kube-proxy runs, all made the nft variant (this kernel has nf_tables and the xtables
# matches built in; the legacy variant would need ip_tables).
readonly IPTABLES_NAMES=(iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore)

CACHE_ROOT="${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}"
COREDNS_DIR="$CACHE_ROOT/coredns/$COREDNS_VERSION"
COREDNS_BIN="$COREDNS_DIR/bin/coredns"
IMAGES_ROOT="$CACHE_ROOT/addon-images"

# ---------------------------------------------------------------------------------------------- helpers

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

need_root() {
  [[ "$(id -u)" == 0 ]] || die "$1 needs root: run as root or with sudo"
}

pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }
pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

# busybox-static gives the kube-proxy image its shell (as containerd.sh's test images).
ensure_busybox() {
  pkg_installed busybox-static && [[ -x /bin/busybox ]] && return 0
  need_root "installing busybox-static"
  apt_lists_know busybox-static
  log "installing busybox-static"
  apt_get install -y --no-install-recommends busybox-static || die "apt-get install busybox-static failed"
}

need_go() {
  if ! command -v go >/dev/null 2>&1; then
    die "Go ${GO_NEEDED}+ is needed to build CoreDNS $COREDNS_VERSION the first time (nothing cached in $COREDNS_DIR): install it from https://go.dev/doc/install."
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
        die "Go ${GO_NEEDED}+ is needed to build CoreDNS $COREDNS_VERSION, found go$v: install a newer Go from https://go.dev/doc/install (or set GOTOOLCHAIN=auto with Go 1.21+ so go fetches one)."
      fi
      log "go$v is older than $GO_NEEDED; relying on GOTOOLCHAIN to fetch a newer toolchain"
    fi
  fi
}

# ---------------------------------------------------------------------------------------------- binaries

# Prints the path of a kube-proxy of KUBE_VERSION: KUBEBUILDER_ASSETS' when it has one, else the cache's
# (scripts/kube-binaries.sh builds it when missing, next to the control plane's binaries).
kube_proxy_bin() {
  local bin="" assets got
  if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "$KUBEBUILDER_ASSETS/kube-proxy" ]]; then
    bin="$KUBEBUILDER_ASSETS/kube-proxy"
  else
    assets="$(env -u KUBEBUILDER_ASSETS bash "$SCRIPTS_DIR/kube-binaries.sh" | tail -n 1)" ||
      fail "scripts/kube-binaries.sh failed"
    [[ -x "$assets/kube-proxy" ]] || fail "scripts/kube-binaries.sh left no kube-proxy in $assets"
    bin="$assets/kube-proxy"
  fi
  bin="$(readlink -f "$bin")"
  got="$("$bin" --version 2>/dev/null || true)"
  [[ "$got" == "Kubernetes $KUBE_VERSION" ]] || fail "$bin reports '$got', not Kubernetes $KUBE_VERSION"
  echo "$bin"
}

coredns_steps() {
  local work="$1" stage="$2" gomod
  cd "$work"
  go mod init kubelet-operator.invalid/coredns-build >/dev/null 2>&1
  # CoreDNS' go.mod replaces nothing with local paths (kubernetes' and etcd's do), so requiring the
  # module builds exactly its release: its main package is the module root.
  gomod="$(go mod download -json "github.com/coredns/coredns@$COREDNS_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  if grep -Eq '^[[:space:]]*replace[[:space:]]' "$gomod"; then
    echo "cluster-addons: CoreDNS $COREDNS_VERSION's go.mod has replace directives; this build ignores them" >&2
  fi
  go get "github.com/coredns/coredns@$COREDNS_VERSION"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$stage/bin/coredns" github.com/coredns/coredns
}

# Builds CoreDNS into the cache when absent (under the Go build lock).
ensure_coredns() {
  [[ -x "$COREDNS_BIN" ]] && return 0
  mkdir -p "$CACHE_ROOT/coredns"
  # The same lock as kube-binaries.sh and upstream-e2e.sh: one Go build at a time on the machine.
  exec 9>"$CACHE_ROOT/.lock"
  if ! flock -n 9; then
    log "another build holds $CACHE_ROOT/.lock; waiting for it"
    flock 9
  fi
  if [[ ! -x "$COREDNS_BIN" ]]; then
    # Leftovers of a build that was killed hard (we hold the lock, so nobody else is building).
    rm -rf "$CACHE_ROOT"/coredns/.partial-*
    need_go
    local start=$SECONDS work stage
    log "building CoreDNS $COREDNS_VERSION from the Go module proxy (once; cached in $COREDNS_DIR)"
    new_workdir coredns-build
    work="$DIR"
    new_stage "$CACHE_ROOT/coredns"
    stage="$DIR"
    mkdir -p "$stage/bin"
    run_step coredns_steps "$work" "$stage" >&2
    printf 'coredns %s built with %s in %ss on %s\n' "$COREDNS_VERSION" "$(go env GOVERSION)" \
      $((SECONDS - start)) "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$stage/BUILD-INFO"
    rm -rf "$COREDNS_DIR"
    mv -T "$stage" "$COREDNS_DIR"
    log "CoreDNS $COREDNS_VERSION built in $((SECONDS - start))s"
  fi
  # Done with Go: let the next build in.
  exec 9>&-
}

# ---------------------------------------------------------------------------------------------- images

# The cache key: recipe, versions, arch, the Debian release the packages come from, and busybox-static.
images_key() {
  local codename
  codename="$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null | head -n 1)"
  printf 'r%s_kube-proxy-%s_coredns-%s_%s_debian-%s_busybox-%s\n' "$ADDONS_RECIPE" "$KUBE_VERSION" \
    "$COREDNS_VERSION" "$(image_arch)" "${codename:-unknown}" "$(pkg_version busybox-static)" |
    tr -c 'A-Za-z0-9._+\n-' '_'
}

images_built() { [[ -s "$1/images.txt" && -s "$1/kube-proxy.tar" && -s "$1/coredns.tar" ]]; }

# ELF files under the root whose libraries the dynamic loader must find: the programs, and the iptables
# extensions (libxt_*.so, loaded with dlopen as rules name them).
elf_files() {
  local root="$1" f
  while IFS= read -r f; do
    [[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" == '177ELF' ]] && echo "${f#"$root"}"
  done < <(find "$root/usr/sbin" "$root/usr/bin" "$root/sbin" "$root"/usr/lib/*/xtables -type f 2>/dev/null)
  return 0
}

# Checks, from inside the root, that every binary finds its libraries and that the iptables names run the
# nft variant; then, in a network namespace of its own (no rule of this machine is touched), that rules of
# the kind kube-proxy writes load. Needs root (chroot); without it the checks are skipped.
check_kube_proxy_root() {
  local root="$1" f out ldso
  if [[ "$(id -u)" != 0 ]]; then
    log "not root: skipping the checks that run the image's binaries in a chroot"
    return 0
  fi
  ldso="$(cd "$root" && find lib64 lib -maxdepth 2 -name 'ld-linux*.so*' 2>/dev/null | head -n 1)"
  [[ -n "$ldso" ]] || fail "no dynamic loader (ld-linux*) in the kube-proxy root"
  while IFS= read -r f; do
    # ld.so exits non-zero for a static binary too: what counts is whether it names a library it lacks.
    out="$(chroot "$root" "/$ldso" --list "$f" 2>&1 || true)"
    if [[ "$out" == *'not found'* || "$out" == *'error while loading shared libraries'* ]]; then
      fail "$f in the kube-proxy image lacks libraries: $(tr -s ' \t\n' ' ' <<<"$out")"
    fi
  done < <(elf_files "$root")
  for f in "${IPTABLES_NAMES[@]}"; do
    out="$(chroot "$root" "/usr/sbin/$f" --version 2>&1)" || fail "$f --version failed in the kube-proxy root: $out"
    [[ "$out" == *'(nf_tables)'* ]] || fail "$f is not the nft variant in the kube-proxy root: $out"
  done
  out="$(chroot "$root" /usr/local/bin/kube-proxy --version 2>&1)" || fail "kube-proxy --version failed: $out"
  chroot "$root" /bin/sh -c 'nft --version && conntrack --version' >/dev/null 2>&1 ||
    fail "nft or conntrack does not run in the kube-proxy root"
  if ! command -v unshare >/dev/null; then
    log "no unshare: skipping the iptables rule check"
    return 0
  fi
  # A NAT chain with the matches kube-proxy's rules use (comment, mark, addrtype, statistic, conntrack).
  # (The root has no /dev: nothing in it may redirect to /dev/null.)
  if ! out="$(unshare --net chroot "$root" /bin/sh -c '
      iptables -w -t nat -N KUBE-CHECK &&
      iptables -w -t nat -A KUBE-CHECK -m comment --comment "check" -m addrtype --dst-type LOCAL -j MARK --set-xmark 0x4000/0x4000 &&
      iptables -w -t nat -A KUBE-CHECK -m statistic --mode random --probability 0.5 -j RETURN &&
      iptables -w -t filter -A INPUT -m conntrack --ctstate INVALID -j DROP &&
      iptables-save -t nat | grep -q KUBE-CHECK &&
      printf "*nat\n:KUBE-CHECK2 - [0:0]\n-A KUBE-CHECK2 -j RETURN\nCOMMIT\n" | iptables-restore -w --noflush &&
      ip6tables -w -t nat -S POSTROUTING' 2>&1)"; then
    log "warning: iptables rules of the kind kube-proxy writes do not load in a network namespace here: $out"
  fi
}

# Builds the kube-proxy root filesystem into $1 with the kube-proxy binary $2; writes the package list to $3.
make_kube_proxy_root() {
  local root="$1" kube_proxy="$2" packages_file="$3" work deb p n
  work="$(dirname "$root")/debs"
  mkdir -p "$work"
  # busybox first (its applets are symlinks in /bin); the packages put nothing in /bin.
  make_rootfs "$root"
  apt_lists_know "${KUBE_PROXY_PACKAGES[@]}"
  local packages
  mapfile -t packages < <(deb_closure "${KUBE_PROXY_PACKAGES[@]}")
  ((${#packages[@]} > 0)) || fail "apt-cache found no packages for ${KUBE_PROXY_PACKAGES[*]}"
  log "downloading ${#packages[@]} Debian packages: ${packages[*]}"
  (cd "$work" && apt_get download "${packages[@]}") || fail "apt-get download failed"
  : >"$packages_file"
  for deb in "$work"/*.deb; do
    dpkg-deb -x "$deb" "$root"
    printf '%s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" >>"$packages_file"
  done
  n="$(wc -l <"$packages_file")"
  ((n == ${#packages[@]})) || fail "downloaded $n packages, expected ${#packages[@]}"
  printf 'busybox-static %s\n' "$(pkg_version busybox-static)" >>"$packages_file"
  # Not needed in an image: documentation (each package's copyright stays), manuals, lintian data.
  rm -rf "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/lintian" "$root/usr/share/bug"
  find "$root/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete 2>/dev/null || true
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
  # The alternatives Debian's iptables postinst would make, pointing at the nft variant.
  for p in "${IPTABLES_NAMES[@]}"; do
    # Debian's own names for the nft variant: iptables-nft, iptables-nft-save, ip6tables-nft-restore, ...
    [[ -x "$root/usr/sbin/${p/tables/tables-nft}" ]] || fail "no /usr/sbin/${p/tables/tables-nft} in Debian's iptables"
    rm -f "$root/usr/sbin/$p"
    ln -s xtables-nft-multi "$root/usr/sbin/$p"
  done
  # The runtime mounts the xtables lock at /run/xtables.lock and the config under /var/lib/kube-proxy.
  mkdir -p "$root/usr/local/bin" "$root/run" "$root/var/lib/kube-proxy"
  cp "$kube_proxy" "$root/usr/local/bin/kube-proxy"
  chmod 0755 "$root/usr/local/bin/kube-proxy"
  check_kube_proxy_root "$root"
}

# Writes kube-proxy.tar, coredns.tar, images.txt (`<file> <manifest digest> <name>`) and PACKAGES into <out>.
build_images() {
  local out="$1" kube_proxy="$2" work="$1/.work" diff_id digest size t0=$SECONDS
  mkdir -p "$work/rootfs-coredns"
  make_kube_proxy_root "$work/rootfs-kube-proxy" "$kube_proxy" "$out/PACKAGES"
  cp "$COREDNS_BIN" "$work/rootfs-coredns/coredns"
  chmod 0755 "$work/rootfs-coredns/coredns"

  : >"$out/images.txt"
  local img name config
  for img in kube-proxy coredns; do
    case "$img" in
      kube-proxy)
        name="$KUBE_PROXY_IMAGE"
        config='"Entrypoint":["/usr/local/bin/kube-proxy"]'
        ;;
      coredns)
        name="$COREDNS_IMAGE"
        config='"Entrypoint":["/coredns"]'
        ;;
    esac
    read -r diff_id digest size < <(make_layer "$work/rootfs-$img" "$work/layer-$img")
    LAYER_FILE="$work/layer-$img.tar.gz"
    build_image "$out/$img.tar" "$name" "$digest" "$size" "$diff_id" "$config"
    # The manifest digest, as `ctr images ls` shows it: read back from the tar's index.json.
    digest="$(tar -xOf "$out/$img.tar" index.json | sed -n 's/^{"schemaVersion":2,"manifests":\[{[^}]*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p')"
    [[ -n "$digest" ]] || fail "no manifest digest in $out/$img.tar"
    echo "$img.tar $digest $name" >>"$out/images.txt"
    log "built $img.tar ($name, $(($(size_of "$out/$img.tar") / 1048576)) MiB)"
  done
  rm -rf "$work"
  log "built the image tars in $((SECONDS - t0))s"
}

# Sets IMAGES_DIR to the cache dir holding both tars, building what is missing (binaries included).
# (Not a $(...) function: the cleanup of a failed build must run in this shell.)
IMAGES_DIR=""
ensure_images() {
  local dir kube_proxy
  IMAGES_DIR="$IMAGES_ROOT/$(images_key)"
  images_built "$IMAGES_DIR" && return 0
  # kube-proxy first: kube-binaries.sh takes the Go build lock that ensure_coredns holds while it builds.
  kube_proxy="$(kube_proxy_bin)"
  ensure_coredns
  ensure_busybox
  if ! command -v dpkg-deb >/dev/null || ! command -v apt-get >/dev/null; then
    die "the kube-proxy image is made of Debian packages: it needs apt-get and dpkg-deb (Debian or Ubuntu)"
  fi
  # busybox-static may just have been installed: the key names its version.
  IMAGES_DIR="$IMAGES_ROOT/$(images_key)"
  dir="$IMAGES_DIR"
  mkdir -p "$IMAGES_ROOT"
  # Its own lock: an image build must not wait for a Go build.
  exec 8>"$IMAGES_ROOT/.lock"
  if ! flock -n 8; then
    log "another image build holds $IMAGES_ROOT/.lock; waiting for it"
    flock 8
  fi
  if ! images_built "$dir"; then
    rm -rf "$IMAGES_ROOT"/.partial-*
    log "building the add-on images $KUBE_PROXY_IMAGE and $COREDNS_IMAGE (once; cached in $dir)"
    local stage
    new_stage "$IMAGES_ROOT"
    stage="$DIR"
    (
      umask 022
      build_images "$stage" "$kube_proxy"
    ) >&2
    rm -rf "$dir"
    mv -T "$stage" "$dir"
  fi
  exec 8>&-
}

cmd_build() {
  ensure_images
  echo "$IMAGES_DIR"
}

cmd_images() {
  echo "$KUBE_PROXY_IMAGE"
  echo "$COREDNS_IMAGE"
}

# ---------------------------------------------------------------------------------------------- import

cmd_import() {
  local sock="${1:-}"
  [[ -n "$sock" ]] || usage
  [[ -S "$sock" ]] || fail "no containerd socket at $sock"
  command -v ctr >/dev/null || die "ctr (from the containerd package) is not installed: run scripts/containerd.sh install"
  ensure_images
  local dir="$IMAGES_DIR" present file digest name t0
  # What the namespace holds already: "<ref> <digest>" per image.
  present="$(ctr --address "$sock" -n "$NAMESPACE" images ls 2>/dev/null | awk 'NR > 1 {print $1, $3}')" ||
    fail "cannot list the images at $sock"
  while read -r file digest name; do
    if grep -qxF "$name $digest" <<<"$present"; then
      log "$name is present already"
    else
      t0=$SECONDS
      ctr --address "$sock" -n "$NAMESPACE" images import "$dir/$file" >/dev/null ||
        fail "importing $dir/$file failed"
      log "imported $file ($name) in $((SECONDS - t0))s"
    fi
    echo "$dir/$file $name"
  done <"$dir/images.txt"
}

# ---------------------------------------------------------------------------------------------- main

case "${1:-}" in
  build) cmd_build ;;
  import) cmd_import "${2:-}" ;;
  images) cmd_images ;;
  *) usage ;;
esac
