#!/usr/bin/env bash
# tests/gpu/run_all.sh's plumbing, without a GPU: what a user of a lent GPU
# machine relies on when something is wrong there.
#   - With a Python whose PyTorch has no CUDA it stops at the probe, exit 2,
#     within its budget, the summary first on stdout naming the reason, the
#     later steps SKIPPED, and at most 8 files in OUT, none deeper than 2.
#   - A step past STEP_TIMEOUT is TIMEOUT, its processes are gone, and the
#     next step still runs; a step that no longer fits the BUDGET is SKIPPED.
#   - A missing program fails its step by name (torch, stderr, model, fsdp).
#   - The default list holds the steps stderr, model, fsdp and cpu.
#   - The cpu step (no GPU) runs here and puts its table in the summary.
#
#   tests/gpu/run_all_test.sh BUILD_DIR PYTHON
#
# Exit 77 (skipped) when PYTHON's PyTorch does see a GPU.
set -uo pipefail

build=$1
python=$2
run_all=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/run_all.sh
scratch=$(mktemp -d /tmp/run_all_test-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
failures=0
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what" >&2; failures=$((failures + 1)); fi
}

# run NAME VAR=VALUE...: runs run_all.sh with OUT=$scratch/NAME; sets rc, wall.
run() {
  local name=$1
  shift
  out=$scratch/$name
  local t0=$SECONDS
  env OUT="$out" BUILD_DIR="$build" PYTHON="$python" "$@" "$run_all" >"$scratch/$name.stdout" 2>"$scratch/$name.stderr"
  rc=$?
  wall=$((SECONDS - t0))
  echo "--- $name: exit $rc after $wall s; its summary:"
  cat "$out/summary.txt"
}

files_ok() {  # at most 8 files, none more than 2 folder levels deep
  local n
  n=$(find "$1" -type f | wc -l)
  ((n <= 8)) && [ -z "$(find "$1" -mindepth 3)" ] && [ "$(find "$1" -mindepth 1 -not -type f -not -type d)" = "" ]
}
summary_first() {  # stdout begins with summary.txt, word for word
  local n
  n=$(wc -l <"$2/summary.txt")
  [ "$n" -gt 3 ] && head -n "$n" "$1" | cmp -s - "$2/summary.txt"
}
has() { grep -qE -- "$2" "$1"; }
# A killed process whose parent died too may linger as a zombie until init
# reaps it: that one is gone as well.
gone() { [ "$1" != none ] && { [ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }; }

if "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "$python's PyTorch sees a GPU: this test needs one without CUDA; run tests/gpu/run_all.sh itself" >&2
  exit 77
fi
reason="PyTorch sees no CUDA device"
"$python" -c 'import torch' 2>/dev/null || reason="cannot import torch"
command -v "$python" >/dev/null || reason="no Python at"

check "--help says what it does, and the test hook" bash -c "'$run_all' --help | grep -q 'For tests: a step named sleep'"
check "an unknown argument is a usage error (64)" bash -c "'$run_all' --bogus >/dev/null 2>&1; [ \$? -eq 64 ]"

run nocuda BUDGET=60 STEP_TIMEOUT=30
check "no CUDA: exit 2" [ "$rc" -eq 2 ]
check "no CUDA: done within BUDGET (60 s) plus 15 s" [ "$wall" -le 75 ]
check "no CUDA: stdout opens with the summary" summary_first "$scratch/nocuda.stdout" "$out"
check "no CUDA: first line says it stopped" has "$scratch/nocuda.stdout" "^GPU CHECK: STOPPED \(exit 2\)"
check "no CUDA: the summary names the reason ($reason)" has "$out/summary.txt" "probe +FAIL .*$reason"
check "no CUDA: the GPU steps are SKIPPED, saying why" \
  bash -c "[ \$(grep -cE '^  (torch|preload|train) +SKIPPED .*the probe failed' '$out/summary.txt') -eq 3 ]"
check "no CUDA: the default list ends with stderr, model, fsdp and cpu, SKIPPED" \
  bash -c "[ \$(grep -cE '^  (stderr|model|fsdp|cpu) +SKIPPED .*the probe failed' '$out/summary.txt') -eq 4 ]"
check "no CUDA: the summary shows the Python it used" has "$out/summary.txt" "^python: .*$python"
check "no CUDA: OUT holds summary, details and the logs, at most 8 files, 2 levels" files_ok "$out"
check "no CUDA: the probe's log is in logs.tar.gz" bash -c "tar -tzf '$out/logs.tar.gz' | grep -q probe/step.log"

run timeout RUN_ALL_STEPS="sleep:120 sleep:0" BUDGET=60 STEP_TIMEOUT=3
check "step timeout: exit 1" [ "$rc" -eq 1 ]
check "step timeout: the step is stopped at STEP_TIMEOUT (3 s, 10 s grace)" [ "$wall" -le 20 ]
check "step timeout: the summary says TIMEOUT" has "$out/summary.txt" "^  sleep:120 +TIMEOUT .*stopped after 3 s"
check "step timeout: the next step still ran and passed" has "$out/summary.txt" "^  sleep:0 +PASS"
mkdir -p "$scratch/timeout-logs" && tar -xzf "$out/logs.tar.gz" -C "$scratch/timeout-logs"
pid=$(cat "$scratch/timeout-logs/sleep-120/sleep.pid" 2>/dev/null || echo none)
check "step timeout: the step's child process ($pid) was killed" gone "$pid"
check "step timeout: at most 8 files, 2 levels" files_ok "$out"

run budget RUN_ALL_STEPS="sleep:120 sleep:0" BUDGET=20 STEP_TIMEOUT=3
check "budget: a step that cannot fit is SKIPPED, saying why" has "$out/summary.txt" "^  sleep:0 +SKIPPED .*left of BUDGET 20 s"
check "budget: exit 1" [ "$rc" -eq 1 ]

run missing RUN_ALL_STEPS="torch stderr model fsdp" BUILD_DIR=/nonexistent BUDGET=100 STEP_TIMEOUT=20 STEP_MIN=10
for s in torch stderr model fsdp; do
  check "missing program: the $s step FAILs naming it" has "$out/summary.txt" "^  $s +FAIL .*no /nonexistent/server/reducerd"
done

# The cpu step needs no GPU: bench/cpu_scaling.sh on this machine's cores,
# its table in the summary (small sizes here: a minute on the lent machine).
run cpu RUN_ALL_STEPS=cpu CPU_REPEAT=1 CPU_ITERS=2 CPU_SIZE=1M CPU_IO_THREADS=auto IPERF_SECONDS=1 BUDGET=100 \
  STEP_TIMEOUT=60 STEP_MIN=10
check "cpu step: passes without a GPU, naming the defaults' figure" has "$out/summary.txt" "^  cpu +PASS .*GB/s per worker"
check "cpu step: its table is in the summary" has "$out/summary.txt" "^  \| auto \([0-9]+\) \| auto \| [0-9.]+ \|"

if ((failures)); then
  echo "$failures check(s) failed; stderr of the runs:" >&2
  tail -n 5 "$scratch"/*.stderr >&2
  exit 1
fi
echo "all checks passed"
