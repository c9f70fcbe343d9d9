#!/usr/bin/env bash
# Checks the Dockerfile without a docker engine:
#   1. lint: rules the image must keep (Node LTS base, multi-stage, npm ci --omit=dev, non-root numeric
#      USER, OCI labels, no HEALTHCHECK, no ADD, no :latest);
#   2. build: replays the Dockerfile's COPY/RUN/ENV/USER steps stage by stage in a temp dir (a dir per stage
#      stands in for its filesystem, `/app` in an ENV value for the stage's dir; COPY sources are filtered by
#      .dockerignore's allow list), on the image's Node (scripts/image-node.sh: the Dockerfile's major, pinned
#      and cached), RUN steps after a USER as that uid;
#   3. run: the ENTRYPOINT with --help (its node flags included), with the final stage's ENV, and the CRI proto
#      load in the final stage, as the image's uid; with NODE_COMPILE_CACHE set, a second start must read
#      every module it loads from the cache the build filled (read-only, as under readOnlyRootFilesystem).
# Exits non-zero on the first failure. KEEP_TMP=1 keeps the temp dir.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dockerfile="$repo/Dockerfile"
fail() { echo "image-build-check: $*" >&2; exit 1; }

# ---- 1. lint ------------------------------------------------------------------------------------
grep -Eq '^FROM node:(22|24)[-.a-z0-9]* AS build$' "$dockerfile" || fail "build stage must be FROM node:22|24... AS build"
[ "$(grep -c '^FROM ' "$dockerfile")" -ge 2 ] || fail "Dockerfile must be multi-stage"
final_from="$(grep '^FROM ' "$dockerfile" | tail -1)"
[[ "$final_from" =~ ^FROM\ node:(22|24) ]] || fail "final stage must be a Node 22 or 24 image: $final_from"
grep -q 'npm ci --omit=dev' "$dockerfile" || fail "final stage must install with npm ci --omit=dev"
! grep -Eq '^HEALTHCHECK' "$dockerfile" || fail "no HEALTHCHECK: Kubernetes probes do that"
! grep -Eq '^ADD ' "$dockerfile" || fail "use COPY, not ADD"
! grep -Eq '^FROM [^ ]*:latest' "$dockerfile" || fail "pin the base image, not :latest"
grep -q 'org.opencontainers.image.source=' "$dockerfile" || fail "missing label org.opencontainers.image.source"
grep -q 'org.opencontainers.image.version=' "$dockerfile" || fail "missing label org.opencontainers.image.version"
user_line="$(grep '^USER ' "$dockerfile" | tail -1)"
[[ "$user_line" =~ ^USER\ ([1-9][0-9]*)(:([0-9]+))?$ ]] || fail "last USER must be a numeric non-root uid: ${user_line:-none}"
uid="${BASH_REMATCH[1]}"
gid="${BASH_REMATCH[3]:-$uid}"
# The ENTRYPOINT (exec form), an argument a line; step 3 runs it.
mapfile -t entrypoint < <(grep '^ENTRYPOINT ' "$dockerfile" | tail -1 | sed 's/^ENTRYPOINT //' \
  | node -e 'for (const a of JSON.parse(require("fs").readFileSync(0, "utf8"))) console.log(a)')
[ "${entrypoint[0]:-}" = node ] || fail "ENTRYPOINT must be exec form starting with node"
# The build fills Node's compile cache as the runtime uid with the ENTRYPOINT's flags (Node keys the cache by
# both): a flag changed in one place only would leave the image with a cache it never reads.
entry_flags="${entrypoint[*]:1:${#entrypoint[@]}-2}"
if grep -q '^ENV NODE_COMPILE_CACHE=' "$dockerfile"; then
  fill="RUN node${entry_flags:+ $entry_flags} dist/main.js --help > /dev/null"
  grep -qxF "$fill" "$dockerfile" || fail "NODE_COMPILE_CACHE is set but no \`$fill\` fills it"
  [ "$(grep -nxF "$fill" "$dockerfile" | cut -d: -f1)" -gt "$(grep -n '^USER ' "$dockerfile" | tail -1 | cut -d: -f1)" ] \
    || fail "the compile cache must be filled after the last USER (Node keys it by uid)"
fi
echo "lint: ok"
if command -v hadolint >/dev/null; then hadolint "$dockerfile"; echo "hadolint: ok"; fi

# ---- 2. build -----------------------------------------------------------------------------------
tmp="$(mktemp -d -t kubelet-operator-image-XXXXXX)"
cleanup() { if [ "${KEEP_TMP:-}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT

# The image's Node, copied where the image's uid can run it: the RUN steps and the ENTRYPOINT run on it.
image_node="$(bash "$repo/scripts/image-node.sh" | tail -1)" || fail "scripts/image-node.sh failed"
mkdir -p "$tmp/node/bin"
cp "$image_node" "$tmp/node/bin/node"
chmod -R a+rX "$tmp"
node_path="$tmp/node/bin:$PATH"
# Without root the replay cannot hand files to another uid: its chown does nothing, and every step (the
# image's uid's included) runs as whoever runs this script.
if [ "$(id -u)" != 0 ]; then
  mkdir -p "$tmp/shim" && printf '#!/bin/sh\nexit 0\n' >"$tmp/shim/chown" && chmod +x "$tmp/shim/chown"
  node_path="$tmp/shim:$node_path"
fi
as_user=()
user_env=()

# The build context: only what .dockerignore lets through (its `!path` lines after `*`).
ctx="$tmp/context"
mkdir -p "$ctx"
while read -r line; do
  [[ "$line" == '!'* ]] || continue
  p="${line#!}"; p="${p%/}"
  [ -e "$repo/$p" ] && cp -a "$repo/$p" "$ctx/$p"
done <"$repo/.dockerignore"

# Join continuation lines, drop comments, then replay instruction by instruction.
stage=""
stages=0
declare -A stage_dir=()
env_prefix=()
while IFS= read -r ins; do
  read -r op rest <<<"$ins"
  case "$op" in
    FROM)
      name="stage$stages"; stages=$((stages + 1))
      [[ "$rest" =~ \ AS\ ([a-z0-9_-]+)$ ]] && name="${BASH_REMATCH[1]}"
      stage="$name"; stage_dir[$stage]="$tmp/$stage"; mkdir -p "${stage_dir[$stage]}"; env_prefix=(); as_user=(); user_env=()
      workdir=""
      ;;
    WORKDIR) workdir="$rest" ;;
    ENV) env_prefix+=("${rest//=\/app/=${stage_dir[$stage]}}") ;;
    USER)
      # RUN steps after it run as that uid (when this script runs as root; otherwise as whoever runs it).
      [[ "$rest" =~ ^([0-9]+)(:([0-9]+))?$ ]] || fail "USER must be numeric: $rest"
      if [ "$(id -u)" = 0 ]; then
        as_user=(setpriv --reuid "${BASH_REMATCH[1]}" --regid "${BASH_REMATCH[3]:-${BASH_REMATCH[1]}}" --clear-groups)
        user_env=(HOME=/nonexistent)
      fi
      chmod -R a+rX "$tmp"
      ;;
    ARG | LABEL | EXPOSE | ENTRYPOINT | CMD) ;;
    COPY)
      read -ra words <<<"$rest"
      from="$ctx"
      if [[ "${words[0]}" == --from=* ]]; then
        src_stage="${words[0]#--from=}"; words=("${words[@]:1}")
        from="${stage_dir[$src_stage]:?unknown stage $src_stage}"
      fi
      dest="${words[-1]}"; unset 'words[-1]'
      for s in "${words[@]}"; do
        # A --from path is absolute in that stage; its WORKDIR is the stage dir's root.
        s="${s#/src/}"; s="${s#/app/}"
        cp -a "$from/$s" "${stage_dir[$stage]}/${dest%/}/" 2>/dev/null || cp -a "$from/$s" "${stage_dir[$stage]}/$dest"
      done
      ;;
    RUN)
      echo "[$stage] RUN $rest"
      # A private npm cache: the Dockerfile's `npm cache clean` must not empty this machine's cache.
      (cd "${stage_dir[$stage]}" && "${as_user[@]}" env "${user_env[@]}" PATH="$node_path" npm_config_cache="$tmp/npm-cache" \
        "${env_prefix[@]}" bash -euo pipefail -c "$rest") || fail "[$stage] RUN failed: $rest"
      ;;
    *) fail "image-build-check does not know instruction $op" ;;
  esac
done < <(sed -e '/^[[:space:]]*#/d' "$dockerfile" | sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' | sed -e '/^[[:space:]]*$/d')
[ -n "$workdir" ] || fail "final stage has no WORKDIR"

# ---- 3. run as the image's uid ------------------------------------------------------------------
final="${stage_dir[$stage]}"
[ ! -d "$final/src" ] || fail "final stage must hold compiled JS only, found src/"
[ -f "$final/dist/runtime/cri/proto/api.proto" ] || fail "dist/runtime/cri/proto/api.proto missing"
chmod -R a+rX "$tmp"
as_user=(setpriv --reuid "$uid" --regid "$gid" --clear-groups)
[ "$(id -u)" = 0 ] || as_user=()
# The ENTRYPOINT itself, node flags included: a flag the image's node rejects fails here.
run_final() { (cd "$final" && "${as_user[@]}" env HOME=/nonexistent PATH="$node_path" "${env_prefix[@]}" "$@"); }
run_final "${entrypoint[@]}" --help | grep -q -- '--kubeconfig' || fail "${entrypoint[*]} --help did not print the flags"
run_final node --input-type=module -e \
  "const m = await import('./dist/runtime/cri/connection.js'); m.loadCriServices(); console.log('cri proto: ok');" \
  || fail "the compiled CRI client cannot load its proto"
cache="$(printf '%s\n' "${env_prefix[@]}" | sed -n 's/^NODE_COMPILE_CACHE=//p')"
if [ -n "$cache" ]; then
  # As under readOnlyRootFilesystem: nothing may be written, every module must be read from the cache.
  chmod -R a-w "$cache"
  trace="$(run_final env NODE_DEBUG_NATIVE=COMPILE_CACHE "${entrypoint[@]}" --help 2>&1 >/dev/null)"
  reads="$(grep -E 'reading cache from|Cannot create cache' <<<"$trace" || true)"
  hits="$(grep -c 'success' <<<"$reads" || true)"
  misses="$(grep -vc 'success' <<<"$reads" || true)"
  [ "$hits" -gt 0 ] && [ "$misses" = 0 ] \
    || fail "the compile cache was not used: $hits modules read, $misses not; $(grep -v success <<<"$reads" | head -3)"
  chmod -R u+w "$cache"
  echo "compile cache: $hits modules read from it"
fi
echo "image-build-check: ok (ran as uid ${as_user:+$uid})"
