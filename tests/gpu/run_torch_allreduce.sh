#!/usr/bin/env bash
# The plugin under real NCCL with PyTorch on one GPU (a step of run_all.sh,
# also runnable alone): REDUCERS reducers and WORLD ranks on the same GPU,
# each with its own NCCL_HOSTID so NCCL treats them as WORLD nodes and sends
# all inter-node traffic through the plugin. Only what a user sets, no
# NCCL_ALGO: the plugin's tuner chooses between the reducers and NCCL's own
# algorithms. torch_allreduce.py broadcasts and all-gathers (the plugin's
# point-to-point transport), all-reduces MIN_BYTES to MAX_BYTES in float32
# and bfloat16 checking every element, then destroys the process group and
# creates a new one, which must still use the plugin and the reducers.
#
#   tests/gpu/run_torch_allreduce.sh [plugin|preload]
#
# plugin (default): NCCL_NET_PLUGIN=<plugin>, NCCL_COLLNET_ENABLE=1,
#   NCCL_NET_PLUGIN_REF_COUNT=1, REDUCER_ADDRS and the job token.
# preload: LD_PRELOAD=<plugin>, REDUCER_ADDRS and the token, nothing else:
#   the plugin, once preloaded, fills in the NCCL variables itself.
# Programs: see gpu_env.sh. Logs go to LOGS, else OUT, else a temp dir.
# The ranks take turns on one GPU: results are checked, timings would mean
# nothing and none are printed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"

mode=${1:-plugin}
case $mode in plugin | preload) ;; *) echo "usage: $0 [plugin|preload]" >&2; exit 64 ;; esac
logs=$(rs_logs_dir)
world=${WORLD:-4}
# As many reducers as nodes (docs/performance.md): the tuner then sends every
# all-reduce size to the reducers, so the check sees them used throughout.
nreducers=${REDUCERS:-$world}
rs_need "$RS_REDUCERD" "$RS_PLUGIN"

rs_start_reducers "$nreducers" "$logs" --io-threads 2 --op-timeout 60s
echo "$nreducers reducers at $RS_ADDRS; $world ranks on one GPU, one NCCL node each; $mode; logs in $logs"

base_port=$((20000 + RANDOM % 20000))
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$base_port MASTER_PORT2=$((base_port + 1)) WORLD_SIZE=$world
export REDUCER_ADDRS=$RS_ADDRS REDUCER_JOB_TOKEN=$RS_TOKEN
# For this check: NCCL's lines (TUNING: the algorithm of each collective,
# rank 0), and loopback for every socket.
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV,TUNING NCCL_SOCKET_IFNAME=lo REDUCER_SOCKET_IFNAME=lo
unset NCCL_ALGO NCCL_PROTO NCCL_TUNER_PLUGIN LD_PRELOAD
preload=()
if [ "$mode" = plugin ]; then
  # What a user sets (docs/guide/frameworks.md, "Loading the plugin"), nothing more.
  export NCCL_NET_PLUGIN=$RS_PLUGIN NCCL_NET_PLUGIN_REF_COUNT=1 NCCL_COLLNET_ENABLE=1
else
  unset NCCL_NET_PLUGIN NCCL_NET_PLUGIN_REF_COUNT NCCL_COLLNET_ENABLE
  preload=(env "LD_PRELOAD=$RS_PLUGIN")  # the rank only, not this shell's tools
fi
for r in $(seq 0 $((world - 1))); do
  RANK=$r NCCL_HOSTID=node$r CUDA_VISIBLE_DEVICES=0 rs_launch "$logs/rank$r.log" \
    "${preload[@]}" "$PYTHON" "$rs_gpu_dir/torch_allreduce.py"
done
status=0
rs_wait_ranks || status=1
grep -v "NCCL INFO\|NCCL WARN\|^RS_CHECK" "$logs/rank0.log" || true

echo "--- what NCCL says (rank 0):"
grep "NET/Plugin: Loaded\|TUNER/Plugin\|Using network\|NET/Reducer :\|Connected CollNet\|Connected Collnet" \
  "$logs/rank0.log" | sed 's/^.*NCCL \(INFO\|WARN\) //' || true
grep -h "NCCL WARN" "$logs"/rank*.log | sed 's/^.*NCCL WARN //' | sort | uniq -c | head -20 || true

rs_cleanup  # the reducers log each session's end once its ranks have gone
echo "--- what the reducers say:"
grep -h "session .* ended\|session .* failed" "$logs"/reducer*.log || echo "(no session ended: CollNet was not used)"

[ $status -eq 0 ] || rs_fail "$(rs_rank_failure "$RS_FAILED_LOG")"
# Both process groups ran on the plugin: NCCL names the network per communicator.
n=$(grep -c "Using network Reducer" "$logs/rank0.log" || true)
if [ "$mode" = preload ]; then
  [ "$n" -ge 2 ] || rs_fail "NCCL used the plugin in $n of 2 process groups with only LD_PRELOAD set ('Using network Reducer' lines)"
else
  [ "$n" -ge 2 ] || rs_fail "the second process group did not use the plugin (NCCL_NET_PLUGIN_REF_COUNT not honoured?)"
fi
grep -q "NET/Reducer : tuner: " "$logs/rank0.log" || rs_fail "NCCL did not load the plugin's tuner"
grep -q "NET/Reducer : CollNet connected" "$logs/rank0.log" || rs_fail "CollNet never connected (no 'NET/Reducer : CollNet connected' line)"
# Both process groups' all-reduces went through every reducer: one session each.
for i in $(seq 0 $((nreducers - 1))); do
  n=$(grep -cE "session [0-9a-f]+ ended: [1-9][0-9]* operations, [1-9][0-9]* pieces" "$logs/reducer$i.log" || true)
  [ "$n" -ge 2 ] || rs_fail "reducer $i ended $n session(s) that moved data, expected one per process group (2)"
done
wire=${REDUCER_WIRE_DTYPE:-off}
if [ "$wire" != off ]; then
  # The float32 all-reduces crossed the wire as $wire: every reducer says so when its sessions end.
  for i in $(seq 0 $((nreducers - 1))); do
    grep -q "float32 sums as $wire on the wire" "$logs/reducer$i.log" ||
      rs_fail "reducer $i never saw float32 sums as $wire on the wire (REDUCER_WIRE_DTYPE=$wire)"
  done
  echo "OK: $mode, float32 as $wire on the wire: point-to-point and CollNet under NCCL, every element right"
  exit 0
fi
echo "OK: $mode: point-to-point and CollNet under NCCL, every element right, the plugin survived a new process group"
