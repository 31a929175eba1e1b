#!/usr/bin/env bash
# The plugin under real NCCL on one GPU: REDUCERS reducers and WORLD PyTorch
# ranks on the same GPU, each with its own NCCL_HOSTID so NCCL treats them as
# WORLD nodes and sends all inter-node traffic through the plugin. Only the
# settings a user sets (no NCCL_ALGO): the plugin's tuner chooses between the
# reducers and NCCL's own algorithms. Exercises the point-to-point transport
# (broadcast, all_gather), all-reduces 4 KiB to 256 MiB in float32 and
# bfloat16 with every element checked, then destroys the process group and
# creates a new one, which must still use the plugin and the reducers.
# Shows NCCL's own lines about the network, CollNet and the tuner, and the
# reducers' session summaries.
#
#   tests/gpu/run_torch_allreduce.sh [BUILD_DIR]
#
# BUILD_DIR (default: build) must hold server/reducerd and
# nccl_plugin/libnccl-net-reducer.so; they are built with cmake if missing
# and cmake is there. On the lent GPU machine (no package registry) build
# here and carry the build folder. PYTHON (default /opt/torch/.venv/bin/python,
# else python3) must have PyTorch with CUDA. Logs go to $OUT (or a temp dir).
#
# The ranks take turns on one GPU: the run checks behaviour and results, it
# gives no meaningful timings.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
python=${PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$python" ] || python=python3
logs=${OUT:-$(mktemp -d /tmp/rs-gpu-XXXXXX)}
mkdir -p "$logs"
world=${WORLD:-4}
# As many reducers as nodes (docs/performance.md): the tuner then sends every
# all-reduce size to the reducers, so the check sees them used throughout.
nreducers=${REDUCERS:-$world}

reducerd=$build/server/reducerd
plugin=$build/nccl_plugin/libnccl-net-reducer.so
if [ ! -x "$reducerd" ] || [ ! -f "$plugin" ]; then
  command -v cmake >/dev/null || { echo "no $reducerd or $plugin, and no cmake to build them" >&2; exit 1; }
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRS_BUILD_TESTS=OFF -DRS_BUILD_BENCH=OFF >/dev/null
  ninja -C "$build" reducerd nccl_net_reducer
fi
echo "==> $("$python" -c 'import torch; print("torch", torch.__version__, "NCCL", torch.cuda.nccl.version(), torch.cuda.get_device_name(0))')"
echo "    ($world ranks time-sliced on one GPU: results are checked, timings would mean nothing)"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
addrs=
for i in $(seq 0 $((nreducers - 1))); do
  REDUCER_JOB_TOKEN=$token "$reducerd" --listen 127.0.0.1:0 --port-file "$logs/reducer$i.port" \
    --io-threads 2 --op-timeout 60s >"$logs/reducer$i.log" 2>&1 &
  pids+=($!)
done
for i in $(seq 0 $((nreducers - 1))); do
  for _ in $(seq 100); do [ -s "$logs/reducer$i.port" ] && break; sleep 0.1; done
  [ -s "$logs/reducer$i.port" ] || { echo "reducer $i did not start:"; cat "$logs/reducer$i.log"; exit 1; }
  addrs+=${addrs:+,}127.0.0.1:$(cat "$logs/reducer$i.port")
done
echo "==> $nreducers reducers at $addrs; $world ranks on one GPU, one NCCL node each"

base_port=$((20000 + RANDOM % 20000))
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$base_port MASTER_PORT2=$((base_port + 1)) WORLD_SIZE=$world
# What a user sets (README, "Loading it"), nothing more: no NCCL_ALGO.
export NCCL_NET_PLUGIN=$plugin NCCL_NET_PLUGIN_REF_COUNT=1 NCCL_COLLNET_ENABLE=1
export REDUCER_ADDRS=$addrs REDUCER_JOB_TOKEN=$token
# For this check: logs, and loopback for every socket.
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV NCCL_SOCKET_IFNAME=lo REDUCER_SOCKET_IFNAME=lo
unset NCCL_ALGO NCCL_PROTO NCCL_TUNER_PLUGIN
ranks=()
for r in $(seq 0 $((world - 1))); do
  RANK=$r NCCL_HOSTID=node$r CUDA_VISIBLE_DEVICES=0 timeout 900 "$python" "$root/tests/gpu/torch_allreduce.py" \
    >"$logs/rank$r.log" 2>&1 &
  ranks+=($!)
done
status=0
for p in "${ranks[@]}"; do wait "$p" || status=1; done
grep -v "NCCL INFO\|NCCL WARN" "$logs/rank0.log" || true

echo "==> what NCCL says (rank 0):"
grep -m2 "NET/Plugin: Loaded" "$logs/rank0.log" || echo "   (no 'Loaded ... plugin' line)"
grep "Using network" "$logs/rank0.log" || echo "   (no 'Using network' line)"
grep -m1 "NET/Reducer : point-to-point" "$logs/rank0.log" || echo "   (no point-to-point line from the plugin)"
grep -m1 "NET/Reducer : CollNet:" "$logs/rank0.log" || echo "   (no CollNet line from the plugin)"
grep "NET/Reducer : tuner" "$logs/rank0.log" || echo "   (no tuner line: NCCL did not load the plugin's tuner)"
grep "NET/Reducer : CollNet connected" "$logs/rank0.log" || echo "   (CollNet never connected)"
grep -m3 -i "collnet.*\(fail\|cannot\|disabl\)" "$logs/rank0.log" || true
grep -h "WARN" "$logs"/rank*.log | sort | uniq -c | head -20 || true

for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
wait "${pids[@]}" 2>/dev/null || true
pids=()
echo "==> what the reducers say:"
grep -h "session .* ended\|session .* failed" "$logs"/reducer*.log || echo "   (no session ended: CollNet was not used)"

fail() { echo "FAILED: $*; logs in $logs" >&2; exit 1; }
if [ $status -ne 0 ]; then
  tail -20 "$logs"/rank*.log >&2
  fail "a rank failed"
fi
# Both process groups ran on the plugin: NCCL names the network per communicator.
[ "$(grep -c "Using network Reducer" "$logs/rank0.log")" -ge 2 ] ||
  fail "the second process group did not use the plugin (NCCL_NET_PLUGIN_REF_COUNT not honoured?)"
grep -q "NET/Reducer : tuner: " "$logs/rank0.log" || fail "NCCL did not load the plugin's tuner"
# Both process groups' all-reduces went through every reducer: one session each.
for i in $(seq 0 $((nreducers - 1))); do
  n=$(grep -cE "session [0-9a-f]+ ended: [1-9][0-9]* operations, [1-9][0-9]* pieces" "$logs/reducer$i.log" || true)
  [ "$n" -ge 2 ] || fail "reducer $i ended $n session(s) that moved data, expected one per process group (2)"
done
echo "OK: point-to-point and CollNet under NCCL, every result verified, the plugin survived re-initialisation; logs in $logs"
