#!/usr/bin/env bash
# rs-train's GPU backend through the whole path on one GPU: 2 reducers and 4
# rs-train ranks on the same GPU, each with its own NCCL_HOSTID so that NCCL
# treats them as 4 nodes and sends all inter-node traffic through the
# reducer plugin, CollNet Chain forced. Trains in float32 and then with
# bfloat16 gradients; rs-train itself checks that the weights stay identical
# on every rank. Then shows from NCCL's log that CollNet was used, and from
# the reducers' logs how many bytes went through them.
#
#   tests/gpu/run_rs_train.sh [BUILD_DIR]
#
# BUILD_DIR (default: build) must hold server/reducerd, trainer/rs-train,
# trainer/librs-train-gpu.so and nccl_plugin/libnccl-net-reducer.so; they are
# built with cmake if missing and cmake is there. STEPS, WIDTH, BUCKET_MB and
# WORLD override the run's size. Logs go to $OUT (or a temp dir).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
logs=${OUT:-$(mktemp -d /tmp/rs-gpu-train-XXXXXX)}
mkdir -p "$logs"
world=${WORLD:-4}
steps=${STEPS:-50}
width=${WIDTH:-4096}
bucket_mb=${BUCKET_MB:-25}

reducerd=$build/server/reducerd
train=$build/trainer/rs-train
plugin=$build/nccl_plugin/libnccl-net-reducer.so
if [ ! -x "$reducerd" ] || [ ! -x "$train" ] || [ ! -f "$build/trainer/librs-train-gpu.so" ] || [ ! -f "$plugin" ]; then
  command -v cmake >/dev/null || { echo "missing binaries in $build and no cmake to build them" >&2; exit 1; }
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRS_BUILD_TESTS=OFF -DRS_BUILD_BENCH=OFF \
    -DRS_BUILD_GPU=ON >/dev/null
  ninja -C "$build" reducerd rs-train nccl_net_reducer
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
addrs=
for i in 0 1; do
  REDUCER_JOB_TOKEN=$token "$reducerd" --listen 127.0.0.1:0 --port-file "$logs/reducer$i.port" \
    --threads 4 --op-timeout 60s >"$logs/reducer$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1; do
  for _ in $(seq 100); do [ -s "$logs/reducer$i.port" ] && break; sleep 0.1; done
  [ -s "$logs/reducer$i.port" ] || { echo "reducer $i did not start:"; cat "$logs/reducer$i.log"; exit 1; }
  addrs+=${addrs:+,}127.0.0.1:$(cat "$logs/reducer$i.port")
done
echo "==> reducers at $addrs; $world rs-train ranks on one GPU, one NCCL node each"

export MASTER_ADDR=127.0.0.1 WORLD_SIZE=$world LOCAL_RANK=0 CUDA_VISIBLE_DEVICES=0
export NCCL_NET_PLUGIN=$plugin NCCL_COLLNET_ENABLE=1 NCCL_ALGO=allreduce:collnetchain
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,COLL NCCL_SOCKET_IFNAME=lo
export REDUCER_ADDRS=$addrs REDUCER_JOB_TOKEN=$token REDUCER_SOCKET_IFNAME=lo

status=0
for dtype in float32 bfloat16; do
  export MASTER_PORT=$((20000 + RANDOM % 20000))
  echo "==> --grad-dtype $dtype: $steps steps, width $width, buckets of $bucket_mb MiB"
  ranks=()
  for r in $(seq 0 $((world - 1))); do
    RANK=$r NCCL_HOSTID=node$r timeout 900 "$train" --backend gpu --steps "$steps" --width "$width" \
      --bucket-mb "$bucket_mb" --grad-dtype "$dtype" --log-every 10 --op-timeout 120s >"$logs/$dtype-rank$r.log" 2>&1 &
    ranks+=($!)
  done
  for p in "${ranks[@]}"; do wait "$p" || status=1; done
  grep -v -E "NCCL (INFO|WARN)" "$logs/$dtype-rank0.log" || true
done

echo "==> what NCCL says (rank 0, float32):"
grep -m1 "Using network" "$logs/float32-rank0.log" || echo "   (no 'Using network' line)"
grep -m3 "NET/Reducer" "$logs/float32-rank0.log" || echo "   (no line from the plugin)"
grep -m3 -i "CollNetChain\|collnet.*connected\|CollNet channels" "$logs/float32-rank0.log" || true

for i in 0 1; do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
wait "${pids[@]}" 2>/dev/null || true
pids=()
echo "==> what the reducers say:"
grep -h "session .* ended\|session .* failed" "$logs"/reducer*.log || echo "   (no session ended: CollNet was not used)"
if [ $status -ne 0 ]; then
  echo "FAILED: a rank failed; logs in $logs" >&2
  grep -h "rs-train: rank" "$logs"/*-rank*.log >&2 || tail -20 "$logs"/*-rank*.log >&2
  exit 1
fi
grep -qE "ended: [1-9][0-9]* operations, [1-9][0-9]* pieces" "$logs"/reducer*.log ||
  { echo "FAILED: no bytes went through the reducers" >&2; exit 1; }
echo "OK: trained through the reducers; weights identical on every rank; logs in $logs"
