#!/usr/bin/env bash
# The plugin under real NCCL on one GPU: 2 reducers and 4 PyTorch ranks on
# the same GPU, each with its own NCCL_HOSTID so NCCL treats them as 4 nodes
# and sends all inter-node traffic through the plugin, with CollNet Chain
# forced. All-reduces 4 KiB to 256 MiB in float32 and bfloat16, checks every
# element, then shows from NCCL's own log that CollNet was used and from the
# reducers' logs how many bytes went through them.
#
#   tests/gpu/run_torch_allreduce.sh [BUILD_DIR]
#
# BUILD_DIR (default: build) must hold server/reducerd and
# nccl_plugin/libnccl-net-reducer.so; they are built with cmake if missing
# and cmake is there. On the lent GPU machine (no package registry) build
# here and carry the build folder. PYTHON (default /opt/torch/.venv/bin/python,
# else python3) must have PyTorch with CUDA. Logs go to $OUT (or a temp dir).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
python=${PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$python" ] || python=python3
logs=${OUT:-$(mktemp -d /tmp/rs-gpu-XXXXXX)}
mkdir -p "$logs"
world=${WORLD:-4}

reducerd=$build/server/reducerd
plugin=$build/nccl_plugin/libnccl-net-reducer.so
if [ ! -x "$reducerd" ] || [ ! -f "$plugin" ]; then
  command -v cmake >/dev/null || { echo "no $reducerd or $plugin, and no cmake to build them" >&2; exit 1; }
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRS_BUILD_TESTS=OFF -DRS_BUILD_BENCH=OFF >/dev/null
  ninja -C "$build" reducerd nccl_net_reducer
fi
echo "==> $("$python" -c 'import torch; print("torch", torch.__version__, "NCCL", torch.cuda.nccl.version(), torch.cuda.get_device_name(0))')"

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
    --io-threads 4 --op-timeout 60s >"$logs/reducer$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1; do
  for _ in $(seq 100); do [ -s "$logs/reducer$i.port" ] && break; sleep 0.1; done
  [ -s "$logs/reducer$i.port" ] || { echo "reducer $i did not start:"; cat "$logs/reducer$i.log"; exit 1; }
  addrs+=${addrs:+,}127.0.0.1:$(cat "$logs/reducer$i.port")
done
echo "==> reducers at $addrs; $world ranks on one GPU, one NCCL node each"

export MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + RANDOM % 20000)) WORLD_SIZE=$world
export NCCL_NET_PLUGIN=$plugin NCCL_COLLNET_ENABLE=1 NCCL_ALGO=allreduce:collnetchain
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,COLL NCCL_SOCKET_IFNAME=lo
export REDUCER_ADDRS=$addrs REDUCER_JOB_TOKEN=$token REDUCER_SOCKET_IFNAME=lo
ranks=()
for r in $(seq 0 $((world - 1))); do
  RANK=$r NCCL_HOSTID=node$r CUDA_VISIBLE_DEVICES=0 timeout 900 "$python" "$root/tests/gpu/torch_allreduce.py" \
    >"$logs/rank$r.log" 2>&1 &
  ranks+=($!)
done
status=0
for p in "${ranks[@]}"; do wait "$p" || status=1; done
grep -v NCCL "$logs/rank0.log" || true

echo "==> what NCCL says (rank 0):"
grep -m1 "Using network" "$logs/rank0.log" || echo "   (no 'Using network' line)"
grep -m3 "NET/Reducer" "$logs/rank0.log" || echo "   (no line from the plugin)"
collnet_lines=$(grep -c -i "collnet" "$logs/rank0.log" || true)
echo "   lines mentioning CollNet: $collnet_lines"
grep -m3 -i "CollNetChain\|collnet.*connected\|CollNet channels" "$logs/rank0.log" || true

for i in 0 1; do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
wait "${pids[@]}" 2>/dev/null || true
pids=()
echo "==> what the reducers say:"
grep -h "session .* ended\|session .* failed" "$logs"/reducer*.log || echo "   (no session ended: CollNet was not used)"
if [ $status -ne 0 ]; then
  echo "FAILED: a rank failed; logs in $logs" >&2
  tail -20 "$logs"/rank*.log >&2
  exit 1
fi
grep -qE "ended: [1-9][0-9]* operations, [1-9][0-9]* pieces" "$logs"/reducer*.log || { echo "FAILED: no bytes went through the reducers" >&2; exit 1; }
echo "OK: every result verified; logs in $logs"
