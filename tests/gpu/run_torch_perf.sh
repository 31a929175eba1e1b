#!/usr/bin/env bash
# Transports compared under real NCCL with PyTorch on one GPU (a step of
# run_all.sh, also runnable alone): the same WORLD ranks all-reduce float32
# tensors of SIZES bytes through each configuration in turn:
#   socket        NCCL's own TCP transport, no plugin (NCCL_NET=Socket)
#   p2p           the plugin's point-to-point transport, CollNet off: NCCL's rings
#   collnet       the plugin with CollNet and REDUCERS reducers, the tuner choosing
#   collnet-1io   collnet with REDUCER_IO_THREADS=1, the client's default when
#                 the first H100 run took CollNet at 2.2 x the plugin's rings
#                 (issue 42): against collnet (the automatic choice, several
#                 on this machine's cores), it shows what that one thread cost
#   collnet-bf16  the same with REDUCER_WIRE_DTYPE=bfloat16
#   collnet-nofailover  collnet with REDUCER_FAILOVER=0: with failover,
#                 iallreduce copies NCCL's input on NCCL's proxy thread before
#                 it returns; this shows that copy's share (issue 42)
# Each rank first moves PREWARM_BYTES (512 MiB) untimed, so that every
# configuration is timed past its buffers' first pass (torch_perf.py).
# Prints one table (ms per all-reduce and algbw, float32 bytes), then one of
# the CPUs the machine kept busy meanwhile and the reducers' share. The ranks
# share one GPU and loopback: this compares the transports' overheads on one
# machine, not a network. CONFIGS picks configurations, in order.
# MPS=auto (default) runs the ranks under an MPS server of the step's own
# where nvidia-cuda-mps-control exists and none runs yet: without it the
# ranks' kernels take turns in time slices, which dominates every figure
# (ms per all-reduce 2.6 - 14 x higher on an H100). MPS=0 never starts one.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"

mps=none
stop_mps() {
  [ "$mps" = ours ] || return 0
  echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 || true
  mps=stopped
}
trap 'rs_cleanup; stop_mps' EXIT
trap 'rs_cleanup; stop_mps; exit 143' TERM
trap 'rs_cleanup; stop_mps; exit 130' INT
if [ "${MPS:-auto}" != 0 ] && command -v nvidia-cuda-mps-control >/dev/null && ! pgrep -x nvidia-cuda-mps >/dev/null 2>&1; then
  export CUDA_MPS_PIPE_DIRECTORY=${TMPDIR:-/tmp}/rs-mps-$$ CUDA_MPS_LOG_DIRECTORY=${TMPDIR:-/tmp}/rs-mps-$$
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY"
  if nvidia-cuda-mps-control -d; then
    mps=ours
  else
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  fi
fi

logs=$(rs_logs_dir)
world=${WORLD:-4}
nreducers=${REDUCERS:-$world}
configs=${CONFIGS:-socket p2p collnet collnet-1io collnet-bf16 collnet-nofailover}
export SIZES=${SIZES:-1048576 16777216 67108864} ITERS=${ITERS:-20} WARMUP=${WARMUP:-5}
rs_need "$RS_REDUCERD" "$RS_PLUGIN"
rs_start_reducers "$nreducers" "$logs" --io-threads 2 --op-timeout 60s
# Rank 0 reads their CPU time around each size's timed all-reduces (torch_perf.py).
RS_REDUCER_PIDS="${rs_pids[*]}"
export RS_REDUCER_PIDS
echo "$nreducers reducers at $RS_ADDRS; $world ranks on one GPU ($([ "$mps" = ours ] && echo "under MPS" || echo "time-sliced, no MPS")); configurations: $configs; logs in $logs"

export MASTER_ADDR=127.0.0.1 WORLD_SIZE=$world NCCL_SOCKET_IFNAME=lo REDUCER_SOCKET_IFNAME=lo
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
port=$((20000 + RANDOM % 20000))
for c in $configs; do
  # Each configuration's variables on the ranks' command line only.
  cfg=(env -u NCCL_NET -u NCCL_NET_PLUGIN -u NCCL_NET_PLUGIN_REF_COUNT -u NCCL_COLLNET_ENABLE -u NCCL_ALGO
    -u NCCL_PROTO -u LD_PRELOAD -u REDUCER_ADDRS -u REDUCER_JOB_TOKEN -u REDUCER_WIRE_DTYPE -u REDUCER_COLLNET_TRACE
    -u REDUCER_FAILOVER -u REDUCER_IO_THREADS "PERF_CONFIG=$c" "MASTER_PORT=$port")
  case $c in
    socket) cfg+=(NCCL_NET=Socket) ;;
    p2p) cfg+=("NCCL_NET_PLUGIN=$RS_PLUGIN" NCCL_COLLNET_ENABLE=0) ;;
    collnet | collnet-1io | collnet-bf16 | collnet-nofailover)
      cfg+=("NCCL_NET_PLUGIN=$RS_PLUGIN" NCCL_NET_PLUGIN_REF_COUNT=1 NCCL_COLLNET_ENABLE=1
        "REDUCER_ADDRS=$RS_ADDRS" "REDUCER_JOB_TOKEN=$RS_TOKEN")
      if [ "$c" = collnet-bf16 ]; then cfg+=(REDUCER_WIRE_DTYPE=bfloat16); fi
      if [ "$c" = collnet-nofailover ]; then cfg+=(REDUCER_FAILOVER=0); fi
      if [ "$c" = collnet-1io ]; then cfg+=(REDUCER_IO_THREADS=1); fi
      # Where CollNet's time goes (issue 42): each node head's calls, summarised below.
      mkdir -p "$logs/trace-$c"
      cfg+=("REDUCER_COLLNET_TRACE=$logs/trace-$c")
      ;;
    *) rs_fail "unknown configuration '$c' (socket, p2p, collnet, collnet-1io, collnet-bf16, collnet-nofailover)" ;;
  esac
  for r in $(seq 0 $((world - 1))); do
    rs_launch "$logs/$c-rank$r.log" "${cfg[@]}" "RANK=$r" "NCCL_HOSTID=node$r" CUDA_VISIBLE_DEVICES=0 \
      "$PYTHON" "$rs_gpu_dir/torch_perf.py"
  done
  rs_wait_ranks || rs_fail "$c: $(rs_rank_failure "$RS_FAILED_LOG")"
  echo "$c: $(grep -m1 -o "Using network .*" "$logs/$c-rank0.log" || echo "no 'Using network' line")"
  # The channels bound a CollNet call's size and NCCL's calls in flight (8 per group of 8 channels).
  echo "$c: rank 0 has $(grep -m1 -o "[0-9]* coll channels, [0-9]* collnet channels" "$logs/$c-rank0.log" ||
    echo "no channel count in its log")"
  port=$((port + 1))
done

# One table of rank 0's RS_PERF lines: configurations across, sizes down;
# each cell "ms (algbw)" for `time`, "busy CPUs (the reducers')" for `cpu`.
perf_table() {
  grep -h "^RS_PERF" "$logs"/*-rank0.log | awk -v what="$1" '
    { delete v
      for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      if (!(v["config"] in seen)) { seen[v["config"]] = 1; order[++nc] = v["config"] }
      if (!(v["bytes"] in seenb)) { seenb[v["bytes"]] = 1; sizes[++ns] = v["bytes"] }
      if (what == "time") cell[v["config"], v["bytes"]] = sprintf("%.2f (%.2f)", v["ms"], v["algbw"])
      else if ("busy" in v) cell[v["config"], v["bytes"]] = sprintf("%.1f (%.1f)", v["busy"], v["reducers"]) }
    END {
      printf "%12s", "bytes"; for (c = 1; c <= nc; c++) printf "  %18s", order[c]; printf "\n"
      for (s = 1; s <= ns; s++) {
        printf "%12s", sizes[s]
        for (c = 1; c <= nc; c++) printf "  %18s", ((order[c], sizes[s]) in cell) ? cell[order[c], sizes[s]] : "-"
        printf "\n"
      } }'
}
echo "--- all-reduce, float32, $world ranks on one GPU ($([ "$mps" = ours ] && echo "MPS" || echo "no MPS")) over loopback: ms per all-reduce (algbw GB/s)"
perf_table time
echo "--- the same timed all-reduces: CPUs the whole machine kept busy (the reducers' share), of $(nproc)"
perf_table cpu
for c in $configs; do
  [ -d "$logs/trace-$c" ] || continue
  # Node 0's calls, one line per call size (each user size has its own); every
  # node's in full in trace-$c/summary.txt beside the files.
  node0=$(grep -l "^# reduction server CollNet trace: node 0 of" "$logs/trace-$c"/collnet-*.csv 2>/dev/null | head -1 || true)
  echo "--- $c: where node 0's CollNet calls spent their time (bench/collnet_trace.py; every node: $logs/trace-$c)"
  if [ -n "$node0" ]; then
    "$PYTHON" "$rs_gpu_dir/../../bench/collnet_trace.py" --brief "$node0" | tail -n +2 ||
      echo "$c: the trace could not be read"
    "$PYTHON" "$rs_gpu_dir/../../bench/collnet_trace.py" "$logs/trace-$c" >"$logs/trace-$c/summary.txt" 2>&1 || true
  else
    echo "$c: no trace written (NCCL did not close the communicator, or CollNet never connected)"
  fi
done
for c in $configs; do
  # How many I/O threads each CollNet configuration's client ran, as rank 0's
  # client logged it (NCCL's info log): the automatic choice and why, or none
  # for a configuration that set them.
  [ -d "$logs/trace-$c" ] || continue
  line=$(grep -m1 -o "[0-9]* I/O threads\{0,1\} (automatic: .*" "$logs/$c-rank0.log" || true)
  echo "--- $c: rank 0's client ran ${line:-the I/O threads its configuration set (no automatic choice logged)}"
done
rs_cleanup
stop_mps
echo "OK: $configs measured, every result right"
