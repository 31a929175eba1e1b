#!/usr/bin/env bash
# The NCCL plugin's CollNet path on loopback, without NCCL or a GPU: NODES
# processes drive the built plugin as NCCL 2.28.9's CollNet proxy would (the
# test stand-in nccl_collnet_rank, scenario perf: NCCL's chunking, at most its
# calls in flight, test() spun on the oldest with a yield), then reducer-bench
# --pattern collnet replays the same calls through the client library
# directly. The difference is what the plugin's own layer costs (the ABI
# tables, the CollNet comm, NCCL's threads); each, against the line rate, is
# what the reducers' path costs. Issue 42, item 1. See --help.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/procs.sh
source "$ROOT/scripts/lib/procs.sh"
# shellcheck source=scripts/lib/cpu_time.sh
source "$ROOT/scripts/lib/cpu_time.sh"

BUILD_DIR=${BUILD_DIR:-$ROOT/build}
NODES=${NODES:-2}
REDUCERS=${REDUCERS:-$NODES}
SIZES=${SIZES:-1M 16M 64M}
ITERS=${ITERS:-10}
REPEAT=${REPEAT:-1}
TRACE=${TRACE:-0}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
OUT=${OUT:-}

usage() {
  cat <<EOF
Usage: [VAR=value ...] $0 [--help]

Starts $REDUCERS reducerd on 127.0.0.1, then runs $NODES node processes through the built plugin
(CollNet only, NCCL's calls for a float32 all-reduce of each size: 4 channels, NCCL 2.28.9's chunk
rule) and $NODES reducer-bench ranks with --pattern collnet (the same calls through the client
library), REPEAT times, and prints ms per all-reduce of node / rank 0 for both. Each node process
runs the largest size first, untimed: it moves each call to the next part of its 16 MiB staging
buffer, and its first pass over the buffer is slow where the kernel's first access of a page is
dear, as on the paravirtualised machine of these figures (docs/performance.md, "The spread at
64 MiB"); NCCL's own buffer is in use all the time. reducer-bench sweeps upwards (every power of
two between the smallest and the largest size) with 5 warm-ups per size, each all-reduce in the
same place of its buffers.

Settings, from the environment (current value):
  NODES=$NODES REDUCERS=$REDUCERS   processes of each kind (all on this machine's cores)
  SIZES='$SIZES'   user all-reduce sizes: powers of two, 4K or more (K, M suffixes)
  ITERS=$ITERS REPEAT=$REPEAT   timed all-reduces per size (after 2), runs of each side
  TRACE=$TRACE   1: the node processes write REDUCER_COLLNET_TRACE files to OUT/run-N/trace
                and bench/collnet_trace.py summarises node 0's
  BUILD_DIR=$BUILD_DIR   a CMake build with the tests (tests/nccl_plugin/nccl_collnet_rank)
  RUN_TIMEOUT=$RUN_TIMEOUT   seconds one side of a run may take
  OUT=$OUT   keep logs here (default: a temporary folder, removed)
Exit status: 0 when every run succeeded, 1 otherwise, 2 for bad settings.
EOF
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "unknown argument '$1'; see $0 --help" >&2; exit 2 ;;
esac
for name in NODES REDUCERS ITERS REPEAT RUN_TIMEOUT; do
  [[ ${!name} =~ ^[1-9][0-9]*$ ]] || { echo "$name=${!name}: not a positive whole number" >&2; exit 2; }
done
largest=0 smallest=0
for s in $SIZES; do
  b=$(size_bytes "$s") || { echo "SIZES: '$s' is not a size (e.g. 64M)" >&2; exit 2; }
  ((b >= 4096 && (b & (b - 1)) == 0)) || { echo "SIZES: '$s' is not a power of two of 4K or more" >&2; exit 2; }
  ((b > largest)) && largest=$b
  ((smallest == 0 || b < smallest)) && smallest=$b
done
RANK=$BUILD_DIR/tests/nccl_plugin/nccl_collnet_rank
PLUGIN=$BUILD_DIR/nccl_plugin/libnccl-net-reducer.so
for f in "$RANK" "$PLUGIN" "$BUILD_DIR/server/reducerd" "$BUILD_DIR/bench/reducer-bench"; do
  [[ -e $f ]] || { echo "$f is missing: build the tests in $BUILD_DIR (cmake --build $BUILD_DIR)" >&2; exit 2; }
done

rs_output_dir rs-collnet-perf

# side LOGS KIND RUN: NODES processes of KIND (plugin or bench) against the
# reducers at REDUCER_ADDRS; 0 when all succeeded.
side() {
  local logs=$1 kind=$2 i pids=() order failed=0 bytes_list="" run=$3 trace_env=()
  order=$(seq -s, 0 $((NODES - 1)))
  for s in $SIZES; do bytes_list+="$(size_bytes "$s") "; done
  mkdir -p "$logs/handles" "$logs/trace"
  ((TRACE)) && trace_env=("REDUCER_COLLNET_TRACE=$logs/trace")
  for ((i = 0; i < NODES; i++)); do
    if [[ $kind == plugin ]]; then
      env REDUCER_ADDRS="$REDUCER_ADDRS" REDUCER_SOCKET_IFNAME=lo NCCL_COLLNET_ENABLE=1 COLLNET_PERF_SIZES="$largest $bytes_list" \
        COLLNET_PERF_ITERS="$ITERS" "${trace_env[@]}" \
        timeout -k 5 "$RUN_TIMEOUT" "$RANK" "$PLUGIN" "$logs/handles" "$i" "$order" 11 perf \
        >"$logs/$kind$i.out" 2>&1 &
    else
      timeout -k 5 "$RUN_TIMEOUT" "$BUILD_DIR/bench/reducer-bench" --reducers "$REDUCER_ADDRS" --world "$NODES" \
        --rank "$i" --session "collnet-perf-$$-$run" --pattern collnet --collnet-poll spin \
        -b "$smallest" -e "$largest" -f 2 -n "$ITERS" -w 5 --check 0 -d float32 >"$logs/$kind$i.out" 2>&1 &
    fi
    PIDS+=($!)
    pids+=($!)
  done
  for ((i = 0; i < NODES; i++)); do
    wait "${pids[i]}" || { echo "$kind $i failed:" >&2; tail -5 "$logs/$kind$i.out" >&2; failed=1; }
  done
  return $failed
}

status=0
rows=()
for ((run = 1; run <= REPEAT; run++)); do
  logs=$OUT/run-$run
  mkdir -p "$logs"
  start_reducers "$logs" "$REDUCERS" all "$BUILD_DIR/server/reducerd" || exit 1
  side "$logs" plugin "$run" || status=1
  side "$logs" bench "$run" || status=1
  rs_stop_pids 30 "${REDUCER_PIDS[@]}"
  # node 0's "perf: bytes=B ... ms=T" (the first line is the warm-up size) and rank 0's table rows.
  for s in $SIZES; do
    b=$(size_bytes "$s")
    p=$(grep -o "perf: bytes=$b .*ms=[0-9.]*" "$logs/plugin0.out" | tail -1 | sed 's/.*ms=//' || true)
    r=$(awk -v b="$b" '$1 == b && $2 ~ /^[0-9]+$/ { printf "%.3f", $(NF - 2) / 1000 }' "$logs/bench0.out")
    rows+=("$s $run ${p:-n/a} ${r:-n/a}")
  done
  if ((TRACE)); then
    node0=$(grep -l "^# reduction server CollNet trace: node 0 of" "$logs/trace"/collnet-*.csv 2>/dev/null | head -1 || true)
    if [[ -n $node0 ]]; then
      python3 "$ROOT/bench/collnet_trace.py" "$node0" || status=1
    else
      echo "run $run: node 0 wrote no trace" >&2
      status=1
    fi
  fi
done

echo "| size | run | through the plugin (ms) | client directly (ms) | plugin / client |"
echo "|---:|---:|---:|---:|---:|"
for row in "${rows[@]}"; do
  read -r s run p r <<<"$row"
  ratio=$(awk -v p="$p" -v r="$r" 'BEGIN { if (p + 0 > 0 && r + 0 > 0) printf "%.2f", p / r; else print "n/a" }')
  echo "| $s | $run | $p | $r | $ratio |"
done
echo
echo "$NODES nodes, $REDUCERS reducers on 127.0.0.1, float32, $ITERS timed all-reduces per size; node / rank 0's"
echo "average. Both sides share this machine's $(nproc) cores with the reducers: compare them, not the line rate."
exit $status
