#!/usr/bin/env bash
# The images and the local cluster, for real: builds the reducer, training and
# Prometheus images of docker/ (the first two from the .deb packages this
# build made: --target *-from-debs; the training image on a Debian base with
# python3-torch in place of the CUDA base), checks each image on its own (the
# reducer as Vertex AI's worker pool 2 with no arguments, its health check,
# its user; the training image's plugin and NCCL settings), then brings
# docker/compose.yaml up (2 reducers, 4 rs-train workers, Prometheus), waits
# for every worker to exit 0 with its checks passed, checks that Prometheus
# scraped the reducers' metrics (every metric the Grafana dashboard draws),
# and tears everything down. Prints the image sizes and the cluster's wall
# time.
#
#   compose_cluster_test.sh PACKAGE_DIR SCRATCH_DIR
# Settings: TRAIN_STEPS (40), RUN_TIMEOUT (600 s for the training).
# Exit 77 with the reason where containers cannot run here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
debs=$(cd "$1" && pwd)
scratch=$2
TRAIN_STEPS=${TRAIN_STEPS:-40}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
# shellcheck source=tests/support/containers.sh
source "$here/../support/containers.sh"

project=rs-compose-test
compose=(docker-compose -p "$project" -f "$root/docker/compose.yaml")
vertex_ct=rs-vertex-reducer-test

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

ls "$debs"/*.deb >/dev/null || fail "no .deb in $debs (the packages_build test makes them)"
rs_ct_init "$scratch"

cleanup() {
  set +e
  podman rm -f -t 0 "$vertex_ct" >/dev/null 2>&1
  if [ -n "$RS_CT_SERVICE_PID" ]; then
    "${compose[@]}" down -t 5 >"$scratch/down.log" 2>&1
    rs_ct_service_stop
  fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT  # run cleanup on CTest's timeout or Ctrl-C too

# --- images -----------------------------------------------------------------
rs_ct_base_image
context=$scratch/debs-context
rm -rf "$context" && mkdir -p "$context"
cp "$debs"/*.deb "$root/trainer/torch_ddp.py" "$context/"

build() { rs_image_build "$scratch" "$@" || fail "building $1 failed"; }
# The CUDA base stands in as Debian 12 with Debian's PyTorch (CPU), so the
# image is built and checked the way a user's is, without a GPU or registry.
build localhost/rs-test/torch-base:bookworm -f - "$scratch" <<'DOCKERFILE'
FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch \
 && rm -rf /var/lib/apt/lists/*
DOCKERFILE
build reduction-server/reducer:latest -f "$root/docker/Dockerfile" --target reducer-from-debs "$context"
build reduction-server/training:cpu -f "$root/docker/Dockerfile" --target training-from-debs \
  --build-arg BASE_IMAGE=localhost/rs-test/torch-base:bookworm --build-arg RS_TRAIN=1 "$context"
build reduction-server/prometheus:latest "$root/docker/prometheus"

image_mb() { podman image inspect --format '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1 / 1e6}'; }
sizes="reducer $(image_mb reduction-server/reducer:latest), training (python3-torch base) $(image_mb reduction-server/training:cpu)"
sizes+=", prometheus $(image_mb reduction-server/prometheus:latest), debian:bookworm-slim $(image_mb docker.io/library/debian:bookworm-slim)"
echo "image sizes: $sizes"

# --- the reducer image as Vertex AI's worker pool 2: no arguments ------------
echo "==> reducer image as Vertex AI worker pool 2 (CLUSTER_SPEC only)"
[ "$(podman image inspect --format '{{.Config.User}}' reduction-server/reducer:latest)" = "10001:10001" ] ||
  fail "the reducer image does not run as the numeric non-root user 10001"
spec='{"cluster": {"workerpool0": ["cmle-training-workerpool0-5d1e-0:2222"],
  "workerpool1": ["cmle-training-workerpool1-5d1e-0:2222"],
  "workerpool2": ["cmle-training-workerpool2-5d1e-0:2222", "cmle-training-workerpool2-5d1e-1:2222"],
  "workerpool3": ["cmle-training-workerpool3-5d1e-0:2222"]},
  "environment": "cloud", "task": {"type": "workerpool2", "index": 1, "trial": ""}, "job": {}}'
# (podman's stderr: no systemd here to schedule health checks; run below.)
podman run -d --name "$vertex_ct" --network none -e CLUSTER_SPEC="$spec" -e REDUCER_JOB_TOKEN=vertex-test \
  reduction-server/reducer:latest >/dev/null 2>>"$scratch/podman.log"
listening=
for _ in $(seq 100); do
  if podman logs "$vertex_ct" 2>&1 | grep -q '^reducerd listening on'; then listening=1; break; fi
  [ "$(podman inspect --format '{{.State.Running}}' "$vertex_ct")" = true ] || break
  sleep 0.1
done
podman logs "$vertex_ct" >"$scratch/vertex-reducer.log" 2>&1
[ -n "$listening" ] || { cat "$scratch/vertex-reducer.log" >&2; fail "the reducer did not start with CLUSTER_SPEC alone"; }
grep -q '^reducerd listening on 0.0.0.0:2222$' "$scratch/vertex-reducer.log" ||
  { cat "$scratch/vertex-reducer.log" >&2; fail "the reducer does not listen on its CLUSTER_SPEC entry's port 2222"; }
grep -q 'listening address from CLUSTER_SPEC workerpool2\[1\]' "$scratch/vertex-reducer.log" ||
  fail "the reducer does not say where its address came from"
# The image's HEALTHCHECK (reducerctl health through grpc.health.v1), run now.
podman healthcheck run "$vertex_ct" 2>>"$scratch/podman.log" || fail "the reducer image's health check does not pass"
podman stop -t 40 "$vertex_ct" >/dev/null 2>>"$scratch/podman.log"
[ "$(podman inspect --format '{{.State.ExitCode}}' "$vertex_ct")" = 0 ] ||
  fail "the reducer did not drain and exit 0 on docker stop"
podman rm "$vertex_ct" >/dev/null 2>>"$scratch/podman.log"

# --- the training image: the plugin where NCCL looks, NCCL set to use it -----
echo "==> training image: plugin, NCCL settings, PyTorch, rs-train"
podman run --rm --network none reduction-server/training:cpu sh -euc '
  [ "$NCCL_NET_PLUGIN" = reducer ] && [ "$NCCL_COLLNET_ENABLE" = 1 ] && [ "$NCCL_NET_PLUGIN_REF_COUNT" = 1 ]
  dpkg-query -W libnccl-net-reducer reduction-server-trainer
  python3 -c "
import ctypes, torch
lib = ctypes.CDLL(\"libnccl-net-reducer.so\", mode=ctypes.RTLD_LOCAL)
for table in (\"ncclNetPlugin_v11\", \"ncclCollNetPlugin_v11\", \"ncclTunerPlugin_v5\"):
    getattr(lib, table)
print(\"torch\", torch.__version__, \"and the plugin load in one process\")"
  rs-train --help >/dev/null
  # The DDP example is there and starts under PyTorch. (Not run here: under
  # Debian'"'"'s torch 1.13 its gloo process group hung at exit once in three
  # runs; tests/trainer runs it on the host.)
  python3 /opt/reduction-server/examples/torch_ddp.py --help >/dev/null' ||
  fail "the training image is not set up for the plugin"

# --- the compose cluster ----------------------------------------------------
rs_ct_service_start
"${compose[@]}" down -t 5 >/dev/null 2>&1 || true  # what an interrupted run left
prometheus_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export PROMETHEUS_PORT=$prometheus_port TRAIN_STEPS
echo "==> docker-compose up: 2 reducers, 4 workers x $TRAIN_STEPS steps, Prometheus on 127.0.0.1:$prometheus_port"
start=$(date +%s.%N)
# The workers wait for the reducers' health checks (rs_ct_run_health_checks says why).
rs_ct_run_health_checks "$project" &
health_pid=$!
timeout 180 "${compose[@]}" up -d --no-build >"$scratch/up.log" 2>&1 || { cat "$scratch/up.log" >&2; fail "docker-compose up failed"; }
wait "$health_pid" || fail "the reducers' health checks did not pass"
workers=()
for i in 0 1 2 3; do workers+=("$("${compose[@]}" ps -q "worker-$i")"); done
if ! timeout "$RUN_TIMEOUT" podman wait "${workers[@]}" >/dev/null; then
  "${compose[@]}" logs --no-color >"$scratch/compose.log" 2>&1
  fail "the workers did not finish within $RUN_TIMEOUT s (logs: $scratch/compose.log)"
fi
end=$(date +%s.%N)
"${compose[@]}" logs --no-color >"$scratch/compose.log" 2>&1
failed=0
for i in 0 1 2 3; do
  code=$(podman inspect --format '{{.State.ExitCode}}' "${workers[$i]}")
  if [ "$code" != 0 ]; then echo "worker-$i exited $code" >&2; failed=1; fi
done
[ "$failed" = 0 ] || { grep -E 'worker-[0-3]' "$scratch/compose.log" | tail -40 >&2; fail "a worker failed"; }
grep -q 'worker-0.*every step matched the single-process reference bit for bit' "$scratch/compose.log" ||
  fail "worker-0 did not report its --verify check passed (logs: $scratch/compose.log)"
grep -E 'worker-0.*(done:|checks:)' "$scratch/compose.log" | sed 's/^[^|]*| //'

# --- Prometheus scraped the reducers ----------------------------------------
query() {  # query PROMQL -> the API's JSON answer
  curl -sf --get --data-urlencode "query=$1" "http://127.0.0.1:$prometheus_port/api/v1/query"
}
echo "==> Prometheus: reducer metrics of both reducers"
scraped=
for _ in $(seq 60); do
  # Both reducers, each with the training's bytes counted (scraped every 2 s).
  if query 'reducer_bytes_received_total > 0' 2>/dev/null |
    python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; sys.exit(len({x["metric"]["instance"] for x in r}) != 2)'; then
    scraped=1
    break
  fi
  sleep 1
done
[ -n "$scraped" ] || fail "Prometheus has no reducer_bytes_received_total > 0 from both reducers"
query 'reducer_bytes_received_total' | python3 -c '
import json, sys
for r in json.load(sys.stdin)["data"]["result"]:
    print("  %s reducer_bytes_received_total %s" % (r["metric"]["instance"], r["value"][1]))'
# Every metric the dashboard draws is one reducerd exports.
curl -sf "http://127.0.0.1:$prometheus_port/api/v1/label/__name__/values" >"$scratch/names.json"
python3 - "$root/docker/grafana/dashboards/reduction-server.json" "$scratch/names.json" <<'PY' || fail "the dashboard draws metrics Prometheus does not have"
import json, re, sys
dash = json.load(open(sys.argv[1]))
names = set(json.load(open(sys.argv[2]))["data"])
used = set()
for panel in dash["panels"]:
    for target in panel["targets"]:
        used |= set(re.findall(r"\b(reducer_[a-z_]+)", target["expr"]))
missing = sorted(used - names)
print("  dashboard: %d metrics, all scraped" % len(used) if not missing else "  not scraped: %s" % missing)
sys.exit(1 if missing else 0)
PY

wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
echo "compose cluster: up to every worker exited 0 in ${wall} s ($TRAIN_STEPS steps, --verify)"
echo "image sizes: $sizes"
echo "compose cluster test passed"
