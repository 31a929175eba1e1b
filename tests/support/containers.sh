# shellcheck shell=bash
# Container helpers for the tests that build images and run the compose
# cluster (tests/docker/, tests/packaging/). These machines have no Docker
# daemon and no registry; Debian's podman builds the images, and Debian's
# docker-compose (v1) drives podman through its Docker-compatible socket.
# The recipe and the settings below are in shared/docs/containers.md.
#
# podman's state (images, containers, networks) lives in one folder,
# $RS_CT_STATE (default: under $RS_CT_CACHE, ~/.cache/reduction-server), kept
# between runs like a compiler cache: the base images and their apt layers
# are built once. A base image `debian:bookworm-slim` is made without a
# registry by debootstrap, so the project's Dockerfiles build here unchanged
# and on a user's machine against the real image.
#
# Source it, then:
#   rs_ct_init SCRATCH       logs and the API socket in SCRATCH; exits 77 with
#                            the reason when containers cannot run here
#   rs_ct_base_image         debian:bookworm-slim from debootstrap (once; cached)
#   rs_ct_service_start      podman's API socket for docker-compose; sets DOCKER_HOST
#   rs_ct_service_stop       stops it (by its pid)
#   podman ...               uses that state once rs_ct_init has run

RS_CT_CACHE=${RS_CT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reduction-server}
RS_CT_STATE=${RS_CT_STATE:-$RS_CT_CACHE/podman}
RS_CT_SERVICE_PID=

rs_ct_skip() {
  echo "SKIPPED: $*" >&2
  exit 77
}

rs_ct_init() {
  RS_CT_DIR=$1
  mkdir -p "$RS_CT_DIR"
  [ "$(id -u)" -eq 0 ] || rs_ct_skip "containers need root here (rootful podman); run as root"
  local tool
  for tool in podman runc netavark docker-compose debootstrap iptables curl; do
    command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/lib/podman/$tool" ] ||
      rs_ct_skip "$tool is not installed (scripts/lib/deps.sh's test packages: run scripts/run_tests.sh as root)"
  done
  mkdir -p "$RS_CT_STATE"/{storage,run,tmp,networks}
  local hard
  hard=$(ulimit -Hn)
  cat >"$RS_CT_STATE/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$RS_CT_STATE/storage"
runroot = "$RS_CT_STATE/run"
EOF
  # The sandboxes these tests run in cannot raise limits (every container
  # would fail with "setrlimit ... Operation not permitted"), crun refuses
  # hybrid cgroups, and there is no systemd or journald.
  cat >"$RS_CT_STATE/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$hard:$hard", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$RS_CT_STATE/tmp"

[network]
network_backend = "netavark"
network_config_dir = "$RS_CT_STATE/networks"
EOF
  export CONTAINERS_STORAGE_CONF=$RS_CT_STATE/storage.conf
  export CONTAINERS_CONF=$RS_CT_STATE/containers.conf
  local why
  if ! why=$(podman info 2>&1 >/dev/null); then
    rs_ct_skip "podman cannot run here: ${why##*$'\n'}"
  fi
}

# debian:bookworm-slim without a registry: a debootstrap'd root (minbase)
# trimmed the way Debian's own slim image is (no documentation, manual pages
# or translations, now or in packages installed later), cached as a tarball
# and imported under the registry name the Dockerfiles use. RS_CT_BASE names
# this recipe: an image imported by another recipe is imported again.
RS_CT_BASE=bookworm-slim-2

rs_ct_base_image() {
  local image=docker.io/library/debian:bookworm-slim
  if [ "$(podman image inspect --format '{{index .Labels "rs.base"}}' "$image" 2>/dev/null)" = "$RS_CT_BASE" ]; then
    return 0
  fi
  local tarball=$RS_CT_CACHE/$RS_CT_BASE.tar
  if [ ! -s "$tarball" ]; then
    echo "==> debootstrap bookworm (once; cached in $RS_CT_CACHE)"
    mkdir -p "$RS_CT_CACHE"
    local root
    root=$(mktemp -d "$RS_CT_CACHE/rootfs.XXXXXX") || return 1
    if ! debootstrap --variant=minbase bookworm "$root" >"$RS_CT_DIR/debootstrap.log" 2>&1; then
      rm -rf "$root"
      tail -5 "$RS_CT_DIR/debootstrap.log" >&2
      rs_ct_skip "debootstrap could not reach Debian's mirror (log: $RS_CT_DIR/debootstrap.log)"
    fi
    # Inside the new root only (relative paths after cd).
    (
      cd "$root" || exit 1
      printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
        'path-exclude /usr/share/man/*' 'path-exclude /usr/share/groff/*' 'path-exclude /usr/share/info/*' \
        'path-exclude /usr/share/lintian/*' 'path-exclude /usr/share/locale/*' >etc/dpkg/dpkg.cfg.d/slim
      # No package caches left in image layers.
      printf '%s\n' 'Dir::Cache::pkgcache "";' 'Dir::Cache::srcpkgcache "";' \
        'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb || true"; };' \
        >etc/apt/apt.conf.d/docker-clean
      find ./usr/share/doc -mindepth 1 -not -type d -not -name copyright -delete
      rm -rf ./usr/share/man/* ./usr/share/groff/* ./usr/share/info/* ./usr/share/lintian/* ./usr/share/locale/* \
        ./var/lib/apt/lists/* ./var/cache/apt/*.bin ./var/cache/apt/archives/*.deb ./var/log/apt/* ./var/log/*.log
    ) || { rm -rf "$root"; return 1; }
    tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$root"
  fi
  podman import --change 'CMD ["/bin/bash"]' --change "LABEL rs.base=$RS_CT_BASE" "$tarball" "$image" \
    >"$RS_CT_DIR/import.log" 2>&1 || { cat "$RS_CT_DIR/import.log" >&2; return 1; }
}

rs_ct_service_start() {
  local sock=$RS_CT_DIR/podman.sock
  rm -f "$sock"  # left by a run that was killed
  podman system service --time=0 "unix://$sock" >"$RS_CT_DIR/service.log" 2>&1 &
  RS_CT_SERVICE_PID=$!
  export DOCKER_HOST=unix://$sock
  local _
  for _ in $(seq 100); do
    if curl -sf --unix-socket "$sock" http://d/_ping >/dev/null 2>&1; then
      return 0
    fi
    kill -0 "$RS_CT_SERVICE_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "podman's API service did not answer on $sock:" >&2
  cat "$RS_CT_DIR/service.log" >&2
  return 1
}

rs_ct_service_stop() {
  if [ -n "$RS_CT_SERVICE_PID" ]; then
    kill "$RS_CT_SERVICE_PID" 2>/dev/null || true
    wait "$RS_CT_SERVICE_PID" 2>/dev/null || true
    RS_CT_SERVICE_PID=
  fi
}

# rs_ct_run_health_checks PROJECT: compose's `depends_on: service_healthy`
# waits for the reducers' health checks, which podman runs from systemd
# timers, and there is no systemd here. Run in the background while `up`
# waits: runs reducer-0's and reducer-1's checks until both pass (exit 0),
# or 60 s (exit 1).
rs_ct_run_health_checks() {
  local project=$1 healthy r
  for _ in $(seq 300); do
    healthy=0
    for r in reducer-0 reducer-1; do
      podman healthcheck run "${project}_${r}_1" >/dev/null 2>&1 && healthy=$((healthy + 1))
    done
    [ "$healthy" = 2 ] && return 0
    sleep 0.2
  done
  return 1
}

# rs_image_build LOGDIR TAG [podman build args...]: builds one image, its log
# kept in LOGDIR; on failure prints the log's tail and returns 1.
rs_image_build() {
  local dir=$1 tag=$2 log
  log=$dir/build-${2//[\/:]/_}.log
  shift 2
  echo "==> building $tag"
  if ! podman build --format docker -t "$tag" "$@" >"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "building $tag failed (log: $log)" >&2
    return 1
  fi
}
