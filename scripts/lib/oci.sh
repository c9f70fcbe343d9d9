# shellcheck shell=bash
# OCI image layout tars without a registry or a container engine, shared by scripts/containerd.sh and
# scripts/upstream-e2e.sh. Sourced, not run.
#
# Everything is deterministic: the same inputs give byte-identical tars (and so the same digests), because
# every entry gets OCI_EPOCH as its mtime, uid/gid 0 and a sorted order, and gzip omits name and time.
#
# make_rootfs builds a busybox root filesystem (Debian's busybox-static); make_layer turns a directory into
# a gzipped layer; build_image writes the image layout tar. The caller sets LAYER_FILE (a gzipped layer
# tar) before build_image, and may set OCI_CREATED_BY (the history entry of the image config) and
# OCI_UPPER_LAYERS (an array of layers stacked on LAYER_FILE's, each "<file.tar.gz> <digest> <size>
# <diff_id>"; unset or empty: a one-layer image) and OCI_IMAGE_CONFIG (the image config's whole "config"
# object as JSON, in place of the default PATH, <config-json-extra> and WorkingDir "/"; the config then has
# "created" at OCI_EPOCH too).

# Everything in the image tars gets this mtime (2000-01-01T00:00:00Z), so the digests never change.
readonly OCI_EPOCH='946684800'

image_arch() {
  case "$(uname -m)" in
    x86_64) echo amd64 ;;
    aarch64) echo arm64 ;;
    armv7l) echo arm ;;
    *) uname -m ;;
  esac
}

sha256_of() { sha256sum "$1" | awk '{print $1}'; }
size_of() { stat -c %s "$1"; }

# Writes <blobs>/sha256/<digest> for the file and prints "digest size".
add_blob() {
  local file="$1" blobs="$2" digest size
  digest="$(sha256_of "$file")"
  size="$(size_of "$file")"
  mv -f "$file" "$blobs/sha256/$digest"
  echo "$digest $size"
}

# Builds the busybox root filesystem into $1, with the busybox binary $2 (default Debian's /bin/busybox).
make_rootfs() {
  local root="$1" busybox="${2:-/bin/busybox}" applet
  mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root" "$root/home" "$root/var/www" "$root/usr/bin" "$root/usr/sbin" "$root/sbin"
  cp "$busybox" "$root/bin/busybox"
  chmod 0755 "$root/bin/busybox"
  # Every applet this busybox knows, as a symlink in /bin (sh, sleep, echo, httpd, nc, cat, wget, ...).
  for applet in $("$busybox" --list); do
    [[ "$applet" == busybox || "$applet" == */* ]] && continue
    ln -s busybox "$root/bin/$applet"
  done
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' >"$root/etc/group"
  chmod 0644 "$root/etc/passwd" "$root/etc/group"
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/root"
}

# Writes an OCI image layout tar: build_image <out.tar> <name> <layer.tar.gz digest> <size> <diff_id> <config-json-extra> <alias...>
# The image has LAYER_FILE's layer, then OCI_UPPER_LAYERS' in order.
build_image() {
  local out="$1" name="$2" layer_digest="$3" layer_size="$4" diff_id="$5" exec_json="$6"
  shift 6
  local work arch cfg_digest cfg_size man_digest man_size upper file u_digest u_size u_diff
  local diff_ids history layers entry
  work="$(mktemp -d "${out}.work.XXXXXX")"
  mkdir -p "$work/blobs/sha256"
  cp "$LAYER_FILE" "$work/blobs/sha256/$layer_digest"
  entry="$(printf '{"created_by":"%s"}' "${OCI_CREATED_BY:-kubelet-operator}")"
  diff_ids="\"sha256:$diff_id\""
  history="$entry"
  layers="$(printf '{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}' \
    "$layer_digest" "$layer_size")"
  for upper in ${OCI_UPPER_LAYERS[@]+"${OCI_UPPER_LAYERS[@]}"}; do
    read -r file u_digest u_size u_diff <<<"$upper"
    cp "$file" "$work/blobs/sha256/$u_digest"
    diff_ids+=",\"sha256:$u_diff\""
    history+=",$entry"
    layers+="$(printf ',{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}' \
      "$u_digest" "$u_size")"
  done
  arch="$(image_arch)"
  if [[ -n "${OCI_IMAGE_CONFIG:-}" ]]; then
    # The caller's whole config object (exec_json unused), and the creation time of everything in the tars.
    printf '{"architecture":"%s","os":"linux","created":"%s","config":%s,"rootfs":{"type":"layers","diff_ids":[%s]},"history":[%s]}' \
      "$arch" "$(date -u -d "@$OCI_EPOCH" +%Y-%m-%dT%H:%M:%SZ)" "$OCI_IMAGE_CONFIG" "$diff_ids" "$history" >"$work/config.json"
  else
    printf '{"architecture":"%s","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":[%s]},"history":[%s]}' \
      "$arch" "$exec_json" "$diff_ids" "$history" >"$work/config.json"
  fi
  read -r cfg_digest cfg_size < <(add_blob "$work/config.json" "$work/blobs")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' \
    "$cfg_digest" "$cfg_size" "$layers" >"$work/manifest.json"
  read -r man_digest man_size < <(add_blob "$work/manifest.json" "$work/blobs")
  # One descriptor per name: `ctr images import` registers each io.containerd.image.name.
  local descs='' n
  for n in "$name" "$@"; do
    [[ -n "$descs" ]] && descs+=','
    descs+="$(printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}' \
      "$man_digest" "$man_size" "$n" "${n##*:}")"
  done
  printf '{"schemaVersion":2,"manifests":[%s]}' "$descs" >"$work/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci-layout"
  deterministic_tar "$work" "$out.tmp" oci-layout index.json blobs
  mv -f "$out.tmp" "$out"
  rm -rf "$work"
}

# Writes <out>.tar and <out>.tar.gz from the directory <root> and prints "diff_id digest size" (the
# sha256 of the tar, and the sha256 and size of the gzipped tar): make_layer <root> <out>.
make_layer() {
  local root="$1" out="$2" entries
  # shellcheck disable=SC2012 # names made by the caller; sorted for a stable tar
  mapfile -t entries < <(cd "$root" && LC_ALL=C ls -A | LC_ALL=C sort)
  deterministic_tar "$root" "$out.tar" "${entries[@]}"
  gzip -n -9 <"$out.tar" >"$out.tar.gz"
  echo "$(sha256_of "$out.tar") $(sha256_of "$out.tar.gz") $(size_of "$out.tar.gz")"
}

# Every entry owned by 0:0, unless OCI_KEEP_OWNERS=1: then each keeps its numeric owner and group (a
# directory the image's non-root user must own).
deterministic_tar() {
  local dir="$1" out="$2" owners=(--owner=0 --group=0)
  shift 2
  [[ "${OCI_KEEP_OWNERS:-}" == 1 ]] && owners=()
  tar --create --file="$out" --directory="$dir" --format=gnu --sort=name --mtime="@$OCI_EPOCH" \
    "${owners[@]}" --numeric-owner "$@"
}
