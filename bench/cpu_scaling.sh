#!/usr/bin/env bash
# CPU scaling on loopback: pins the worker ranks to one set of cores and the
# reducers to another, sweeps the client's I/O threads and streams, and for
# each setting prints the per-worker bandwidth beside iperf3 between the same
# core sets, and the CPU-seconds per GB on each side. Answers "does the
# default scale with the cores, and how far from what TCP itself moves here".
# Needs no root; iperf3 is optional (its column is left out without it).
# See --help.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/procs.sh
source "$ROOT/scripts/lib/procs.sh"
# shellcheck source=scripts/lib/cpu_time.sh
source "$ROOT/scripts/lib/cpu_time.sh"

CPUS=$(nproc)
HALF=$((CPUS / 2 > 0 ? CPUS / 2 : 1))
WORKER_CPUS=${WORKER_CPUS:-0-$((HALF - 1))}
REDUCER_CPUS=${REDUCER_CPUS:-$((CPUS > 1 ? HALF : 0))-$((CPUS - 1))}
WORKERS=${WORKERS:-$((HALF < 4 ? HALF : 4))}
REDUCERS=${REDUCERS:-$WORKERS}
IO_THREADS=${IO_THREADS:-auto 1 2 4}
STREAMS=${STREAMS:-auto}
REDUCER_IO_THREADS=${REDUCER_IO_THREADS:-auto}
SIZE=${SIZE:-64M}
ITERS=${ITERS:-10}
WARMUP=${WARMUP:-auto}
REPEAT=${REPEAT:-1}
IPERF_SECONDS=${IPERF_SECONDS:-3}
BENCH_ARGS=${BENCH_ARGS-}
REDUCERD_ARGS=${REDUCERD_ARGS-}
BIN_DIR=${BIN_DIR:-$ROOT/build}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
OUT=${OUT:-}

usage() {
  cat <<EOF
Usage: [VAR=value ...] $0 [--help]

Runs $WORKERS reducer-bench ranks pinned to CPUs $WORKER_CPUS and $REDUCERS reducerd pinned to
CPUs $REDUCER_CPUS, on 127.0.0.1, all-reducing $SIZE float32 $ITERS times (after $WARMUP warm-up,
results not checked) for every combination of the client's I/O threads and streams below.
Prints, per combination: each worker's bandwidth (size / time, the bytes it sends and
receives each way), against iperf3 between the same core sets (as many streams as workers,
one way and both ways at once), and the CPU-seconds per GB of worker input of the ranks and
of the reducers. Exit status: 0 when every run succeeded, 1 otherwise, 2 for bad settings.

Settings, from the environment (current value):
  WORKER_CPUS=$WORKER_CPUS REDUCER_CPUS=$REDUCER_CPUS   taskset core lists (default: halves of the $CPUS CPUs)
  WORKERS=$WORKERS REDUCERS=$REDUCERS   processes of each kind
  IO_THREADS='$IO_THREADS'   the client's I/O threads (--io-threads), a list; auto = the client's own choice
  STREAMS='$STREAMS'   streams per reducer (--streams), a list; auto = the client's own choice
  REDUCER_IO_THREADS='$REDUCER_IO_THREADS'   reducerd --io-threads; auto = its own choice
  SIZE=$SIZE ITERS=$ITERS WARMUP=$WARMUP REPEAT=$REPEAT   REPEAT runs of each combination (min - max shown)
      WARMUP=auto: enough operations to move twice the failover ring (512 MiB; 2 to 64), so that
      the timed ones see the steady state, not each process's first pass through its fresh pages
  IPERF_SECONDS=$IPERF_SECONDS   length of each iperf3 run (0: skip iperf3)
  BENCH_ARGS='$BENCH_ARGS'   more reducer-bench flags    REDUCERD_ARGS='$REDUCERD_ARGS'   more reducerd flags
  BIN_DIR=$BIN_DIR   reducerd + reducer-bench, or a CMake build folder
  RUN_TIMEOUT=$RUN_TIMEOUT   seconds one run may take
  OUT=$OUT   keep logs and cpu_scaling.csv here (default: a temporary folder, removed)
EOF
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "unknown argument '$1'; see $0 --help" >&2; exit 2 ;;
esac

for name in WORKERS REDUCERS ITERS REPEAT RUN_TIMEOUT; do
  [[ ${!name} =~ ^[1-9][0-9]*$ ]] || { echo "$name=${!name}: not a positive whole number" >&2; exit 2; }
done
[[ ($WARMUP =~ ^[0-9]+$ || $WARMUP == auto) && $IPERF_SECONDS =~ ^[0-9]+$ ]] ||
  { echo "WARMUP (or auto) and IPERF_SECONDS: whole numbers" >&2; exit 2; }
for list in "$WORKER_CPUS" "$REDUCER_CPUS"; do
  taskset -c "$list" true 2>/dev/null || { echo "CPU list '$list' is not usable here ($CPUS CPUs)" >&2; exit 2; }
done
for v in $IO_THREADS $REDUCER_IO_THREADS; do
  [[ $v =~ ^[1-9][0-9]*$ || $v == auto ]] || { echo "I/O threads '$v': a positive number or auto" >&2; exit 2; }
done
for v in $STREAMS; do
  [[ $v =~ ^[1-9][0-9]*$ || $v == auto ]] || { echo "streams '$v': a positive number or auto" >&2; exit 2; }
done
size_bytes "$SIZE" >/dev/null || { echo "SIZE=$SIZE: not a size (e.g. 64M)" >&2; exit 2; }
if [[ $WARMUP == auto ]]; then
  # The failover ring's first pass (256 MiB by default) writes fresh pages, a
  # one-time cost per process that 2 warm-ups of 64 MiB leave in the timed
  # operations (docs/performance.md, "CPU scaling on loopback").
  bytes=$(size_bytes "$SIZE")
  WARMUP=$(((512 * 1024 * 1024 + bytes - 1) / bytes))
  ((WARMUP >= 2)) || WARMUP=2
  ((WARMUP <= 64)) || WARMUP=64
fi
read -r REDUCERD BENCH <<<"$(binaries "$BIN_DIR")" || exit 2
IPERF=$(command -v iperf3 || true)
((IPERF_SECONDS > 0)) || IPERF=""

rs_output_dir rs-cpu-scaling

# iperf3 from the worker cores to the reducer cores, one stream per worker:
# "one-way both-ways" GB/s per stream. Both ways runs each stream in both
# directions at once, as an all-reduce moves its bytes.
iperf_per_stream() {
  local mode=$1 port logs=$OUT/iperf i pids=() servers=() total
  mkdir -p "$logs"
  for ((i = 0; i < WORKERS; i++)); do
    port=$((20000 + RANDOM % 20000))
    taskset -c "$REDUCER_CPUS" "$IPERF" -s -1 -B 127.0.0.1 -p "$port" >"$logs/server-$mode-$i.log" 2>&1 &
    PIDS+=($!)
    servers+=($!)
    sleep 0.2
    # shellcheck disable=SC2046  # no flag, or --bidir
    taskset -c "$WORKER_CPUS" "$IPERF" -c 127.0.0.1 -p "$port" -t "$IPERF_SECONDS" -J $([[ $mode == both ]] && echo --bidir) \
      >"$logs/client-$mode-$i.json" 2>&1 &
    PIDS+=($!)
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || true; done
  rs_stop_pids 10 "${servers[@]}"
  # Bytes received per second, summed over the streams and directions, per stream and direction.
  total=$(python3 - "$logs" "$mode" "$WORKERS" <<'PY'
import json, sys, glob
logs, mode, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
rates = []
for f in sorted(glob.glob(f"{logs}/client-{mode}-*.json")):
    try:
        end = json.load(open(f))["end"]
    except Exception:
        continue
    rates.append(end["sum_received"]["bits_per_second"] / 8e9)
    if mode == "both" and "sum_received_bidir_reverse" in end:
        rates.append(end["sum_received_bidir_reverse"]["bits_per_second"] / 8e9)
print(f"{sum(rates) / len(rates):.3f}" if rates else "n/a")
PY
)
  echo "$total"
}

CSV=$OUT/cpu_scaling.csv
echo "io_threads,streams,run,per_worker_GBps,worker_s_per_GB,reducer_s_per_GB" >"$CSV"

# run_one IO_THREADS STREAMS RUN: one measurement, a row appended to the CSV.
run_one() {
  local io=$1 streams=$2 run=$3 logs i r port addrs="" pids=() rpids=() rio=() sflag=() iflag=()
  logs=$OUT/io$io-s$streams-run$run
  rm -rf "$logs"
  mkdir -p "$logs"
  [[ $REDUCER_IO_THREADS == auto ]] || rio=(--io-threads "$REDUCER_IO_THREADS")
  [[ $streams == auto ]] || sflag=(--streams "$streams")
  [[ $io == auto ]] || iflag=(--io-threads "$io")
  # shellcheck disable=SC2086  # REDUCERD_ARGS is a list of flags
  start_reducers "$logs" "$REDUCERS" "$REDUCER_CPUS" "$REDUCERD" "${rio[@]}" $REDUCERD_ARGS || return 1
  rpids=("${REDUCER_PIDS[@]}")
  addrs=$REDUCER_ADDRS
  local cpu0=()
  for i in "${!rpids[@]}"; do cpu0+=("$(proc_cpu "${rpids[i]}")"); done
  for ((r = 0; r < WORKERS; r++)); do
    # shellcheck disable=SC2016,SC2086  # expanded by the inner shell; BENCH_ARGS is a list of flags
    timeout -k 5 "$RUN_TIMEOUT" taskset -c "$WORKER_CPUS" bash -c '"$@"; rc=$?; times >"$0"; exit $rc' \
      "$logs/rank$r.times" "$BENCH" --reducers "$addrs" --world "$WORKERS" --rank "$r" \
      --session "cpu-scaling-$$-$io-$streams-$run" "${iflag[@]}" "${sflag[@]}" \
      -b "$SIZE" -e "$SIZE" -n "$ITERS" -w "$WARMUP" --check 0 -d float32 $BENCH_ARGS \
      >"$logs/rank$r.out" 2>"$logs/rank$r.err" &
    PIDS+=($!)
    pids+=($!)
  done
  local failed=0
  for ((r = 0; r < WORKERS; r++)); do
    wait "${pids[r]}" || { echo "rank $r failed (io $io, streams $streams):" >&2; tail -5 "$logs/rank$r.err" >&2; failed=1; }
  done
  local red="0 0" wrk="0 0" per_rank gb bw
  for i in "${!rpids[@]}"; do red=$(add "$red" "$(sub "${cpu0[i]} 0" "$(proc_cpu "${rpids[i]}") 0")"); done
  rs_stop_pids 30 "${rpids[@]}"
  ((failed == 0)) || return 1
  for ((r = 0; r < WORKERS; r++)); do wrk=$(add "$wrk" "$(times_cpu "$logs/rank$r.times")"); done
  per_rank=$(awk '/^# Input bytes/ { print $5 }' "$logs/rank0.out")
  gb=$(awk -v b=$((WORKERS * per_rank)) 'BEGIN { printf "%.4f", b / 1e9 }')
  bw=$(awk '!/^#/ && NF >= 8 { v = $6 } END { print v + 0 }' "$logs/rank0.out")
  # What the client chose: "# Transport      : N I/O thread(s), ...".
  [[ $io != auto ]] || io="auto ($(awk '/^# Transport/ { print $4 }' "$logs/rank0.out"))"
  awk -v io="$io" -v s="$streams" -v run="$run" -v bw="$bw" -v gb="$gb" -v w="$wrk" -v r="$red" 'BEGIN {
    split(w, x, " "); split(r, y, " ")
    printf "%s,%s,%s,%.3f,%.3f,%.3f\n", io, s, run, bw, (x[1] + x[2]) / gb, (y[1] + y[2]) / gb }' >>"$CSV"
}

echo "== $WORKERS ranks on CPUs $WORKER_CPUS, $REDUCERS reducers on CPUs $REDUCER_CPUS; $SIZE float32 sum," \
  "$ITERS timed after $WARMUP warm-up;" \
  "$CPUS CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
one_way=n/a both_ways=n/a
if [[ -n $IPERF ]]; then
  one_way=$(iperf_per_stream one)
  both_ways=$(iperf_per_stream both)
  echo "== iperf3, $WORKERS stream(s) between the same core sets: $one_way GB/s per stream one way," \
    "$both_ways GB/s per stream and direction both ways at once"
else
  echo "== iperf3 not run (not installed, or IPERF_SECONDS=0)"
fi
failed=0
for ((run = 1; run <= REPEAT; run++)); do
  for io in $IO_THREADS; do
    for streams in $STREAMS; do
      echo "== run $run: --io-threads $io, streams $streams" >&2
      run_one "$io" "$streams" "$run" || failed=1
    done
  done
done

awk -F, -v one="$one_way" -v both="$both_ways" '
function ratio(lo, hi, by) { return lo == hi ? sprintf("%.2f", hi / by) : sprintf("%.2f - %.2f", lo / by, hi / by) }
NR > 1 {
  k = $1 SUBSEP $2; if (!(k in n)) { order[m++] = k; lo[k] = hi[k] = $4 }
  n[k]++; if ($4 < lo[k]) lo[k] = $4; if ($4 > hi[k]) hi[k] = $4; ws[k] += $5; rs[k] += $6 }
END {
  print "| client I/O threads | streams | per worker GB/s | x iperf3 one way | x iperf3 both ways | workers CPU-s/GB | reducers CPU-s/GB |"
  print "|---:|---:|---:|---:|---:|---:|---:|"
  for (i = 0; i < m; i++) {
    k = order[i]; split(k, p, SUBSEP)
    range = lo[k] == hi[k] ? sprintf("%.3f", lo[k]) : sprintf("%.3f - %.3f", lo[k], hi[k])
    x1 = one == "n/a" ? "n/a" : ratio(lo[k], hi[k], one); x2 = both == "n/a" ? "n/a" : ratio(lo[k], hi[k], both)
    printf "| %s | %s | %s | %s | %s | %.3f | %.3f |\n", p[1], p[2], range, x1, x2, ws[k] / n[k], rs[k] / n[k]
  }
}' "$CSV"
echo
echo "per worker GB/s: size / time of rank 0, what each worker sends and receives each way (min - max over"
echo "REPEAT runs; the x iperf3 columns likewise). CPU-s/GB: every rank's (or reducer's) user + system time"
echo "per GB of all workers' input."
((KEEP)) && echo "Raw rows and logs: $OUT"
exit $failed
