#!/usr/bin/env bash
# CPU per byte on loopback: starts reducers and ranks on 127.0.0.1, all-reduces
# a fixed volume, reads every process's user and system time (reducerd from
# /proc/PID/stat, the ranks from their shell's `times`) and the machine's
# /proc/stat, and prints CPU-seconds per GB of worker input per role. BIN_DIR
# may name several builds (old and new binaries): they run in turn, REPEAT
# times, into one table. Needs no root. See --help.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/procs.sh
source "$ROOT/scripts/lib/procs.sh"
# shellcheck source=scripts/lib/cpu_time.sh
source "$ROOT/scripts/lib/cpu_time.sh"

WORKERS=${WORKERS:-4}
REDUCERS=${REDUCERS:-2}
SIZE=${SIZE:-64M}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-2}
CHECK=${CHECK:-1}
REPEAT=${REPEAT:-1}
BENCH_ARGS=${BENCH_ARGS-}
REDUCERD_ARGS=${REDUCERD_ARGS-}
BIN_DIR=${BIN_DIR:-$ROOT/build}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
OUT=${OUT:-}

usage() {
  cat <<EOF
Usage: [VAR=value ...] $0 [--help]

Starts $REDUCERS reducerd and $WORKERS reducer-bench processes on 127.0.0.1, all-reduces $SIZE
(float32 sum) $ITERS times after $WARMUP warm-up operations, every element checked (CHECK=1),
and prints CPU-seconds per GB of worker input (the bytes all ranks handed to the all-reduce)
for the reducers and for the ranks, user and system time apart, plus the machine-wide
irq + softirq time (the kernel's packet work charged to no process) and how busy the rest
of the machine was. The ranks' CPU includes filling and checking their buffers (CHECK=0
leaves that out). Exit status: 0 when every run succeeded, 1 otherwise, 2 for bad settings.

Settings, from the environment (current value):
  WORKERS=$WORKERS REDUCERS=$REDUCERS   processes of each kind
  SIZE=$SIZE ITERS=$ITERS WARMUP=$WARMUP CHECK=$CHECK   the volume: SIZE x (ITERS + max(WARMUP, CHECK)) per rank
  REPEAT=$REPEAT         runs per build (the builds alternate, so slow phases of a busy machine hit both)
  BENCH_ARGS='$BENCH_ARGS'     more reducer-bench flags (empty: its defaults), e.g. '--streams 1'
  REDUCERD_ARGS='$REDUCERD_ARGS'  more reducerd flags
  BIN_DIR='$BIN_DIR'
                  one or more folders (space-separated), each holding reducerd and reducer-bench
                  directly (e.g. /work/baseline-bin) or a CMake build folder (server/, bench/)
  RUN_TIMEOUT=$RUN_TIMEOUT   seconds one run may take
  OUT=$OUT        keep logs and cpu_per_byte.csv here (default: a temporary folder, removed)
EOF
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "unknown argument '$1'; see $0 --help" >&2; exit 2 ;;
esac

for name in WORKERS REDUCERS ITERS WARMUP REPEAT RUN_TIMEOUT; do
  [[ ${!name} =~ ^[1-9][0-9]*$ || ($name == WARMUP && ${!name} == 0) ]] ||
    { echo "$name=${!name}: not a positive whole number" >&2; exit 2; }
done
[[ $CHECK == 0 || $CHECK == 1 ]] || { echo "CHECK=$CHECK: use 0 or 1" >&2; exit 2; }

SIZE_BYTES=$(size_bytes "$SIZE") || { echo "SIZE=$SIZE: not a size (e.g. 64M)" >&2; exit 2; }

for d in $BIN_DIR; do binaries "$d" >/dev/null || exit 2; done

rs_output_dir rs-cpu-per-byte

CSV=$OUT/cpu_per_byte.csv
echo "bin_dir,run,role,processes,gb,user_s,sys_s,wall_s,algbw_GBps" >"$CSV"

# run_one BIN_DIR RUN INDEX: one measurement, rows appended to the CSV.
run_one() {
  local dir=$1 run=$2 index=$3 reducerd bench logs i r port addrs="" pids=() rpids=()
  read -r reducerd bench <<<"$(binaries "$dir")"
  # The entry's position keeps apart builds whose folders share a name
  # (two checkouts' build/): a port file of the other's run would be read.
  logs=$OUT/run$run-$index-$(basename "$dir")
  rm -rf "$logs"
  mkdir -p "$logs"
  # shellcheck disable=SC2086  # REDUCERD_ARGS is a list of flags
  start_reducers "$logs" "$REDUCERS" all "$reducerd" $REDUCERD_ARGS || return 1
  rpids=("${REDUCER_PIDS[@]}")
  addrs=$REDUCER_ADDRS
  local cpu0=() m0 m1 t0 t1
  for i in "${!rpids[@]}"; do cpu0+=("$(proc_cpu "${rpids[i]}")"); done
  m0=$(machine_cpu)
  t0=$(date +%s.%N)
  for ((r = 0; r < WORKERS; r++)); do
    # shellcheck disable=SC2016,SC2086  # expanded by the inner shell; BENCH_ARGS is a list of flags
    timeout -k 5 "$RUN_TIMEOUT" bash -c '"$@"; rc=$?; times >"$0"; exit $rc' "$logs/rank$r.times" \
      "$bench" --reducers "$addrs" --world "$WORKERS" --rank "$r" --session "cpu-per-byte-$$-$run" \
      -b "$SIZE" -e "$SIZE" -n "$ITERS" -w "$WARMUP" --check "$CHECK" -d float32 $BENCH_ARGS \
      >"$logs/rank$r.out" 2>"$logs/rank$r.err" &
    PIDS+=($!)
    pids+=($!)
  done
  local failed=0
  for ((r = 0; r < WORKERS; r++)); do
    wait "${pids[r]}" || { echo "rank $r failed ($dir):" >&2; tail -5 "$logs/rank$r.err" >&2; failed=1; }
  done
  t1=$(date +%s.%N)
  m1=$(machine_cpu)
  local red="0 0" wrk="0 0" per_rank gb wall algbw mach
  for i in "${!rpids[@]}"; do red=$(add "$red" "$(sub "${cpu0[i]} 0" "$(proc_cpu "${rpids[i]}") 0")"); done
  rs_stop_pids 30 "${rpids[@]}"
  ((failed == 0)) || return 1
  for ((r = 0; r < WORKERS; r++)); do wrk=$(add "$wrk" "$(times_cpu "$logs/rank$r.times")"); done
  per_rank=$(awk '/^# Input bytes/ { print $5 }' "$logs/rank0.out")
  # An older reducer-bench does not print it: its sweep of one size does exactly this many.
  [[ -n $per_rank ]] || per_rank=$((SIZE_BYTES / 4 * 4 * (ITERS + (WARMUP > CHECK ? WARMUP : CHECK))))
  gb=$(awk -v b=$((WORKERS * per_rank)) 'BEGIN { printf "%.4f", b / 1e9 }')
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  algbw=$(awk '!/^#/ && NF >= 8 { v = $6 } END { print v + 0 }' "$logs/rank0.out")
  mach=$(sub "$m0" "$m1")
  local busy kernel soft ru rs wu ws other
  read -r busy kernel soft <<<"$mach"
  read -r ru rs <<<"$red"
  read -r wu ws <<<"$wrk"
  other=$(awk -v b="$busy" -v t="$ru $rs $wu $ws $soft" 'BEGIN { split(t, x, " "); o = b - x[1] - x[2] - x[3] - x[4] - x[5]
    printf "%.3f", o < 0 ? 0 : o }')
  row() { echo "$dir,$run,$1,$2,$gb,$3,$4,$wall,$algbw" >>"$CSV"; }
  row reducerd "$REDUCERS" "$ru" "$rs"
  row reducer-bench "$WORKERS" "$wu" "$ws"
  row "machine irq+softirq" "" 0 "$soft"
  row "machine all kernel" "" 0 "$kernel"
  row "other processes" "" "$other" 0
}

echo "== $WORKERS ranks, $REDUCERS reducers on 127.0.0.1; $SIZE float32 sum x ($ITERS + warm-up), check $CHECK;" \
  "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
failed=0
for ((run = 1; run <= REPEAT; run++)); do
  index=0
  for d in $BIN_DIR; do
    index=$((index + 1))
    echo "== run $run: $d" >&2
    run_one "$d" "$run" "$index" || failed=1
  done
done

# The table: per build and role, the runs summed.
awk -F, 'NR > 1 {
  k = $1 SUBSEP $3; if (!(k in gb)) { order[n++] = k }
  gb[k] += $5; u[k] += $6; s[k] += $7; wall[k] += $8; bw[k] += $9; runs[k]++; procs[k] = $4 }
END {
  print "| binaries | role | processes | GB of input | user s/GB | sys s/GB | total s/GB | GB per CPU-s | algbw (GB/s) | wall s |"
  print "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  for (i = 0; i < n; i++) {
    k = order[i]; split(k, p, SUBSEP); t = u[k] + s[k]
    user = p[2] ~ /^machine/ ? "-" : sprintf("%.3f", u[k] / gb[k])
    sys_ = p[2] ~ /^other/ ? "-" : sprintf("%.3f", s[k] / gb[k])
    printf "| %s | %s | %s | %.2f | %s | %s | %.3f | %s | %.3f | %.1f |\n", p[1], p[2], procs[k], gb[k],
      user, sys_, t / gb[k], (t > 0 ? sprintf("%.2f", gb[k] / t) : "-"), bw[k] / runs[k], wall[k] / runs[k]
  }
}' "$CSV"
echo
echo "Rows: reducerd and reducer-bench are those processes' own time; 'machine irq+softirq' is the kernel's"
echo "packet work charged to no process; 'machine all kernel' is every process's system time plus that;"
echo "'other processes' is what the rest of the machine used meanwhile (a busy machine distorts every figure)."
((KEEP)) && echo "Raw rows and logs: $OUT"
exit $failed
