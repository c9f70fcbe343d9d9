#!/usr/bin/env bash
# Ensures the node plugins the plugin manager's tests run as host processes: the CSI node-driver-registrar and
# the hostpath CSI driver (github.com/kubernetes-csi/node-driver-registrar, .../csi-driver-host-path).
#
# Neither module is served by the Go module proxy (it answers 403 "not available" for both), so the sources
# come from a snapshot of the GitHub repository at a pinned tag and build offline from their vendor/
# directories (both vendor every dependency); the snapshot is read from $CSI_SRC_MIRROR/<owner>+<name>/repo
# (a bare git directory, default /work/.mirror) or, failing that, cloned with git from GitHub. Cached outside
# the repo, keyed by version:
#   $CACHE/csi/kubernetes-csi+node-driver-registrar/<tag>/bin/csi-node-driver-registrar
#   $CACHE/csi/kubernetes-csi+csi-driver-host-path/<tag>/bin/hostpathplugin
# with CACHE=${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}.
#
# Built as their release-tools build them, with `main.version` set to the tag (the hostpath driver refuses to
# serve GetPluginInfo without one). Progress goes to stderr; stdout is two lines: the registrar's path, then the driver's.
# Exit 2: a prerequisite (Go 1.26, the sources) is missing. Override the pins with REGISTRAR_VERSION /
# HOSTPATH_VERSION.
#
# `csi-plugins.sh sidecars` builds also the controller sidecars the upstream CSI mock specs deploy
# (external-provisioner, -attacher, -resizer, at the tags Kubernetes v1.37.2's manifests name) and prints
# `<image short name> <path>` per binary instead, for scripts/upstream-e2e.sh's images. `csi-plugins.sh node`
# prints the same lines for the two node plugins only (the driver and the registrar, for a DaemonSet of them).
set -euo pipefail

REGISTRAR_VERSION="${REGISTRAR_VERSION:-v2.17.0}"
HOSTPATH_VERSION="${HOSTPATH_VERSION:-v1.18.0}"
PROVISIONER_VERSION="${PROVISIONER_VERSION:-v6.3.0}"
ATTACHER_VERSION="${ATTACHER_VERSION:-v4.12.0}"
RESIZER_VERSION="${RESIZER_VERSION:-v2.2.0}"
CACHE_ROOT="${KUBELET_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator}"
MIRROR="${CSI_SRC_MIRROR:-/work/.mirror}"

log() { echo "csi-plugins: $*" >&2; }
die() {
  echo "csi-plugins: $*" >&2
  exit 2
}

# build <owner+name> <tag> <binary> <package>: prints the binary's path, building it once.
build() {
  local repo="$1" tag="$2" bin="$3" pkg="$4"
  local dir="$CACHE_ROOT/csi/$repo/$tag"
  if [[ -x "$dir/bin/$bin" ]]; then
    echo "$dir/bin/$bin"
    return 0
  fi
  command -v go >/dev/null || die "Go 1.26+ is needed to build $bin $tag the first time (nothing cached in $dir)"
  mkdir -p "$CACHE_ROOT/csi"
  local work stage
  work="$(mktemp -d)"
  stage="$(mktemp -d "$CACHE_ROOT/csi/.stage.XXXXXX")"
  # shellcheck disable=SC2064
  trap "rm -rf '$work' '$stage'" RETURN
  if [[ -d "$MIRROR/$repo/repo" ]] && git -C "$MIRROR/$repo/repo" rev-parse -q --verify "$tag^{commit}" >/dev/null; then
    git -C "$MIRROR/$repo/repo" archive "$tag" | tar -x -C "$work"
  else
    log "no snapshot of $repo at $MIRROR; cloning $tag from GitHub"
    git clone -q --depth 1 --branch "$tag" "https://github.com/${repo/+//}.git" "$work" ||
      die "cannot get the sources of $repo $tag"
  fi
  log "building $bin $tag from its vendored sources (once; cached in $dir)"
  (cd "$work" && CGO_ENABLED=0 GOFLAGS=-mod=vendor go build -trimpath -ldflags "-s -w -X main.version=$tag" -o "$stage/bin/$bin" "$pkg") >&2
  mkdir -p "$(dirname "$dir")"
  rm -rf "$dir"
  mv "$stage" "$dir"
  echo "$dir/bin/$bin"
}

mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.csi-lock"
flock 9
case "${1:-}" in
  '')
    build kubernetes-csi+node-driver-registrar "$REGISTRAR_VERSION" csi-node-driver-registrar ./cmd/csi-node-driver-registrar
    build kubernetes-csi+csi-driver-host-path "$HOSTPATH_VERSION" hostpathplugin ./cmd/hostpathplugin
    ;;
  node)
    echo "csi-node-driver-registrar $(build kubernetes-csi+node-driver-registrar "$REGISTRAR_VERSION" csi-node-driver-registrar ./cmd/csi-node-driver-registrar)"
    echo "hostpathplugin $(build kubernetes-csi+csi-driver-host-path "$HOSTPATH_VERSION" hostpathplugin ./cmd/hostpathplugin)"
    ;;
  sidecars)
    echo "csi-node-driver-registrar $(build kubernetes-csi+node-driver-registrar "$REGISTRAR_VERSION" csi-node-driver-registrar ./cmd/csi-node-driver-registrar)"
    echo "hostpathplugin $(build kubernetes-csi+csi-driver-host-path "$HOSTPATH_VERSION" hostpathplugin ./cmd/hostpathplugin)"
    echo "csi-provisioner $(build kubernetes-csi+external-provisioner "$PROVISIONER_VERSION" csi-provisioner ./cmd/csi-provisioner)"
    echo "csi-attacher $(build kubernetes-csi+external-attacher "$ATTACHER_VERSION" csi-attacher ./cmd/csi-attacher)"
    echo "csi-resizer $(build kubernetes-csi+external-resizer "$RESIZER_VERSION" csi-resizer ./cmd/csi-resizer)"
    ;;
  *)
    echo "usage: $0 [sidecars | node]" >&2
    exit 64
    ;;
esac
