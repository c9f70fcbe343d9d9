#!/usr/bin/env bash
# A private image registry for the image-credential tests: Debian's docker-registry (the distribution
# registry, v2 API), htpasswd from apache2-utils (the registry reads bcrypt htpasswd files) and skopeo (pushes
# the cached e2e image tars into it). Installed from the Debian package lists, pinned to the versions below.
#
#   registry.sh install    apt-get installs the three when missing; prints the registry binary's path
#
# The tests start the registry themselves (test/support/registry.ts): TLS from a CA of their own, basic auth.
set -euo pipefail

# Debian bookworm's versions; a different candidate is refused so a test never runs on an unknown registry.
readonly -A PINS=([docker-registry]='2.8.2+ds1-1' [apache2-utils]='2.4.' [skopeo]='1.9.3+ds1-1')

log() { echo "registry.sh: $*" >&2; }
fail() {
  echo "registry.sh: $*" >&2
  exit 1
}
die() { fail "$@"; }
need_root() { [[ "$(id -u)" == 0 ]] || fail "$1 needs root"; }

# shellcheck source=lib/apt.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"

cmd_install() {
  local missing=() p v
  for p in "${!PINS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]} > 0)); then
    need_root "installing ${missing[*]}"
    apt_lists_know "${missing[@]}"
    log "installing ${missing[*]}"
    apt_get install -y --no-install-recommends "${missing[@]}" || fail "apt-get install ${missing[*]} failed"
  fi
  for p in "${!PINS[@]}"; do
    v="$(dpkg-query -W -f='${Version}' "$p")"
    [[ "$v" == "${PINS[$p]}"* ]] || fail "$p $v is installed; the tests are pinned to ${PINS[$p]}"
  done
  # The package starts a system service where systemd runs; the tests never use it.
  command -v docker-registry >/dev/null || fail "docker-registry is not on PATH after install"
  command -v docker-registry
}

case "${1:-}" in
install) cmd_install ;;
*)
  echo "usage: $0 install" >&2
  exit 64
  ;;
esac
