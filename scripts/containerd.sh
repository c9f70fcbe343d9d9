#!/usr/bin/env bash
# A real containerd (CRI v1) for kubelet-operator's tests. See shared/docs/TEST-ENVIRONMENT.md section 1.
#
#   containerd.sh install        apt-get installs containerd, runc and busybox-static when missing
#   containerd.sh images <out>   writes busybox.tar and pause.tar (OCI image layouts) into <out>
#   containerd.sh start <dir>    config, root, state and socket under <dir>; imports the images into k8s.io
#                                With CONTAINERD_NETNS=<path> (a network namespace, /run/netns/<name>) the daemon
#                                runs in that namespace, as on a node of its own: host-network pods get the
#                                node's network, and CNI (bridge, routes, portmap rules) works inside it.
#                                CONTAINERD_STREAM_ADDRESS sets where exec/attach/port-forward streams listen
#                                (default 127.0.0.1; from another namespace it must be the node's address).
#                                A file <dir>/cni/conf-template.json becomes the CRI plugin's conf_template:
#                                the CNI config is written from it when the kubelet hands over the pod CIDR.
#                                A directory <dir>/certs.d becomes the CRI registry config_path (hosts.toml).
#   containerd.sh stop <dir>     removes pods and containers, stops containerd, unmounts, removes <dir>
#
# Each instance owns the pod cgroups under /kubelet-operator-test/<basename of dir>; stop removes them.
# Built image tars are cached in ${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator/images/, keyed by the
# busybox-static version and by IMAGE_RECIPE below (bump it when the image contents change).
set -euo pipefail

# The OCI image layout writer and the busybox root (build_image, make_rootfs, ...).
# shellcheck source=lib/oci.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/oci.sh"
OCI_CREATED_BY='kubelet-operator scripts/containerd.sh'

readonly PACKAGES=(containerd runc busybox-static)
readonly BUSYBOX_IMAGE='docker.io/library/busybox:latest'
readonly BUSYBOX_IMAGE_ALIAS='docker.io/library/busybox:1.36'
readonly PAUSE_IMAGE='registry.k8s.io/pause:3.10'
readonly NAMESPACE='k8s.io'
readonly CGROUP_ROOT='kubelet-operator-test'
readonly IMAGE_RECIPE='v1'
readonly STOP_TIMEOUT_S="${CONTAINERD_STOP_TIMEOUT:-15}"
readonly START_TIMEOUT_S="${CONTAINERD_START_TIMEOUT:-60}"

die() {
  echo "containerd.sh: $*" >&2
  exit 1
}

need_root() {
  if [[ "$(id -u)" != 0 ]]; then
    echo 'containerd tests need root: run as root or with sudo' >&2
    exit 2
  fi
}

usage() {
  echo "usage: $0 install | images <outdir> | start <dir> | stop <dir>" >&2
  exit 64
}

# Makes a directory argument absolute without requiring it to exist.
abs_dir() {
  local d="$1"
  [[ -n "$d" ]] || usage
  [[ "$d" == /* ]] || d="$PWD/$d"
  d="${d%/}"
  [[ -n "$d" && "$d" != / ]] || die "refusing to use / as the instance directory"
  printf '%s\n' "$d"
}

# ---------------------------------------------------------------------------------------------- install

cmd_install() {
  need_root
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    echo "containerd packages present: $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}')"
    return 0
  fi
  echo "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # A machine whose package lists were never fetched knows no candidate: update once, then install.
  local p_known=1
  for p in "${missing[@]}"; do
    apt-cache show "$p" >/dev/null 2>&1 || p_known=0
  done
  if ((p_known == 0)); then
    apt-get update -q >/dev/null || die "apt-get update failed"
  fi
  if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/containerd-apt.$$.log 2>&1; then
    tail -n 20 /tmp/containerd-apt.$$.log >&2 || true
    rm -f /tmp/containerd-apt.$$.log
    die "apt-get install ${missing[*]} failed"
  fi
  rm -f /tmp/containerd-apt.$$.log
  # The Debian package enables a system service; on machines with systemd it would now be running with
  # /etc/containerd. Tests never use it, and it is left as the package set it up.
  echo "installed ${missing[*]}"
}

# ---------------------------------------------------------------------------------------------- images

# Prints the cache directory holding busybox.tar and pause.tar, building them when absent.
ensure_images() {
  command -v busybox >/dev/null || [[ -x /bin/busybox ]] || die "busybox-static is not installed: run '$0 install'"
  local version key cache
  version="$(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null || true)"
  [[ -n "$version" ]] || version="unknown-$(sha256_of /bin/busybox | cut -c1-16)"
  key="${IMAGE_RECIPE}-$(printf '%s' "$version" | tr -c 'A-Za-z0-9._+-' '_')-$(image_arch)"
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-operator/images/$key"
  if [[ -s "$cache/busybox.tar" && -s "$cache/pause.tar" ]]; then
    echo "$cache"
    return 0
  fi
  mkdir -p "$(dirname "$cache")"
  local build
  build="$(mktemp -d "$(dirname "$cache")/.build.XXXXXX")"
  (
    umask 022
    make_rootfs "$build/rootfs"
    local entries
    mapfile -t entries < <(cd "$build/rootfs" && LC_ALL=C ls -A | LC_ALL=C sort)
    deterministic_tar "$build/rootfs" "$build/layer.tar" "${entries[@]}"
    local diff_id layer_digest layer_size
    diff_id="$(sha256_of "$build/layer.tar")"
    gzip -n -9 <"$build/layer.tar" >"$build/layer.tar.gz"
    layer_digest="$(sha256_of "$build/layer.tar.gz")"
    layer_size="$(size_of "$build/layer.tar.gz")"
    LAYER_FILE="$build/layer.tar.gz"
    build_image "$build/busybox.tar" "$BUSYBOX_IMAGE" "$layer_digest" "$layer_size" "$diff_id" \
      '"Cmd":["sh"]' "$BUSYBOX_IMAGE_ALIAS"
    build_image "$build/pause.tar" "$PAUSE_IMAGE" "$layer_digest" "$layer_size" "$diff_id" \
      '"Entrypoint":["/bin/sleep","infinity"]'
  ) >&2 || {
    rm -rf "$build"
    die "building the test images failed"
  }
  mkdir -p "$build/out"
  mv "$build/busybox.tar" "$build/pause.tar" "$build/out/"
  # Another process may have won the race; either result is byte-identical.
  if ! mv -T "$build/out" "$cache" 2>/dev/null; then
    [[ -s "$cache/busybox.tar" && -s "$cache/pause.tar" ]] || die "cannot write the image cache $cache"
  fi
  rm -rf "$build"
  echo "$cache"
}

cmd_images() {
  local out
  out="$(abs_dir "${1:-}")"
  local cache
  cache="$(ensure_images)"
  mkdir -p "$out"
  cp -f "$cache/busybox.tar" "$out/busybox.tar"
  cp -f "$cache/pause.tar" "$out/pause.tar"
  echo "$out/busybox.tar $BUSYBOX_IMAGE $BUSYBOX_IMAGE_ALIAS"
  echo "$out/pause.tar $PAUSE_IMAGE"
}

# ---------------------------------------------------------------------------------------------- start

write_config() {
  local dir="$1"
  cat >"$dir/config.toml" <<EOF
# Written by scripts/containerd.sh for one test instance; every path is under $dir.
version = 2
root = "$dir/root"
state = "$dir/state"
oom_score = 0

[grpc]
  address = "$dir/containerd.sock"

[ttrpc]
  address = "$dir/containerd.sock.ttrpc"

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$dir/opt"

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$PAUSE_IMAGE"
    # Mandatory here: root lacks CAP_SYS_RESOURCE, so a negative oom_score_adj kills RunPodSandbox.
    restrict_oom_score_adj = true
    systemd_cgroup = false
    disable_apparmor = true
    disable_hugetlb_controller = true
    tolerate_missing_hugetlb_controller = true
    netns_mounts_under_state_dir = true
    enable_selinux = false
    # Streaming (exec/attach/port-forward) on a random port, so instances never collide.
    stream_server_address = "${CONTAINERD_STREAM_ADDRESS:-127.0.0.1}"
    stream_server_port = "0"

    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          BinaryName = "/usr/sbin/runc"
          SystemdCgroup = false

    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "$dir/cni/bin"
      conf_dir = "$dir/cni/net.d"
EOF
  if [[ -f "$dir/cni/conf-template.json" ]]; then
    echo "      conf_template = \"$dir/cni/conf-template.json\"" >>"$dir/config.toml"
  fi
  # Registries of the test's own (hosts.toml per host: its CA): the CRI plugin reads them on every pull.
  if [[ -d "$dir/certs.d" ]]; then
    printf '\n    [plugins."io.containerd.grpc.v1.cri".registry]\n      config_path = "%s"\n' "$dir/certs.d" >>"$dir/config.toml"
  fi
}

ctr_at() {
  local dir="$1"
  shift
  ctr --address "$dir/containerd.sock" --namespace "$NAMESPACE" "$@"
}

# True when the pid file names a live containerd started with this instance's config.
instance_pid() {
  local dir="$1" pid
  [[ -f "$dir/containerd.pid" ]] || return 1
  pid="$(cat "$dir/containerd.pid" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "--config $dir/config.toml" || return 1
  echo "$pid"
}

cmd_start() {
  need_root
  local dir
  dir="$(abs_dir "${1:-}")"
  command -v containerd >/dev/null || die "containerd is not installed: run '$0 install'"
  [[ -x /usr/sbin/runc ]] || die "runc is not installed at /usr/sbin/runc: run '$0 install'"
  if instance_pid "$dir" >/dev/null; then
    die "containerd already runs for $dir"
  fi
  local sock="$dir/containerd.sock"
  # A unix socket path must fit in sun_path (108 bytes).
  ((${#sock} < 100)) || die "instance directory path too long for a unix socket: $dir"

  local t0 images
  t0="$(date +%s%N)"
  images="$(ensure_images)"
  local t_images
  t_images="$(date +%s%N)"

  mkdir -p "$dir/root" "$dir/state" "$dir/opt" "$dir/cni/bin" "$dir/cni/net.d"
  chmod 0711 "$dir"
  write_config "$dir"

  # Own session and process group: the test harness can kill the whole group, and a terminal's
  # SIGINT does not reach it. In a non-interactive shell the background child is no group leader,
  # so setsid needs no fork and $! is containerd's own pid.
  # nsenter switches the network namespace alone (mounts stay the host's, so the operator's volume mounts
  # reach the containers) and execs, so the pid is still containerd's.
  local enter=()
  if [[ -n "${CONTAINERD_NETNS:-}" ]]; then
    [[ -e "$CONTAINERD_NETNS" ]] || die "no network namespace at $CONTAINERD_NETNS"
    echo "$CONTAINERD_NETNS" >"$dir/netns"
    enter=(nsenter "--net=$CONTAINERD_NETNS")
  fi
  setsid "${enter[@]}" containerd --config "$dir/config.toml" </dev/null >>"$dir/containerd.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$dir/containerd.pid"

  local deadline=$((SECONDS + START_TIMEOUT_S))
  until ctr_at "$dir" version >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$dir/containerd.log" >&2 || true
      die "containerd exited during start (log: $dir/containerd.log)"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "$dir/containerd.log" >&2 || true
      die "containerd did not answer on $sock within ${START_TIMEOUT_S}s"
    fi
    sleep 0.05
  done
  local t_up
  t_up="$(date +%s%N)"

  ctr_at "$dir" images import "$images/busybox.tar" >/dev/null || die "importing $images/busybox.tar failed"
  ctr_at "$dir" images import "$images/pause.tar" >/dev/null || die "importing $images/pause.tar failed"
  # The CRI plugin must never garbage-collect the sandbox image.
  ctr_at "$dir" images label "$PAUSE_IMAGE" io.cri-containerd.pinned=pinned >/dev/null 2>&1 || true
  local t_done
  t_done="$(date +%s%N)"

  printf 'containerd pid %s socket %s (images %d ms, daemon up %d ms, import %d ms)\n' "$pid" "$sock" \
    $(((t_images - t0) / 1000000)) $(((t_up - t_images) / 1000000)) $(((t_done - t_up) / 1000000))
}

# ---------------------------------------------------------------------------------------------- stop

# Children of a pid, recursively, deepest last.
descendants() {
  local parent="$1" child
  for child in $(ps -e -o pid=,ppid= | awk -v p="$parent" '$2 == p {print $1}'); do
    echo "$child"
    descendants "$child"
  done
}

# Shims that were started for this instance's socket (their command line names the address).
instance_shims() {
  local sock="$1" p cmd comm
  for p in /proc/[0-9]*; do
    comm=''
    read -r comm 2>/dev/null <"$p/comm" || true
    [[ "$comm" == containerd-shim* ]] || continue
    cmd="$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null || true)"
    [[ " $cmd " == *" -address $sock "* ]] && echo "${p#/proc/}"
  done
  return 0
}

# Removes every container (pod sandboxes are containers too) through the socket, tasks first.
remove_containers() {
  local dir="$1" id ids
  ids="$(ctr_at "$dir" containers list --quiet 2>/dev/null || true)"
  for id in $ids; do
    ctr_at "$dir" tasks kill --all --signal SIGKILL "$id" >/dev/null 2>&1 || true
  done
  for id in $ids; do
    # --force kills a task that is still running; the shim exits when its last task is gone.
    timeout 20 ctr --address "$dir/containerd.sock" --namespace "$NAMESPACE" tasks delete --force "$id" >/dev/null 2>&1 || true
    timeout 20 ctr --address "$dir/containerd.sock" --namespace "$NAMESPACE" containers delete "$id" >/dev/null 2>&1 || true
  done
}

# Containers whose runc state survived (a shim killed hard): delete them with runc, which kills them.
runc_leftovers() {
  local dir="$1" id
  for id in $(task_ids "$dir"); do
    /usr/sbin/runc --root "/run/containerd/runc/$NAMESPACE" delete --force "$id" >/dev/null 2>&1 || true
  done
}

# Task ids this instance has bundles for (sandboxes and containers).
task_ids() {
  local dir="$1" bundle
  for bundle in "$dir/state/io.containerd.runtime.v2.task/$NAMESPACE"/*/; do
    [[ -d "$bundle" ]] && basename "$bundle"
  done
  return 0
}

# A shim killed hard leaves its socket in /run/containerd/s, named by sha256("<address>/<namespace>/<id>").
remove_shim_sockets() {
  local sock="$1" id hash
  shift
  for id in "$@"; do
    hash="$(printf '%s' "$sock/$NAMESPACE/$id" | sha256sum | awk '{print $1}')"
    rm -f "/run/containerd/s/$hash"
  done
}

stop_process_group() {
  local pid="$1" timeout_s="$2"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + timeout_s))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "containerd $pid ignored SIGTERM for ${timeout_s}s: SIGKILL" >&2
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  fi
}

# Mount points under <dir>, most recently mounted first (mountinfo lists in mount order).
mounts_under() {
  local dir="$1"
  # Field 5 is the mount point, with space, tab, newline and backslash octal-escaped.
  awk -v d="$dir" '{ mp = $5; gsub(/\\040/, " ", mp); gsub(/\\011/, "\t", mp); gsub(/\\134/, "\\", mp);
                     if (mp == d || index(mp, d "/") == 1) print mp }' /proc/self/mountinfo | tac
}

unmount_all() {
  local dir="$1" mp tries
  for tries in 1 2 3 4 5; do
    local left=0
    while IFS= read -r mp; do
      [[ -n "$mp" ]] || continue
      left=1
      umount "$mp" 2>/dev/null || umount --lazy "$mp" 2>/dev/null || true
    done < <(mounts_under "$dir")
    ((left == 0)) && return 0
    sleep 0.2
  done
  [[ -z "$(mounts_under "$dir")" ]] || {
    echo "still mounted under $dir:" >&2
    mounts_under "$dir" >&2
    return 1
  }
}

# Removes /kubelet-operator-test/<instance> in every hierarchy, killing what still runs there.
remove_cgroups() {
  local name="$1" hier base d pid
  for hier in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    base="${hier%/}/$CGROUP_ROOT/$name"
    [[ -d "$base" ]] || continue
    # Deepest first; a directory still holding processes is emptied with SIGKILL.
    while IFS= read -r d; do
      for pid in $(cat "$d/cgroup.procs" 2>/dev/null); do
        kill -KILL "$pid" 2>/dev/null || true
      done
    done < <(find "$base" -depth -type d)
    local tries
    for tries in 1 2 3 4 5 6 7 8 9 10; do
      while IFS= read -r d; do rmdir "$d" 2>/dev/null || true; done < <(find "$base" -depth -type d)
      [[ -d "$base" ]] || break
      sleep 0.2
    done
    [[ -d "$base" ]] && echo "cgroup $base could not be removed" >&2
    rmdir "${hier%/}/$CGROUP_ROOT" 2>/dev/null || true
  done
  return 0
}

cmd_stop() {
  need_root
  local dir
  dir="$(abs_dir "${1:-}")"
  local sock="$dir/containerd.sock" pid="" rc=0 p c

  pid="$(instance_pid "$dir" || true)"
  local ids
  mapfile -t ids < <(task_ids "$dir")
  if [[ -n "$pid" ]] && [[ -S "$sock" ]]; then
    remove_containers "$dir"
  fi

  # Shims that outlived their tasks, with their container processes: runc first, then the processes.
  runc_leftovers "$dir"
  for p in $(instance_shims "$sock"); do
    for c in $(descendants "$p" | tac); do kill -KILL "$c" 2>/dev/null || true; done
    kill -KILL "$p" 2>/dev/null || true
  done

  if [[ -n "$pid" ]]; then
    stop_process_group "$pid" "$STOP_TIMEOUT_S"
  fi
  # A shim may have been started in the last instant; after containerd is gone none can appear.
  for p in $(instance_shims "$sock"); do
    for c in $(descendants "$p" | tac); do kill -KILL "$c" 2>/dev/null || true; done
    kill -KILL "$p" 2>/dev/null || true
  done

  remove_shim_sockets "$sock" "${ids[@]}"

  unmount_all "$dir" || rc=1
  remove_cgroups "$(basename "$dir")"

  if [[ -d "$dir" ]]; then
    if ((rc == 0)); then
      # --one-file-system: never descend into something that is still mounted.
      rm -rf --one-file-system "$dir" || rc=1
    else
      echo "left $dir in place because mounts remain" >&2
    fi
  fi
  return "$rc"
}

# ---------------------------------------------------------------------------------------------- main

case "${1:-}" in
  install) cmd_install ;;
  images) cmd_images "${2:-}" ;;
  start) cmd_start "${2:-}" ;;
  stop) cmd_stop "${2:-}" ;;
  *) usage ;;
esac
