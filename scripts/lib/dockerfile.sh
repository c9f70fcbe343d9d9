# shellcheck shell=bash
# shellcheck disable=SC2034 # the DF_* variables are set for the caller
# The Dockerfile without a docker engine, shared by scripts/image.sh (which builds the image from the
# replay) and scripts/image-build-check.sh (which lints it and checks the image). Sourced, not run; the
# caller defines fail (takes a message, exits).
#
#   dockerfile_lint <Dockerfile>                   rules the image must keep (Node LTS base, multi-stage,
#       npm ci --omit=dev, non-root numeric USER, OCI labels, no HEALTHCHECK, no ADD, no :latest, the compile
#       cache filled after the last USER with the ENTRYPOINT's flags). Sets DF_UID, DF_GID, DF_ENTRYPOINT.
#   dockerfile_replay <repo> <Dockerfile> <tmp> [NAME=value...]
#       replays the COPY/RUN/ENV/USER steps stage by stage in <tmp>: a dir per stage stands in for its
#       filesystem (its WORKDIR), `/app` in an ENV value for the stage's dir; COPY sources are filtered by
#       .dockerignore's allow list; RUN steps run on the image's Node (scripts/image-node.sh: the
#       Dockerfile's major, pinned and cached), with the host's npm, those after a USER as that uid (when
#       root; otherwise as whoever runs it, and chown does nothing). NAME=value pairs are build args.
#       Sets, for the final stage:
#         DF_FINAL_DIR     its WORKDIR's contents        DF_WORKDIR   its WORKDIR (/app)
#         DF_ENV           its ENV lines, as written     DF_ENV_HOST  the same with /app -> DF_FINAL_DIR
#         DF_USER          its last USER                 DF_EXPOSE    its EXPOSE ports
#         DF_LABELS        its LABEL pairs (key=value, quotes removed, ARGs expanded)
#         DF_ENTRYPOINT_JSON, DF_CMD_JSON  its ENTRYPOINT and CMD (exec form; CMD empty when unset)
#         DF_FROM          its FROM image
#         DF_NODE_PATH     a PATH with the image's Node first (for running the final stage on the host)

# ---- lint -------------------------------------------------------------------------------------------
DF_UID=""
DF_GID=""
DF_ENTRYPOINT=()

dockerfile_lint() {
  local dockerfile="$1" final_from user_line entry_flags fill
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
  DF_UID="${BASH_REMATCH[1]}"
  DF_GID="${BASH_REMATCH[3]:-$DF_UID}"
  # The ENTRYPOINT (exec form), an argument a line.
  mapfile -t DF_ENTRYPOINT < <(grep '^ENTRYPOINT ' "$dockerfile" | tail -1 | sed 's/^ENTRYPOINT //' |
    node -e 'for (const a of JSON.parse(require("fs").readFileSync(0, "utf8"))) console.log(a)')
  [ "${DF_ENTRYPOINT[0]:-}" = node ] || fail "ENTRYPOINT must be exec form starting with node"
  # The build fills Node's compile cache as the runtime uid with the ENTRYPOINT's flags (Node keys the cache
  # by both): a flag changed in one place only would leave the image with a cache it never reads.
  entry_flags="${DF_ENTRYPOINT[*]:1:${#DF_ENTRYPOINT[@]}-2}"
  if grep -q '^ENV NODE_COMPILE_CACHE=' "$dockerfile"; then
    fill="RUN node${entry_flags:+ $entry_flags} dist/main.js --help > /dev/null"
    grep -qxF "$fill" "$dockerfile" || fail "NODE_COMPILE_CACHE is set but no \`$fill\` fills it"
    [ "$(grep -nxF "$fill" "$dockerfile" | cut -d: -f1)" -gt "$(grep -n '^USER ' "$dockerfile" | tail -1 | cut -d: -f1)" ] ||
      fail "the compile cache must be filled after the last USER (Node keys it by uid)"
  fi
}

# ---- replay -----------------------------------------------------------------------------------------
DF_FINAL_DIR=""
DF_WORKDIR=""
DF_ENV=()
DF_ENV_HOST=()
DF_USER=""
DF_EXPOSE=()
DF_LABELS=()
DF_ENTRYPOINT_JSON=""
DF_CMD_JSON=""
DF_FROM=""
DF_NODE_PATH=""

# Expands ${NAME} and $NAME from the build args in the assoc array named by $2.
_df_expand() {
  local s="$1" out="" name
  local -n _args="$2"
  while [[ "$s" =~ ^([^$]*)\$(\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))(.*)$ ]]; do
    name="${BASH_REMATCH[3]:-${BASH_REMATCH[4]}}"
    out+="${BASH_REMATCH[1]}${_args[$name]:-}"
    s="${BASH_REMATCH[5]}"
  done
  printf '%s' "$out$s"
}

dockerfile_replay() {
  local repo="$1" dockerfile="$2" tmp="$3"
  shift 3
  local -A build_args=() args=() stage_dir=()
  local a
  for a in "$@"; do build_args["${a%%=*}"]="${a#*=}"; done

  # The image's Node, copied where the image's uid can run it: the RUN steps run on it.
  local image_node node_path
  image_node="$(bash "$repo/scripts/image-node.sh" | tail -1)" || fail "scripts/image-node.sh failed"
  mkdir -p "$tmp/node/bin"
  cp "$image_node" "$tmp/node/bin/node"
  chmod -R a+rX "$tmp"
  node_path="$tmp/node/bin:$PATH"
  DF_NODE_PATH="$node_path"
  # Without root the replay cannot hand files to another uid: its chown does nothing, and every step (the
  # image's uid's included) runs as whoever runs this script.
  if [ "$(id -u)" != 0 ]; then
    mkdir -p "$tmp/shim" && printf '#!/bin/sh\nexit 0\n' >"$tmp/shim/chown" && chmod +x "$tmp/shim/chown"
    node_path="$tmp/shim:$node_path"
  fi

  # The build context: only what .dockerignore lets through (its `!path` lines after `*`).
  local ctx="$tmp/context" line p
  mkdir -p "$ctx"
  while read -r line; do
    [[ "$line" == '!'* ]] || continue
    p="${line#!}"
    p="${p%/}"
    [ -e "$repo/$p" ] && cp -a "$repo/$p" "$ctx/$p"
  done <"$repo/.dockerignore"

  # Join continuation lines, drop comments, then replay instruction by instruction.
  local ins op rest stage="" stages=0 name src_stage from dest s pair
  local as_user=() user_env=() env_prefix=() words=()
  local label_re='^[[:space:]]*([A-Za-z0-9._-]+)=("([^"]*)"|([^[:space:]"]*))(.*)$'
  while IFS= read -r ins; do
    read -r op rest <<<"$ins"
    case "$op" in
      FROM)
        name="stage$stages"
        stages=$((stages + 1))
        [[ "$rest" =~ \ AS\ ([a-z0-9_-]+)$ ]] && name="${BASH_REMATCH[1]}"
        stage="$name"
        stage_dir[$stage]="$tmp/$stage"
        mkdir -p "${stage_dir[$stage]}"
        env_prefix=()
        as_user=()
        user_env=()
        DF_FROM="${rest%% *}"
        DF_WORKDIR=""
        DF_ENV=()
        DF_USER=""
        DF_EXPOSE=()
        DF_LABELS=()
        DF_ENTRYPOINT_JSON=""
        DF_CMD_JSON=""
        # An ARG before the first FROM is global; one inside a stage is that stage's (none are global here).
        args=()
        ;;
      ARG)
        # ARG NAME[=default]; a build arg overrides the default.
        name="${rest%%=*}"
        if [[ -v "build_args[$name]" ]]; then
          args[$name]="${build_args[$name]}"
        elif [[ "$rest" == *=* ]]; then
          args[$name]="${rest#*=}"
        else
          args[$name]=""
        fi
        ;;
      WORKDIR) DF_WORKDIR="$rest" ;;
      ENV)
        # One NAME=value a line: the image config and the replay both read it so.
        [[ "$rest" =~ ^[A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*$ ]] || fail "ENV must be one NAME=value without spaces: ENV $rest"
        rest="$(_df_expand "$rest" args)"
        DF_ENV+=("$rest")
        env_prefix+=("${rest//=\/app/=${stage_dir[$stage]}}")
        ;;
      USER)
        # RUN steps after it run as that uid (when this script runs as root; otherwise as whoever runs it).
        [[ "$rest" =~ ^([0-9]+)(:([0-9]+))?$ ]] || fail "USER must be numeric: $rest"
        DF_USER="$rest"
        if [ "$(id -u)" = 0 ]; then
          as_user=(setpriv --reuid "${BASH_REMATCH[1]}" --regid "${BASH_REMATCH[3]:-${BASH_REMATCH[1]}}" --clear-groups)
          user_env=(HOME=/nonexistent)
        fi
        chmod -R a+rX "$tmp"
        ;;
      LABEL)
        # key="value" or key=value pairs; quotes removed, ARGs expanded.
        while [[ "$rest" =~ $label_re ]]; do
          pair="${BASH_REMATCH[1]}=${BASH_REMATCH[3]}${BASH_REMATCH[4]}"
          rest="${BASH_REMATCH[5]}"
          DF_LABELS+=("$(_df_expand "$pair" args)")
        done
        [[ -z "${rest//[[:space:]]/}" ]] || fail "cannot read LABEL pairs from: $rest"
        ;;
      EXPOSE) read -ra words <<<"$rest" && DF_EXPOSE+=("${words[@]}") ;;
      ENTRYPOINT) DF_ENTRYPOINT_JSON="$rest" ;;
      CMD) DF_CMD_JSON="$rest" ;;
      COPY)
        read -ra words <<<"$rest"
        from="$ctx"
        if [[ "${words[0]}" == --from=* ]]; then
          src_stage="${words[0]#--from=}"
          words=("${words[@]:1}")
          from="${stage_dir[$src_stage]:?unknown stage $src_stage}"
        fi
        dest="${words[-1]}"
        unset 'words[-1]'
        for s in "${words[@]}"; do
          # A --from path is absolute in that stage; its WORKDIR is the stage dir's root.
          s="${s#/src/}"
          s="${s#/app/}"
          cp -a "$from/$s" "${stage_dir[$stage]}/${dest%/}/" 2>/dev/null || cp -a "$from/$s" "${stage_dir[$stage]}/$dest"
        done
        ;;
      RUN)
        echo "[$stage] RUN $rest"
        # A private npm cache: the Dockerfile's `npm cache clean` must not empty this machine's cache.
        (cd "${stage_dir[$stage]}" && "${as_user[@]}" env "${user_env[@]}" PATH="$node_path" npm_config_cache="$tmp/npm-cache" \
          "${env_prefix[@]}" bash -euo pipefail -c "$rest") || fail "[$stage] RUN failed: $rest"
        ;;
      *) fail "the Dockerfile replay does not know instruction $op" ;;
    esac
  done < <(sed -e '/^[[:space:]]*#/d' "$dockerfile" | sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' | sed -e '/^[[:space:]]*$/d')
  [ -n "$DF_WORKDIR" ] || fail "final stage has no WORKDIR"
  [ -n "$DF_ENTRYPOINT_JSON" ] || fail "final stage has no ENTRYPOINT"
  DF_FINAL_DIR="${stage_dir[$stage]}"
  DF_ENV_HOST=("${env_prefix[@]}")
  chmod -R a+rX "$tmp"
}
