#!/usr/bin/env bash
# The self-check in the shipped images, as a user runs it: reducer-doctor in
# the compose cluster's worker image (docker/Dockerfile's training image on
# Debian 12, docker/compose.yaml's default base; built here from this
# build's .deb, --target training-from-debs), started by docker-compose as
# worker-0 and run there with the job's environment (compose.yaml's
# REDUCER_ADDRS and token, the image's NCCL_* settings), against the two
# reducer containers of compose.yaml (--target reducer-from-debs) on the
# cluster's private network.
# Then the all-well case again in a user's image built on the plugin image
# (docker/Dockerfile --target plugin-from-debs, copied into Debian 12 with
# the lines of docs/guide/deploying.md), on the same network.
# The images have no NCCL of their own (no GPU, Debian's CPU PyTorch at most):
# the tests' stand-in libnccl.so.2 (ncclGetVersion only) is mounted and
# passed with --nccl, playing NCCL 2.27.5, the default CUDA base's.
#
#   all well                   exit 0, "reducers: WILL be used"
#   a wrong token              exit 1, the reducer and the token named
#   NCCL_COLLNET_ENABLE=0      exit 1, the variable and its fix named
#   an unreachable reducer     exit 1, its address named (reducer-1 stopped,
#                              and a port nobody listens on)
#
#   doctor_image_test.sh PACKAGE_DIR STAND_IN_NCCL SCRATCH_DIR
# Exit 77 with the reason where containers cannot run here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
debs=$(cd "$1" && pwd) stand_in=$2 scratch=$3
# shellcheck source=tests/support/containers.sh
source "$here/../support/containers.sh"

project=rs-doctor-test
training_image=localhost/rs-test/training-doctor:latest
user_image=localhost/rs-test/plugin-doctor:latest
token=doctor-image-test-$$
override=$scratch/compose.override.yaml
compose=(docker-compose -p "$project" -f "$root/docker/compose.yaml" -f "$override")

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
indent() { sed 's/^/  /'; }

ls "$debs"/libnccl-net-reducer_*.deb "$debs"/reduction-server_*.deb >/dev/null ||
  fail "no .deb in $debs (the packages_build test makes them)"
[ -f "$stand_in" ] || fail "no stand-in NCCL at $stand_in"
[ -f /usr/share/doc/libssl-dev/copyright ] || fail "no /usr/share/doc/libssl-dev/copyright (libssl-dev: the plugin image holds it)"
rs_ct_init "$scratch"

cleanup() {
  set +e
  podman rmi -f "$user_image" >/dev/null 2>&1
  if [ -n "$RS_CT_SERVICE_PID" ]; then
    "${compose[@]}" down -t 5 >"$scratch/down.log" 2>&1
    rs_ct_service_stop
  fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# --- images -----------------------------------------------------------------
rs_ct_base_image
context=$scratch/debs-context
rm -rf "$context" && mkdir -p "$context"
cp "$debs"/*.deb "$root/trainer/torch_ddp.py" "$context/"
build() { rs_image_build "$scratch" "$@" || fail "building $1 failed"; }
start=$(date +%s.%N)
build reduction-server/reducer:latest -f "$root/docker/Dockerfile" --target reducer-from-debs "$context"
# What `docker compose build` makes of compose.yaml's worker (base
# debian:bookworm-slim), from the packages; rs-train is not needed here.
build "$training_image" -f "$root/docker/Dockerfile" --target training-from-debs \
  --build-arg BASE_IMAGE=debian:bookworm-slim --build-arg RS_TRAIN=0 "$context"

# A user's own image with the plugin image's files, as docs/guide/deploying.md
# ("Images") gives the lines for NGC's and Vertex AI's images.
plugin_context=$scratch/plugin-context
rm -rf "$plugin_context" && mkdir -p "$plugin_context"
cp "$debs"/libnccl-net-reducer_*.deb "$root/deploy/vertex/rs-launch" "$plugin_context/"
cp /usr/share/doc/libssl-dev/copyright "$plugin_context/openssl-copyright"
build localhost/rs-test/plugin:latest -f "$root/docker/Dockerfile" --target plugin-from-debs "$plugin_context"
build "$user_image" -f - "$plugin_context" <<DOCKERFILE
FROM debian:bookworm-slim
COPY --from=localhost/rs-test/plugin:latest /opt/reducer /opt/reducer
ENV LD_LIBRARY_PATH=/opt/reducer/lib\${LD_LIBRARY_PATH:+:\${LD_LIBRARY_PATH}} \\
    PATH=/opt/reducer/bin:\${PATH} \\
    NCCL_NET_PLUGIN=reducer \\
    NCCL_NET_PLUGIN_REF_COUNT=1 \\
    NCCL_COLLNET_ENABLE=1
DOCKERFILE

podman run --rm --network none "$training_image" sh -c 'command -v reducer-doctor' >"$scratch/which.txt" 2>&1 ||
  { cat "$scratch/which.txt" >&2; fail "reducer-doctor is not on PATH in the training image"; }
[ "$(cat "$scratch/which.txt")" = /usr/bin/reducer-doctor ] ||
  fail "reducer-doctor resolves to '$(cat "$scratch/which.txt")', not /usr/bin/reducer-doctor (the plugin's package)"

# --- the cluster -----------------------------------------------------------
mkdir -p "$scratch/nccl"
cp "$stand_in" "$scratch/nccl/libnccl.so.2"
# worker-0 as compose.yaml defines it (its environment, hosts and address),
# in the image built above, waiting instead of training, with the stand-in
# NCCL where --nccl can find it. The doctor runs in it as a user would run it
# in their job's container (`docker compose exec worker-0 reducer-doctor`;
# podman exec here: docker-compose v1's run and exec stumble over podman's
# API).
cat >"$override" <<YAML
services:
  worker-0:
    image: $training_image
    entrypoint: ["sleep", "600"]
    volumes: ["$scratch/nccl:/opt/nccl-stand-in:ro"]
YAML
export REDUCER_JOB_TOKEN=$token
rs_ct_service_start
"${compose[@]}" down -t 5 >/dev/null 2>&1 || true  # what an interrupted run left
echo "==> docker-compose up: reducer-0, reducer-1, worker-0"
# worker-0 waits for the reducers' health checks (rs_ct_run_health_checks says why).
rs_ct_run_health_checks "$project" &
health_pid=$!
timeout 180 "${compose[@]}" up -d --no-build reducer-0 reducer-1 worker-0 >"$scratch/up.log" 2>&1 ||
  { cat "$scratch/up.log" >&2; fail "docker-compose up failed"; }
wait "$health_pid" || fail "the reducers' health checks did not pass"
worker=${project}_worker-0_1

# doctor NAME [podman exec -e options...]: reducer-doctor in worker-0, its
# report in $scratch/NAME.txt and its exit status in $code.
code=
doctor() {
  local name=$1
  shift
  code=0
  timeout 60 podman exec -e RS_STAND_IN_NCCL_VERSION=22705 "$@" "$worker" \
    reducer-doctor --nccl /opt/nccl-stand-in/libnccl.so.2 >"$scratch/$name.txt" 2>&1 || code=$?
  echo "==> $name: exit $code"
  indent <"$scratch/$name.txt"
}
expect() {  # expect NAME CODE TEXT...: the exit status and each line of text
  local name=$1 want=$2 text
  shift 2
  [ "$code" = "$want" ] || fail "$name: reducer-doctor exited $code, not $want"
  for text in "$@"; do
    grep -F -- "$text" "$scratch/$name.txt" >/dev/null || fail "$name: the report lacks: $text"
  done
}

doctor all-well
expect all-well 0 "OK    NCCL: NCCL 2.27.5" "OK    plugin: " \
  "OK    reducer reducer-0:7450: answers and accepts the job token" \
  "OK    reducer reducer-1:7450: answers and accepts the job token" "reducers: WILL be used"
grep -F FAIL "$scratch/all-well.txt" >/dev/null && fail "all-well: a check failed"

doctor wrong-token -e REDUCER_JOB_TOKEN=another-job
expect wrong-token 1 "FAIL  reducer reducer-0:7450: refused: job token does not match" \
  "fix: REDUCER_JOB_TOKEN_FILE (or REDUCER_JOB_TOKEN) must hold the same token" \
  "reducers: will NOT be used: reducer reducer-0:7450"

doctor collnet-off -e NCCL_COLLNET_ENABLE=0
expect collnet-off 1 "FAIL  CollNet: NCCL_COLLNET_ENABLE=0" "fix: export NCCL_COLLNET_ENABLE=1" \
  "reducers: will NOT be used: CollNet:"

# A port nobody listens on: refused at once.
doctor no-listener -e REDUCER_ADDRS=reducer-0:7450,reducer-1:7459
expect no-listener 1 "OK    reducer reducer-0:7450" "FAIL  reducer reducer-1:7459: connection refused" \
  "fix: start reducerd there, or correct REDUCER_ADDRS" "reducers: will NOT be used: reducer reducer-1:7459"

# The same job in a user's image built on the plugin image, on the cluster's
# network with compose.yaml's hosts: the doctor from /opt/reducer/bin, the
# plugin from /opt/reducer/lib.
code=0
podman run --rm --network "${project}_cluster" --add-host reducer-0:172.28.45.10 --add-host reducer-1:172.28.45.11 \
  -e REDUCER_ADDRS=reducer-0:7450,reducer-1:7450 -e REDUCER_JOB_TOKEN="$token" -e RS_STAND_IN_NCCL_VERSION=22705 \
  -v "$scratch/nccl:/opt/nccl-stand-in:ro" "$user_image" \
  reducer-doctor --nccl /opt/nccl-stand-in/libnccl.so.2 >"$scratch/plugin-image.txt" 2>&1 || code=$?
echo "==> plugin-image (all well, Debian 12 with /opt/reducer): exit $code"
indent <"$scratch/plugin-image.txt"
expect plugin-image 0 "OK    plugin: /opt/reducer/lib/libnccl-net-reducer.so" \
  "OK    reducer reducer-0:7450: answers and accepts the job token" \
  "OK    reducer reducer-1:7450: answers and accepts the job token" "reducers: WILL be used"

# A reducer that is down: its container stopped, its address silent.
podman stop -t 5 "${project}_reducer-1_1" >"$scratch/stop.log" 2>&1 || { cat "$scratch/stop.log" >&2; fail "stopping reducer-1 failed"; }
doctor reducer-down
expect reducer-down 1 "OK    reducer reducer-0:7450" "FAIL  reducer reducer-1:7450: " \
  "reducers: will NOT be used: reducer reducer-1:7450"

end=$(date +%s.%N)
echo "doctor in the compose worker image and a plugin-image user image: 6 verdicts right in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s (images included)"
echo "doctor image test passed"
