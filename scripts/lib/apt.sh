# shellcheck shell=bash
# apt-get and Debian packages for the image builds, shared by scripts/upstream-e2e.sh,
# scripts/cluster-addons.sh and scripts/image.sh. Sourced, not run. The caller defines log, fail, die and
# need_root (each takes a message) and sources lib/oci.sh first (sha256_of, size_of).
#
# Nothing here installs a package on the machine: the images get packages with `apt-get download` and
# `dpkg-deb -x` (files only, no maintainer script runs).

# How long apt-get waits for a lock that another apt-get or dpkg holds (APT_LOCK_WAIT seconds).
APT_LOCK_WAIT_S="${APT_LOCK_WAIT:-600}"

# apt-get that waits while another apt-get or dpkg holds its lock (up to APT_LOCK_WAIT_S, default 600)
# instead of failing: installs wait inside apt (DPkg::Lock::Timeout); `apt-get update` takes the lists
# lock, which that option does not cover, so a run that found a lock busy is retried.
apt_get() {
  local aptlog deadline=$((SECONDS + APT_LOCK_WAIT_S)) said=0
  aptlog="$(mktemp "${TMPDIR:-/tmp}/kubelet-operator-apt.XXXXXX")"
  until DEBIAN_FRONTEND=noninteractive apt-get -q -o "DPkg::Lock::Timeout=$APT_LOCK_WAIT_S" \
    -o APT::Sandbox::User=root "$@" >"$aptlog" 2>&1; do
    if grep -Eq 'Could not get lock|Unable to lock|Unable to acquire the dpkg frontend lock' "$aptlog" &&
      ((SECONDS < deadline)); then
      ((said)) || log "apt is busy (another apt-get or dpkg holds its lock); waiting up to ${APT_LOCK_WAIT_S}s"
      said=1
      sleep 2
      continue
    fi
    tail -n 20 "$aptlog" >&2 || true
    rm -f "$aptlog"
    return 1
  done
  rm -f "$aptlog"
}

# A machine whose package lists were never fetched knows no candidate: `apt-get update` once. (One
# apt-cache call for all: each loads the whole cache.)
apt_lists_know() {
  local known p
  known=" $(apt-cache policy "$@" 2>/dev/null |
    awk '/^[^ ].*:$/ { p = substr($0, 1, length($0) - 1) } /^ +Candidate:/ && $2 != "(none)" { print p }' |
    tr '\n' ' ') "
  for p in "$@"; do
    if [[ "$known" != *" $p "* ]]; then
      need_root "apt-get update (the package lists do not know $p)"
      log "the package lists do not know $p: apt-get update"
      apt_get update || die "apt-get update failed"
      return 0
    fi
  done
}

# Lists the packages and everything they depend on (Depends and Pre-Depends, recursively, every
# alternative; virtual packages left out, their providers are listed), sorted.
deb_closure() {
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances "$@" | sed -n '/^[a-z0-9]/p' | LC_ALL=C sort -u
}

# ---- a cache of .deb files, checked against the package lists' sha256
#
# debs_resolve sets DEB_ROWS (one "<file> <size> <sha256>" per package, sorted) and DEBS_KEY (a short hash
# of those rows, for a cache key) from the package lists, without downloading; debs_fetch then downloads
# into a directory what it lacks. One directory per image family: debs_fetch drops the files DEB_ROWS no
# longer names.
DEB_ROWS=()
DEBS_KEY=""

# debs_resolve <what> <package...>: the packages exactly (add deb_closure's output for their dependencies).
# <what> names the image in messages.
debs_resolve() {
  local what="$1" tmp out
  shift
  # --print-uris lists only the files that are not in the current directory: ask from an empty one.
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/kubelet-operator-debs.XXXXXX")"
  if ! out="$(cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download --print-uris "$@" 2>&1)"; then
    rmdir "$tmp"
    printf '%s\n' "$out" | tail -n 5 >&2
    fail "apt-get download --print-uris failed for $what's packages"
  fi
  rmdir "$tmp"
  # "'<uri>' <file> <size> SHA256:<hex>" -> "<file> <size> <hex>"
  mapfile -t DEB_ROWS < <(sed -n "s/^'[^']*' \\([^ ]*\\.deb\\) \\([0-9]*\\) SHA256:\\([0-9a-f]*\\)\$/\\1 \\2 \\3/p" <<<"$out" |
    LC_ALL=C sort)
  (($# == ${#DEB_ROWS[@]})) || fail "apt-get download --print-uris named ${#DEB_ROWS[@]} files for $# packages"
  # shellcheck disable=SC2034 # read by the caller (a cache key)
  DEBS_KEY="$(printf '%s\n' "${DEB_ROWS[@]}" | sha256sum | cut -c1-12)"
}

# debs_fetch <dir> <what>: downloads what DEB_ROWS names and <dir> lacks (checked against the lists'
# sha256), and drops the files it no longer names. Returns 1 when apt-get download fails (stale package
# lists, say: the caller may `apt-get update`, resolve again and retry).
debs_fetch() {
  local dir="$1" what="$2" row file size sha want=() keep=() pkg ver f
  mkdir -p "$dir"
  for row in "${DEB_ROWS[@]}"; do
    read -r file size sha <<<"$row"
    keep+=("$file")
    if [[ -f "$dir/$file" ]] && [[ "$(size_of "$dir/$file")" == "$size" ]] &&
      [[ "$(sha256_of "$dir/$file")" == "$sha" ]]; then
      continue
    fi
    rm -f "$dir/$file"
    # <name>_<version, ':' as %3a>_<arch>.deb
    pkg="${file%%_*}"
    ver="${file#*_}"
    ver="${ver%_*}"
    want+=("$pkg=${ver//%3a/:}")
  done
  if ((${#want[@]} > 0)); then
    log "downloading ${#want[@]} Debian packages for $what into $dir"
    (cd "$dir" && apt_get download "${want[@]}") || return 1
    for row in "${DEB_ROWS[@]}"; do
      read -r file size sha <<<"$row"
      [[ -f "$dir/$file" && "$(sha256_of "$dir/$file")" == "$sha" ]] ||
        fail "$dir/$file is missing or does not match the package lists' sha256 after apt-get download"
    done
  fi
  for f in "$dir"/*.deb; do
    [[ -e "$f" ]] || continue
    [[ " ${keep[*]} " == *" ${f##*/} "* ]] || rm -f "$f"
  done
}
