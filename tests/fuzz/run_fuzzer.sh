#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time, starting from its seed corpus,
# under whatever sanitizers it was built with (CTest's fuzz.<name> tests).
#
#   run_fuzzer.sh FUZZER SEED_CORPUS WORK_DIR SECONDS [libFuzzer flags...]
#
# New inputs go to WORK_DIR/corpus, never into the seed corpus in the
# repository. A crash, leak, timeout or failed property exits non-zero and
# prints the reproducer's path and the command that replays it.
set -uo pipefail

if [ $# -lt 4 ]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
fuzzer=$1 seeds=$2 work=$3 seconds=$4
shift 4

mkdir -p "$work/corpus" "$work/artifacts"
rm -f "$work"/artifacts/*
# -timeout: one input taking over 10 s is a hang; -rss_limit_mb bounds memory;
# -print_final_stats gives the execution count.
"$fuzzer" "$work/corpus" "$seeds" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" >"$work/log" 2>&1
rc=$?
grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+ *DONE' "$work/log"
if [ $rc -ne 0 ]; then
  tail -n 60 "$work/log"
  for f in "$work"/artifacts/*; do
    [ -e "$f" ] || continue
    echo "FUZZ FAILURE in $(basename "$fuzzer"): reproducer $f"
    echo "  replay: $fuzzer $f"
  done
  exit 1
fi
echo "$(basename "$fuzzer"): no crash in ${seconds} s"
