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
  for tool in podman runc netavark docker-compose debootstrap iptables; do
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

# debian:bookworm-slim without a registry: a debootstrap'd root (minbase),
# cached as a tarball, imported under the registry name the Dockerfiles use.
rs_ct_base_image() {
  if podman image exists docker.io/library/debian:bookworm-slim; then
    return 0
  fi
  local tarball=$RS_CT_CACHE/bookworm-minbase.tar
  if [ ! -s "$tarball" ]; then
    echo "==> debootstrap bookworm (once; cached in $RS_CT_CACHE)"
    mkdir -p "$RS_CT_CACHE"
    local root
    root=$(mktemp -d "$RS_CT_CACHE/rootfs.XXXXXX")
    if ! debootstrap --variant=minbase bookworm "$root" >"$RS_CT_DIR/debootstrap.log" 2>&1; then
      rm -rf "$root"
      tail -5 "$RS_CT_DIR/debootstrap.log" >&2
      rs_ct_skip "debootstrap could not reach Debian's mirror (log: $RS_CT_DIR/debootstrap.log)"
    fi
    # What the registry image leaves out too: apt's package lists.
    rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
    tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$root"
  fi
  podman import --change 'CMD ["/bin/bash"]' "$tarball" docker.io/library/debian:bookworm-slim \
    >"$RS_CT_DIR/import.log" 2>&1 || { cat "$RS_CT_DIR/import.log" >&2; return 1; }
}

rs_ct_service_start() {
  local sock=$RS_CT_DIR/podman.sock
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
