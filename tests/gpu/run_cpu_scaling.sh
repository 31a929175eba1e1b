#!/usr/bin/env bash
# Issue 42's CPU-scaling figures on the lent machine's cores (a step of
# run_all.sh, also runnable alone). No GPU is involved: that machine is the
# only one with 16 cores. bench/cpu_scaling.sh pins WORLD (at most 4) ranks
# to one half of the cores and as many reducers to the other half, and
# measures 64 MiB float32 all-reduces on 127.0.0.1 with the client's own
# choice of I/O threads ("auto", the default), 1 and 4 threads, three runs
# each, beside iperf3 between the same core sets (from the bundle, or the
# machine's; without one that column says n/a). The targets (issue 42): with
# the defaults, at least 2 x 1.41 GB/s per worker and 0.8 x iperf3; 4 threads
# at least 3 x 1 thread where the cores allow.
#   CPU_IO_THREADS ('auto 1 4'), CPU_REPEAT (3), CPU_SIZE (64M), CPU_ITERS (10)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"

logs=$(rs_logs_dir)
if [ -n "${RS_BUNDLE:-}" ]; then
  script=$RS_BUNDLE/bench/cpu_scaling.sh
  bin_dir=$RS_BUNDLE/bin
else
  script=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/bench/cpu_scaling.sh
  bin_dir=$(dirname "$(dirname "$RS_REDUCERD")")  # the build folder
fi
rs_need "$RS_REDUCERD" "$script"
command -v taskset >/dev/null ||
  rs_skip "no taskset on this machine (util-linux): the ranks and reducers cannot be pinned"
world=${WORLD:-4}
((world <= 4)) || world=4
half=$(($(nproc) / 2))
((half >= 1)) || half=1
((world <= half)) || world=$half

echo "--- cpu scaling, $(nproc) CPUs: $world ranks and $world reducers, each side on half of them"
rc=0
env WORKERS="$world" REDUCERS="$world" IO_THREADS="${CPU_IO_THREADS:-auto 1 4}" REPEAT="${CPU_REPEAT:-3}" \
  SIZE="${CPU_SIZE:-64M}" ITERS="${CPU_ITERS:-10}" BIN_DIR="$bin_dir" OUT="$logs/cpu_scaling" \
  bash "$script" >"$logs/cpu_scaling.txt" 2>"$logs/cpu_scaling.err" || rc=$?
grep -v '^== run ' "$logs/cpu_scaling.txt"
((rc == 0)) || rs_fail "bench/cpu_scaling.sh exited $rc: $(tail -3 "$logs/cpu_scaling.err" | paste -sd ' ')"
auto=$(grep -m1 '^| auto' "$logs/cpu_scaling.txt" |
  awk -F'|' '{gsub(/ /, "", $4); gsub(/^ +| +$/, "", $5); print $4 " GB/s per worker, " $5 " x iperf3 one way"}')
echo "OK: the client's own choice of threads (${auto:-no row}); the other rows above"
