#!/usr/bin/env bash
# `npm run image`: the operator's image as an OCI image layout tar, built from the Dockerfile's stages
# without a docker engine or a registry.
#
#   image.sh [build]          writes .local/image/kubelet-operator.oci.tar (IMAGE_OUT_DIR overrides the
#                             directory); the last stdout line is its path
#   image.sh import <sock>    `build`, then `ctr -n k8s.io images import` at the containerd socket <sock>
#                             unless both names are present there with the same digest; prints the names
#   image.sh names            prints the image's names
#
# Names (io.containerd.image.name in the tar; `ctr images import` registers both):
#   docker.io/library/kubelet-operator:<package.json version>   what the manifests run (kubelet-operator:0.1.0)
#   docker.io/library/kubelet-operator:dev                      the local tag of the last build
#
# Layers:
#   1. a stand-in for the Dockerfile's base node:22-bookworm-slim, which cannot be pulled here: the Debian
#      bookworm packages Node loads (libc6, libgcc-s1, libstdc++6 and their Depends: gcc-12-base) and tzdata
#      (files only; its one Depends, debconf, serves its maintainer scripts), unpacked with `dpkg-deb -x`
#      from `apt-get download` in a merged /usr as Debian 12 has it, plus /usr/local/bin/node from Node's
#      official Linux build of the pinned version (scripts/image-node.sh); /etc/passwd and /etc/group with
#      root, nobody and nonroot (65532), /etc/nsswitch.conf, /etc/localtime (UTC), /tmp (1777), an
#      /etc/os-release that says what it is. No shell, no apt, no npm: the final stage runs none of them
#      (the Dockerfile's `npm ci` steps run on the host, below). node:22-bookworm-slim has no
#      ca-certificates either (Node carries Mozilla's CA store; the operator trusts its cluster's CA file).
#   2. /app: the Dockerfile's final stage as scripts/lib/dockerfile.sh replays it (dist, production
#      node_modules, package.json, package-lock.json), root-owned;
#   3. its compile cache (NODE_COMPILE_CACHE), owned by and filled as the image's uid: the final stage's
#      fill step runs again inside this image's root (unshare --root, as that uid, on the image's own
#      libraries), because Node keys the cache by the modules' absolute paths, which the replay's temp dir
#      does not share. A layer of its own: V8 writes its per-process random hash seed into the cache, so this
#      small layer is the only one whose digest changes when the same inputs are built again.
# Config, from the final stage: ENTRYPOINT, CMD, USER, ENV (after the base's PATH and NODE_VERSION),
# WORKDIR, EXPOSE and LABEL (ARG VERSION = package.json's version).
#
# Deterministic but for layer 3: every entry has lib/oci.sh's epoch as mtime, the entries are sorted, gzip
# stores no name or time. Cached: the base layer in $CACHE/operator-image/base/<key>/ (key: recipe, Node version,
# architecture, Debian release and the .deb files' checksums; the .deb files in
# $CACHE/operator-image/debs-<arch>/), with CACHE=${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator};
# the whole tar is rebuilt only when its inputs change (the Dockerfile, the build context that
# .dockerignore lets through, these scripts, the base layer): .local/image/kubelet-operator.inputs.
#
# Needs root (RUN steps and the cache fill as the image's uid, chown), apt-get, dpkg-deb and unshare.
# Progress goes to stderr. Exit 0: done; 1: a step failed; 2: a prerequisite is missing; 64: usage.
set -euo pipefail
shopt -s inherit_errexit

SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$SCRIPTS_DIR/.." && pwd)"
# shellcheck source=lib/oci.sh source-path=SCRIPTDIR
source "$SCRIPTS_DIR/lib/oci.sh"
# shellcheck source=lib/apt.sh source-path=SCRIPTDIR
source "$SCRIPTS_DIR/lib/apt.sh"
# shellcheck source=lib/dockerfile.sh source-path=SCRIPTDIR
source "$SCRIPTS_DIR/lib/dockerfile.sh"
OCI_CREATED_BY='kubelet-operator scripts/image.sh'

log() { echo "image: $*" >&2; }
fail() {
  echo "image: $*" >&2
  exit 1
}
die() {
  echo "image: $*" >&2
  exit 2
}
usage() {
  echo "usage: $0 [build] | import <containerd-socket> | names" >&2
  exit 64
}
need_root() {
  [[ "$(id -u)" == 0 ]] || die "$1 needs root: run as root or with sudo"
}

# Bump when what the base layer holds changes: it is part of its cache key.
readonly BASE_RECIPE='1'
# Debian packages whose files the base layer holds, with their Depends closure.
readonly BASE_PACKAGES=(libc6 libgcc-s1 libstdc++6)
# Debian packages whose files the base layer holds without their Depends.
readonly BASE_PACKAGES_FILES_ONLY=(tzdata)
# The base image's own config (node:22-bookworm-slim, after debian:bookworm-slim): PATH and NODE_VERSION.
readonly BASE_PATH='/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
readonly NAMESPACE='k8s.io'

DOCKERFILE="$REPO/Dockerfile"
VERSION="$(node -p 'require(process.argv[1]).version' "$REPO/package.json")"
readonly IMAGE_REPO='docker.io/library/kubelet-operator'
IMAGE_NAMES=("$IMAGE_REPO:$VERSION" "$IMAGE_REPO:dev")
OUT_DIR="${IMAGE_OUT_DIR:-$REPO/.local/image}"
OUT="$OUT_DIR/kubelet-operator.oci.tar"
INPUTS="$OUT_DIR/kubelet-operator.inputs"
CACHE_ROOT="${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}"
IMAGE_CACHE="$CACHE_ROOT/operator-image"

WORKDIRS=()
cleanup() {
  local d
  for d in "${WORKDIRS[@]}"; do [[ -n "$d" ]] && rm -rf "$d"; done
  return 0
}
trap cleanup EXIT
# Sets DIR (not echoed: a $(...) subshell would lose the cleanup registration).
new_workdir() {
  DIR="$(mktemp -d "$1/${2:-.image}-XXXXXX")"
  chmod 755 "$DIR"
  WORKDIRS+=("$DIR")
}

# ---------------------------------------------------------------------------------------------- base

NODE_BIN=""
NODE_VERSION=""
BASE_DIR=""

# Sets NODE_BIN, NODE_VERSION, DEB_ROWS (the packages' files) and BASE_DIR (the base layer's cache dir).
resolve_base() {
  local names codename
  NODE_BIN="$(bash "$SCRIPTS_DIR/image-node.sh" | tail -n 1)" || fail "scripts/image-node.sh failed"
  NODE_VERSION="$("$NODE_BIN" --version)"
  NODE_VERSION="${NODE_VERSION#v}"
  apt_lists_know "${BASE_PACKAGES[@]}" "${BASE_PACKAGES_FILES_ONLY[@]}"
  mapfile -t names < <({ deb_closure "${BASE_PACKAGES[@]}" && printf '%s\n' "${BASE_PACKAGES_FILES_ONLY[@]}"; } | LC_ALL=C sort -u)
  ((${#names[@]} > ${#BASE_PACKAGES[@]})) || fail "apt-cache depends listed no packages for ${BASE_PACKAGES[*]}"
  debs_resolve "the operator image" "${names[@]}"
  codename="$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null | head -n 1)"
  BASE_DIR="$IMAGE_CACHE/base/$(printf 'r%s_node-%s_%s_debian-%s_debs-%s' "$BASE_RECIPE" "$NODE_VERSION" \
    "$(image_arch)" "${codename:-unknown}" "$DEBS_KEY" | tr -c 'A-Za-z0-9._+\n-' '_')"
}

base_built() { [[ -s "$1/layer.tar.gz" && -s "$1/layer.txt" ]]; }

# Moves /bin, /sbin, /lib and /lib64 of the unpacked packages under /usr and links them there, as Debian 12
# installs them (merged /usr).
merge_usr() {
  local root="$1" d
  for d in bin sbin lib lib64; do
    [[ -L "$root/$d" ]] && continue
    if [[ -d "$root/$d" ]]; then
      mkdir -p "$root/usr/$d"
      cp -a "$root/$d/." "$root/usr/$d/"
      rm -rf "${root:?}/$d"
    fi
    mkdir -p "$root/usr/$d"
    ln -s "usr/$d" "$root/$d"
  done
}

# Fills <root> with the base image's files: the packages, Node, the users, the few files in /etc.
make_base_root() {
  local root="$1" debs="$2" row file
  mkdir -p "$root"
  for row in "${DEB_ROWS[@]}"; do
    read -r file _ <<<"$row"
    dpkg-deb -x "$debs/$file" "$root"
    printf '%s %s\n' "$(dpkg-deb -f "$debs/$file" Package)" "$(dpkg-deb -f "$debs/$file" Version)" >>"$root.packages"
  done
  merge_usr "$root"
  # Not needed in an image: documentation (each package's copyright stays), manuals, lintian data.
  rm -rf "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/lintian" "$root/usr/share/bug"
  find "$root/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete 2>/dev/null || true
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true

  # Node, where the official image has it; its licence beside the packages' copyrights.
  mkdir -p "$root/usr/local/bin" "$root/usr/local/share/doc/node"
  cp "$NODE_BIN" "$root/usr/local/bin/node"
  chmod 0755 "$root/usr/local/bin/node"
  cp "$(dirname "$NODE_BIN")/../LICENSE" "$root/usr/local/share/doc/node/LICENSE"

  mkdir -p "$root/etc" "$root/tmp" "$root/root" "$root/home/nonroot" "$root/var/tmp" "$root/proc" "$root/dev" \
    "$root/sys" "$root/run"
  printf '%s\n' 'root:x:0:0:root:/root:/usr/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' \
    'nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin' >"$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' 'nonroot:x:65532:' >"$root/etc/group"
  # glibc's defaults without the file ask DNS before /etc/hosts.
  printf '%s\n' 'passwd: files' 'group: files' 'shadow: files' 'hosts: files dns' 'networks: files' \
    'protocols: files' 'services: files' 'ethers: files' 'rpc: files' >"$root/etc/nsswitch.conf"
  # tzdata's postinst would make these.
  ln -s /usr/share/zoneinfo/Etc/UTC "$root/etc/localtime"
  echo 'Etc/UTC' >"$root/etc/timezone"
  cat >"$root/etc/os-release" <<EOF
PRETTY_NAME="kubelet-operator's stand-in for node:${NODE_VERSION%%.*}-bookworm-slim: Debian 12 (bookworm) packages and Node.js $NODE_VERSION"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION_CODENAME=bookworm
ID=debian
HOME_URL="https://www.debian.org/"
EOF
  chmod 0644 "$root/etc/passwd" "$root/etc/group" "$root/etc/nsswitch.conf" "$root/etc/timezone" "$root/etc/os-release"
  chmod 1777 "$root/tmp" "$root/var/tmp"
  chmod 0700 "$root/root"
  chown 65532:65532 "$root/home/nonroot"
  chmod 0755 "$root/home/nonroot"
}

# Builds the base layer into BASE_DIR when absent: layer.tar.gz, layer.txt ("diff_id digest size
# diff_size"), PACKAGES.
ensure_base() {
  base_built "$BASE_DIR" && return 0
  local debs
  debs="$IMAGE_CACHE/debs-$(dpkg --print-architecture)"
  if ! debs_fetch "$debs" "the operator image"; then
    # A package list older than the mirror names files it no longer has: refresh it once.
    need_root "apt-get update (apt-get download failed)"
    log "apt-get download failed; apt-get update and once more"
    apt_get update || die "apt-get update failed"
    resolve_base
    base_built "$BASE_DIR" && return 0
    debs_fetch "$debs" "the operator image" || fail "apt-get download of the operator image's Debian packages failed"
  fi
  local t0=$SECONDS stage diff_id digest size
  log "building the base layer (Debian bookworm packages + Node $NODE_VERSION; once, cached in $BASE_DIR)"
  mkdir -p "$IMAGE_CACHE/base"
  new_workdir "$IMAGE_CACHE/base"
  stage="$DIR"
  (
    umask 022
    make_base_root "$stage/root" "$debs"
  )
  OCI_KEEP_OWNERS=1 make_layer "$stage/root" "$stage/layer" >"$stage/layer.txt.tmp"
  read -r diff_id digest size <"$stage/layer.txt.tmp"
  echo "$diff_id $digest $size $(size_of "$stage/layer.tar")" >"$stage/layer.txt"
  mv "$stage/root.packages" "$stage/PACKAGES"
  rm -rf "$stage/root" "$stage/layer.tar" "$stage/layer.txt.tmp"
  rm -rf "$BASE_DIR"
  mv -T "$stage" "$BASE_DIR"
  log "built the base layer in $((SECONDS - t0))s ($(mib "$size") MiB gzipped)"
}

# ---------------------------------------------------------------------------------------------- inputs

# A hash of everything the tar is made of: the Dockerfile, the build context .dockerignore lets through,
# the scripts that build it, the base layer, the version.
inputs_key() {
  local line p files=()
  for p in Dockerfile .dockerignore scripts/image.sh scripts/image-node.sh scripts/lib/oci.sh scripts/lib/dockerfile.sh; do
    files+=("$p")
  done
  while read -r line; do
    [[ "$line" == '!'* ]] || continue
    p="${line#!}"
    p="${p%/}"
    [[ -e "$REPO/$p" ]] || continue
    if [[ -d "$REPO/$p" ]]; then
      mapfile -t -O "${#files[@]}" files < <(cd "$REPO" && find "$p" -type f -o -type l)
    else
      files+=("$p")
    fi
  done <"$REPO/.dockerignore"
  {
    echo "base $(basename "$BASE_DIR") $(cat "$BASE_DIR/layer.txt")"
    echo "names ${IMAGE_NAMES[*]}"
    (cd "$REPO" && printf '%s\n' "${files[@]}" | LC_ALL=C sort -u | while IFS= read -r p; do
      if [[ -L "$p" ]]; then echo "link $(readlink "$p") $p"; else echo "$(sha256sum <"$p" | cut -c1-64) $(stat -c %a "$p") $p"; fi
    done)
  } | sha256sum | cut -c1-64
}

# ---------------------------------------------------------------------------------------------- app

# The image config's "config" object, from the replay's DF_* and the base's PATH and NODE_VERSION.
config_json() {
  local env=("PATH=$BASE_PATH" "NODE_VERSION=$NODE_VERSION" "${DF_ENV[@]}")
  printf '%s\0' "${env[@]}" >"$1/env"
  printf '%s\0' "${DF_LABELS[@]}" >"$1/labels"
  printf '%s\0' "${DF_EXPOSE[@]}" >"$1/expose"
  node - "$1" "$DF_USER" "$DF_WORKDIR" "$DF_ENTRYPOINT_JSON" "$DF_CMD_JSON" <<'EOF'
const fs = require('fs');
const [dir, user, workdir, entrypoint, cmd] = process.argv.slice(2);
const list = (f) => fs.readFileSync(`${dir}/${f}`, 'utf8').split('\0').filter((s) => s !== '');
// Later ENV lines win over earlier ones of the same name (the base's PATH included), in first-set order.
const env = new Map();
for (const e of list('env')) env.set(e.slice(0, e.indexOf('=')), e);
const labels = {};
for (const l of list('labels')) labels[l.slice(0, l.indexOf('='))] = l.slice(l.indexOf('=') + 1);
const ports = {};
for (const p of list('expose')) ports[p.includes('/') ? p : `${p}/tcp`] = {};
const config = { User: user, ExposedPorts: ports, Env: [...env.values()], Entrypoint: JSON.parse(entrypoint) };
if (cmd) config.Cmd = JSON.parse(cmd);
Object.assign(config, { WorkingDir: workdir, Labels: labels });
process.stdout.write(JSON.stringify(config));
EOF
}

# Runs the Dockerfile's compile-cache fill (`node <ENTRYPOINT's flags> dist/main.js --help`, checked by
# dockerfile_lint) inside <root> as the image's uid, with the image's ENV, on the image's node and libraries.
fill_compile_cache() {
  local root="$1" cache="$2" env=("PATH=$BASE_PATH" "${DF_ENV[@]}" HOME=/nonexistent) out
  rm -rf "${root:?}$cache"
  mkdir -p "$root$cache"
  chown "$DF_UID:$DF_GID" "$root$cache"
  out="$(env -i "${env[@]}" unshare --root="$root" --wd="$DF_WORKDIR" --setuid "$DF_UID" --setgid "$DF_GID" \
    "${DF_ENTRYPOINT[@]}" --help 2>&1)" || fail "the image's ${DF_ENTRYPOINT[*]} --help failed in its root: $out"
  grep -q -- '--kubeconfig' <<<"$out" || fail "the image's ${DF_ENTRYPOINT[*]} --help did not print the flags: $out"
  [[ -n "$(find "$root$cache" -type f -print -quit)" ]] || fail "the compile cache fill wrote nothing to $cache"
}

build_tar() {
  local work="$1" diff_id digest size base_diff_id base_digest base_size cache="" replay
  log "replaying the Dockerfile's stages (npm ci, tsc, npm ci --omit=dev)"
  # In the temp dir (1777), not under the output dir: the RUN steps after USER must reach it as that uid.
  new_workdir "${TMPDIR:-/tmp}" kubelet-operator-image
  replay="$DIR"
  dockerfile_replay "$REPO" "$DOCKERFILE" "$replay" "VERSION=$VERSION" >&2
  [[ "$DF_USER" == "$DF_UID:$DF_GID" || "$DF_USER" == "$DF_UID" ]] || fail "the final stage's USER $DF_USER is not the last USER"
  [[ "$DF_WORKDIR" == /* ]] || fail "WORKDIR must be absolute: $DF_WORKDIR"
  [[ ! -d "$DF_FINAL_DIR/src" ]] || fail "the final stage must hold compiled JS only, found src/"

  # The run root: the base layer, and the final stage at its WORKDIR.
  local run="$work/run"
  mkdir -p "$run"
  tar -xzf "$BASE_DIR/layer.tar.gz" -C "$run" --numeric-owner
  mkdir -p "$run$DF_WORKDIR"
  cp -a "$DF_FINAL_DIR/." "$run$DF_WORKDIR/"
  rm -rf "$replay"
  chown -R 0:0 "$run$DF_WORKDIR"
  chmod -R u+rwX,go+rX,go-w "$run$DF_WORKDIR"
  cache="$(printf '%s\n' "${DF_ENV[@]}" | sed -n 's/^NODE_COMPILE_CACHE=//p')"
  if [[ -n "$cache" ]]; then
    log "filling the compile cache $cache as uid $DF_UID in the image's root"
    fill_compile_cache "$run" "$cache"
  fi

  # Layer 2: the WORKDIR without the compile cache; layer 3: the compile cache. V8 writes its per-process
  # random hash seed into the cache, so only that small layer differs between two builds of the same inputs.
  local app="$work/app" cc="$work/compile-cache" layer upper=() diff_total=0
  mkdir -p "$app$(dirname "$DF_WORKDIR")"
  mv "$run$DF_WORKDIR" "$app$DF_WORKDIR"
  rm -rf "$run"
  if [[ -n "$cache" ]]; then
    mkdir -p "$cc$(dirname "$cache")"
    chmod -R 0755 "$cc"
    mv "$app$cache" "$cc$cache"
  fi
  for layer in app compile-cache; do
    [[ -d "$work/$layer" ]] || continue
    read -r diff_id digest size < <(OCI_KEEP_OWNERS=1 make_layer "$work/$layer" "$work/$layer-layer")
    diff_total=$((diff_total + $(size_of "$work/$layer-layer.tar")))
    upper+=("$work/$layer-layer.tar.gz $digest $size $diff_id")
    rm -rf "${work:?}/$layer" "$work/$layer-layer.tar"
  done
  echo "$diff_total" >"$work/app-diff-size"

  read -r base_diff_id base_digest base_size _ <"$BASE_DIR/layer.txt"
  LAYER_FILE="$BASE_DIR/layer.tar.gz"
  OCI_UPPER_LAYERS=("${upper[@]}")
  OCI_IMAGE_CONFIG="$(config_json "$work")"
  mkdir -p "$OUT_DIR"
  build_image "$work/image.tar" "${IMAGE_NAMES[0]}" "$base_digest" "$base_size" "$base_diff_id" '' "${IMAGE_NAMES[@]:1}"
}

cmd_build() {
  local t0=$SECONDS
  need_root "building the image"
  for c in apt-get apt-cache dpkg-deb unshare setpriv gzip; do
    command -v "$c" >/dev/null || die "$c is needed (the image is built from Debian packages on Debian or Ubuntu)"
  done
  dockerfile_lint "$DOCKERFILE"
  mkdir -p "$IMAGE_CACHE"
  # One build at a time: the base layer and the output are shared.
  exec 8>"$IMAGE_CACHE/.lock"
  if ! flock -n 8; then
    log "another image build holds $IMAGE_CACHE/.lock; waiting for it"
    flock 8
  fi
  resolve_base
  ensure_base
  local key
  key="$(inputs_key)"
  if [[ -s "$OUT" && "$(cat "$INPUTS" 2>/dev/null)" == "$key" ]]; then
    log "$OUT is up to date ($((SECONDS - t0))s)"
  else
    local work
    mkdir -p "$OUT_DIR"
    new_workdir "$OUT_DIR"
    work="$DIR"
    build_tar "$work"
    mv -f "$work/image.tar" "$OUT"
    echo "$key" >"$INPUTS"
    local base_diff app_diff
    read -r _ _ _ base_diff <"$BASE_DIR/layer.txt"
    app_diff="$(cat "$work/app-diff-size")"
    log "built $OUT in $((SECONDS - t0))s: $(mib "$(size_of "$OUT")") MiB (the tar, gzipped layers), $(mib $((base_diff + app_diff))) MiB uncompressed (layers: base $(mib "$base_diff"), app $(mib "$app_diff")); ${IMAGE_NAMES[*]}"
  fi
  exec 8>&-
  echo "$OUT"
}

mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# The manifest digest, as `ctr images ls` shows it, from the tar's index.json.
tar_digest() {
  tar -xOf "$1" index.json | sed -n 's/^{"schemaVersion":2,"manifests":\[{[^}]*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p'
}

cmd_import() {
  local sock="${1:-}" present digest n missing=0
  [[ -n "$sock" ]] || usage
  [[ -S "$sock" ]] || fail "no containerd socket at $sock"
  command -v ctr >/dev/null || die "ctr (from the containerd package) is not installed: run scripts/containerd.sh install"
  cmd_build >/dev/null
  digest="$(tar_digest "$OUT")"
  [[ -n "$digest" ]] || fail "no manifest digest in $OUT"
  present="$(ctr --address "$sock" -n "$NAMESPACE" images ls 2>/dev/null | awk 'NR > 1 {print $1, $3}')" ||
    fail "cannot list the images at $sock"
  for n in "${IMAGE_NAMES[@]}"; do grep -qxF "$n $digest" <<<"$present" || missing=1; done
  if ((missing)); then
    ctr --address "$sock" -n "$NAMESPACE" images import "$OUT" >/dev/null || fail "importing $OUT failed"
    log "imported $OUT"
  else
    log "${IMAGE_NAMES[*]} present already"
  fi
  printf '%s\n' "${IMAGE_NAMES[@]}"
}

case "${1:-build}" in
  build) cmd_build ;;
  import) cmd_import "${2:-}" ;;
  names) printf '%s\n' "${IMAGE_NAMES[@]}" ;;
  *) usage ;;
esac
