#!/usr/bin/env bash
# Checks the Dockerfile and the image `npm run image` builds from it (scripts/image.sh), without a docker
# engine:
#   1. lint: rules the image must keep (Node LTS base, multi-stage, npm ci --omit=dev, non-root numeric
#      USER, OCI labels, no HEALTHCHECK, no ADD, no :latest, the compile cache filled as the runtime uid with
#      the ENTRYPOINT's flags; scripts/lib/dockerfile.sh), the base Deployment running it as the same
#      uid:gid with runAsNonRoot and readOnlyRootFilesystem, and hadolint when installed;
#   2. build: scripts/image.sh (nothing to do when its inputs did not change);
#   3. the image as a registry would hold it: each blob matches its digest, each layer its diff_id; the
#      config's User is the Dockerfile's numeric non-root uid:gid, its Entrypoint, WorkingDir, ExposedPorts,
#      NODE_ENV and NODE_COMPILE_CACHE are the Dockerfile's, its version label is package.json's; the
#      layers unpacked hold no setuid or setgid file, no src/, the CRI proto beside the compiled client, and a
#      compile cache the runtime uid owns;
#   4. run: a private containerd (scripts/containerd.sh) imports the tar and runs the image with a read-only
#      root file system, as the config's User (ctr run applies it): the Entrypoint with --help must print the
#      flags and read every module from the compile cache; a second run must be uid/gid 65532 (the
#      Dockerfile's), with /app as cwd, fail to write to / and /app (EROFS), and load the compiled CRI
#      client's proto.
# Needs root (the build and containerd do). Exits non-zero on the first failure. KEEP_TMP=1 keeps the temp
# dir (the unpacked root file system and containerd's log).
set -euo pipefail
shopt -s inherit_errexit

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dockerfile="$repo/Dockerfile"
fail() {
  echo "image-build-check: $*" >&2
  exit 1
}
# shellcheck source=lib/dockerfile.sh source-path=SCRIPTDIR
source "$repo/scripts/lib/dockerfile.sh"
[[ "$(id -u)" == 0 ]] || {
  echo "image-build-check: needs root (the image build and containerd do): run as root or with sudo" >&2
  exit 2
}

# ---- 1. lint ------------------------------------------------------------------------------------
dockerfile_lint "$dockerfile"
uid="$DF_UID"
gid="$DF_GID"
entrypoint=("${DF_ENTRYPOINT[@]}")
workdir="$(grep '^WORKDIR ' "$dockerfile" | tail -n 1 | cut -d ' ' -f 2)"
# The Deployment runs the image as the same uid and gid, with runAsNonRoot and a read-only root.
deployment="$repo/manifests/base/deployment.yaml"
for want in "runAsUser: $uid" "runAsGroup: $gid" 'runAsNonRoot: true' 'readOnlyRootFilesystem: true'; do
  grep -Eq "^ +$want\$" "$deployment" ||
    fail "manifests/base/deployment.yaml lacks \`$want\` (the image runs as the Dockerfile's USER $uid:$gid, read-only)"
done
echo "lint: ok"
if command -v hadolint >/dev/null; then
  hadolint "$dockerfile"
  echo "hadolint: ok"
fi

# ---- 2. build -----------------------------------------------------------------------------------
image_tar="$(bash "$repo/scripts/image.sh" build | tail -n 1)" || fail "scripts/image.sh failed"
[[ -s "$image_tar" ]] || fail "scripts/image.sh wrote no $image_tar"
mapfile -t names < <(bash "$repo/scripts/image.sh" names)

tmp="$(mktemp -d -t kubelet-operator-image-check-XXXXXX)"
ctrd=""
cleanup() {
  if [[ -n "$ctrd" ]]; then bash "$repo/scripts/containerd.sh" stop "$ctrd" >/dev/null 2>&1 || true; fi
  if [[ "${KEEP_TMP:-}" == 1 ]]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# ---- 3. the tar, the config, the layers -----------------------------------------------------------
mkdir -p "$tmp/oci" "$tmp/rootfs"
tar -xf "$image_tar" -C "$tmp/oci"
# Prints "config <digest>" and "layer <digest> <diff_id>" lines after checking the config against the
# Dockerfile; fails with a message otherwise.
checks="$(node - "$tmp/oci" "$uid" "$gid" "$workdir" "$(printf '%s\n' "${entrypoint[@]}")" \
  "$(node -p 'require(process.argv[1]).version' "$repo/package.json")" "${names[@]}" <<'EOF'
const fs = require('fs');
const [dir, uid, gid, workdir, entry, version, ...names] = process.argv.slice(2);
const blob = (d) => JSON.parse(fs.readFileSync(`${dir}/blobs/sha256/${d.replace(/^sha256:/, '')}`, 'utf8'));
const problems = [];
const index = JSON.parse(fs.readFileSync(`${dir}/index.json`, 'utf8'));
const tagged = index.manifests.map((m) => m.annotations?.['io.containerd.image.name']);
for (const n of names) if (!tagged.includes(n)) problems.push(`index.json does not name ${n}`);
const manifest = blob(index.manifests[0].digest);
const image = blob(manifest.config.digest);
const c = image.config ?? {};
if (!/^[1-9][0-9]*:[0-9]+$/.test(c.User ?? '')) problems.push(`User must be numeric uid:gid, non-root: ${c.User}`);
if (c.User !== `${uid}:${gid}`) problems.push(`User is ${c.User}, the Dockerfile's is ${uid}:${gid}`);
if (JSON.stringify(c.Entrypoint) !== JSON.stringify(entry.split('\n')))
  problems.push(`Entrypoint is ${JSON.stringify(c.Entrypoint)}, the Dockerfile's is ${JSON.stringify(entry.split('\n'))}`);
if (c.Cmd !== undefined) problems.push(`Cmd is ${JSON.stringify(c.Cmd)}: the Dockerfile sets none`);
if (c.WorkingDir !== workdir) problems.push(`WorkingDir is ${c.WorkingDir}, not ${workdir}`);
if (!c.ExposedPorts?.['8080/tcp']) problems.push('8080/tcp is not exposed');
const env = Object.fromEntries((c.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
if (env.NODE_ENV !== 'production') problems.push(`NODE_ENV is ${env.NODE_ENV}`);
if (!env.NODE_COMPILE_CACHE) problems.push('NODE_COMPILE_CACHE is not set');
if (!(env.PATH ?? '').split(':').includes('/usr/local/bin')) problems.push(`PATH lacks Node's /usr/local/bin: ${env.PATH}`);
if (c.Labels?.['org.opencontainers.image.version'] !== version)
  problems.push(`label org.opencontainers.image.version is ${c.Labels?.['org.opencontainers.image.version']}, package.json says ${version}`);
if (!c.Labels?.['org.opencontainers.image.source']) problems.push('label org.opencontainers.image.source is missing');
if (manifest.layers.length !== image.rootfs.diff_ids.length) problems.push('layers and diff_ids differ in number');
if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`config ${manifest.config.digest} ${env.NODE_COMPILE_CACHE}`);
manifest.layers.forEach((l, i) => console.log(`layer ${l.digest} ${image.rootfs.diff_ids[i]}`));
EOF
)" || fail "the image config does not match the Dockerfile (above)"
cache=""
while read -r kind digest diff_id; do
  file="$tmp/oci/blobs/sha256/${digest#sha256:}"
  [[ "sha256:$(sha256sum <"$file" | cut -c1-64)" == "$digest" ]] || fail "blob $digest does not match its digest"
  if [[ "$kind" == config ]]; then
    cache="$diff_id"
    continue
  fi
  [[ "sha256:$(gzip -dc <"$file" | sha256sum | cut -c1-64)" == "$diff_id" ]] || fail "layer $digest does not match its diff_id $diff_id"
  # Layers are written here without whiteouts: unpacking them in order gives the root file system.
  tar -xzf "$file" -C "$tmp/rootfs" --numeric-owner
done <<<"$checks"
setuid="$(find "$tmp/rootfs" -xdev -perm /6000 ! -type l -printf '/%P\n')"
[[ -z "$setuid" ]] || fail "setuid or setgid files in the image: $setuid"
root_app="$tmp/rootfs$workdir"
[[ ! -e "$root_app/src" ]] || fail "the image's $workdir must hold compiled JS only, found src/"
[[ -f "$root_app/dist/runtime/cri/proto/api.proto" ]] || fail "dist/runtime/cri/proto/api.proto missing from the image"
[[ -x "$tmp/rootfs/usr/local/bin/node" ]] || fail "no /usr/local/bin/node in the image"
grep -q ":$uid:$gid:" "$tmp/rootfs/etc/passwd" || fail "/etc/passwd has no user $uid:$gid"
if [[ -n "$cache" ]]; then
  [[ "$(stat -c %u:%g "$tmp/rootfs$cache")" == "$uid:$gid" ]] || fail "$cache is not owned by $uid:$gid"
  [[ -n "$(find "$tmp/rootfs$cache" -type f -print -quit)" ]] || fail "the compile cache $cache is empty"
fi
echo "image: ok ($(du -sm "$tmp/rootfs" | cut -f1) MiB unpacked, no setuid/setgid file, User $uid:$gid)"

# ---- 4. run it in containerd, read-only, as the image's user ------------------------------------
command -v ctr >/dev/null || fail "ctr is not installed: run scripts/containerd.sh install"
ctrd="$tmp/ctrd"
bash "$repo/scripts/containerd.sh" start "$ctrd" >/dev/null || fail "containerd did not start"
ctr_() { ctr --address "$ctrd/containerd.sock" --namespace k8s.io "$@"; }
ctr_ images import "$image_tar" >/dev/null || fail "ctr images import $image_tar failed"
listed="$(ctr_ images ls -q)"
for n in "${names[@]}"; do
  grep -qxF "$n" <<<"$listed" || fail "$n is not among containerd's images after the import"
done
run_n=0
# ctr run <args...>: the image's config (User, Env, WorkingDir) with a read-only root; the args replace the
# Entrypoint, as ctr does, so callers pass it.
run_image() {
  run_n=$((run_n + 1))
  ctr_ run --rm --read-only --cgroup "/kubelet-operator-test/$(basename "$ctrd")/check-$run_n" "$@" </dev/null
}
out="$tmp/help.out"
run_image --env NODE_DEBUG_NATIVE=COMPILE_CACHE "${names[0]}" "check-help" "${entrypoint[@]}" --help >"$out" 2>"$tmp/help.err" ||
  fail "${entrypoint[*]} --help failed in the image: $(tail -n 5 "$tmp/help.err")"
grep -q -- '--kubeconfig' "$out" || fail "${entrypoint[*]} --help did not print the flags: $(head -c 500 "$out")"
if [[ -n "$cache" ]]; then
  # Read-only, as under readOnlyRootFilesystem: every module the start loads must come from the cache.
  reads="$(grep -E 'reading cache from|Cannot create cache' "$tmp/help.err" || true)"
  hits="$(grep -c 'success' <<<"$reads" || true)"
  misses="$(grep -vc 'success' <<<"$reads" || true)"
  [[ "$hits" -gt 0 && "$misses" == 0 ]] ||
    fail "the compile cache was not used: $hits modules read, $misses not; $(grep -v success <<<"$reads" | head -3)"
  echo "compile cache: $hits modules read from it"
fi
# As the image's user, in its WORKDIR, nothing writable, and the CRI client finds its proto.
probe="$(
  cat <<'EOF'
import { writeFileSync } from 'node:fs';
const denied = [];
for (const f of ['/probe', './probe']) {
  try { writeFileSync(f, 'x'); } catch (e) { denied.push(e.code); }
}
const m = await import('./dist/runtime/cri/connection.js');
m.loadCriServices();
const root = process.getgroups().includes(0) ? ' group-0' : '';
console.log(`uid=${process.getuid()} gid=${process.getgid()}${root} cwd=${process.cwd()} writes=${denied.join(',')} cri-proto=ok`);
EOF
)"
got="$(run_image "${names[0]}" "check-probe" node --input-type=module -e "$probe" 2>&1)" ||
  fail "the probe failed in the image: $got"
want="uid=$uid gid=$gid cwd=$workdir writes=EROFS,EROFS cri-proto=ok"
[[ "$got" == "$want" ]] || fail "the image runs as: $got; want: $want"
echo "containerd $(ctr --version | awk '{print $3}'): ${names[0]} ran read-only as $uid:$gid ($got)"
echo "image-build-check: ok ($image_tar)"
