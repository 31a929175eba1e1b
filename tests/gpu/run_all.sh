#!/usr/bin/env bash
# The one command for a lent GPU machine: runs every GPU check, each step
# under its own timeout and all of them inside one time budget, so that a
# hang in one still reports the others. Prints a one-screen summary first,
# then the details; writes summary.txt, details.txt and logs.tar.gz to OUT.
set -uo pipefail

usage() {
  cat <<'EOF'
Usage: tests/gpu/run_all.sh [--help]

Runs the GPU checks on one GPU, WORLD ranks (each its own NCCL node) and
reducers on 127.0.0.1, and prints a one-screen summary, then the details.
Steps:
  probe    nvidia-smi, Python, PyTorch, CUDA, NCCL, libraries the loader
           cannot find; does PyTorch see a GPU? If not, nothing else runs
           (exit 2). At most 90 s.
  torch    PyTorch with NCCL_NET_PLUGIN, NCCL_COLLNET_ENABLE=1: broadcast,
           all_gather, all-reduces 4 KiB to MAX_BYTES (64 MiB) in float32 and
           bfloat16, every element checked, then a second process group
  preload  the same with only LD_PRELOAD=<plugin> and the reducers (4 KiB to
           PRELOAD_MAX_BYTES, 4 MiB)
  train    rs-train --backend gpu through the plugin, float32 and bfloat16
           gradients, TRAIN_STEPS steps each
  wire     the torch step's all-reduces (4 KiB to WIRE_MAX_BYTES, 16 MiB)
           with REDUCER_WIRE_DTYPE=bfloat16: the plugin converts NCCL's
           float32 for the reducers and back
  failover a reducer killed while the ranks all-reduce: every all-reduce
           must still finish, every element right
  rankloss a rank killed while the others all-reduce: each must stop with
           an error within 60 s, not hang (PyTorch's watchdog set as
           docs/guide/frameworks.md advises:
           TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC=1000)
  perf     ms per float32 all-reduce (1, 16, 64 MiB) through NCCL's own
           socket transport, the plugin's point-to-point, its CollNet,
           CollNet with one client I/O thread (the first run's default),
           with the bfloat16 wire and without failover (each CollNet call
           traced; each client's I/O threads named; the CPUs the machine
           and the reducers kept busy; timed after 512 MiB untimed), under
           MPS where it can start one (ranks share the GPU: a comparison of
           transports on loopback, not a network figure)
  stderr   with NCCL_DEBUG unset and only LD_PRELOAD, what every rank writes
           to stderr in a small all-reduce job, four ways: WORLD reducers
           ("using N reducers ..." and no WARNING), WORLD/2 reducers (the
           too-few-reducers WARNING), a reducer address nothing listens on
           ("CollNet could not connect", and the job still finishes), and
           NCCL_COLLNET_ENABLE=0 (its WARNING)
  model    one step of an unmodified DDP ResNet-18 (torchvision, random
           weights) over NCCL's own sockets, then twice through the plugin
           (LD_PRELOAD only): within a rounding bound of the socket run
           (tests/gpu/model_compare.py says which and why) and bit for bit
           the same twice; every reducer must carry data
  fsdp     the same with FSDP (reduce-scatter and all-gather over the
           plugin's point-to-point transport)
  cpu      no GPU: issue 42's CPU scaling on this machine's cores
           (bench/cpu_scaling.sh: ranks on one half, reducers on the other,
           64 MiB, the client's own I/O threads against 1 and 4, beside
           iperf3), about a minute by estimate; CPU_IO_THREADS, CPU_REPEAT, CPU_SIZE
The steps stderr, model, fsdp and cpu have not yet run on the lent machine.
The first three should take about 3 minutes, which the default list's BUDGET
allows; alone: RUN_ALL_STEPS="probe stderr model fsdp cpu".

From a bundle (scripts/gpu_bundle.sh: out/gpu-bundle/tests/gpu/run_all.sh)
it sources the bundle's env.sh; from the repo it takes the programs from
BUILD_DIR (default build, relative to the repo). It never builds anything.

Environment:
  OUT           output folder (default: a new temp dir); gets summary.txt,
                details.txt, logs.tar.gz and nothing else
  PYTHON        default /opt/torch/.venv/bin/python3 if present, else python3
  BUILD_DIR     build folder when not run from a bundle (default build)
  WORLD         ranks (4); REDUCERS: reducers of the torch steps (WORLD)
  STEP_TIMEOUT  seconds one step may take (240), then TERM, KILL 10 s later
  BUDGET        seconds for the whole run (540); a step starts only with at
                least STEP_MIN (min(60, STEP_TIMEOUT)) seconds left after a
                15 s reserve, else it is SKIPPED, and gets what is left
  MAX_BYTES, PRELOAD_MAX_BYTES, TRAIN_STEPS   sizes, as above
  RUN_ALL_STEPS steps to run, in order (default: probe torch preload train
                wire failover rankloss perf stderr model fsdp cpu)
For tests: a step named sleep:N sleeps N seconds (in a child process whose
pid it writes to sleep.pid in its logs) and passes.

Exit status: 0 every step passed; 1 a step failed, timed out or was skipped;
2 the probe found no usable GPU (PyTorch without CUDA, no device, no torch
or no Python): later steps SKIPPED; 64 usage; 130/143 interrupted.
EOF
}
case ${1:-} in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) usage >&2; exit 64 ;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/gpu_env.sh"
source "$here/summary.sh"
trap - EXIT  # gpu_env.sh's trap is for steps; here the steps' groups are stopped below

STEP_TIMEOUT=${STEP_TIMEOUT:-240}
BUDGET=${BUDGET:-540}
STEP_MIN=${STEP_MIN:-$((STEP_TIMEOUT < 60 ? STEP_TIMEOUT : 60))}
steps=${RUN_ALL_STEPS:-probe torch preload train wire failover rankloss perf stderr model fsdp cpu}
if [ -z "${OUT:-}" ]; then OUT=$(mktemp -d /tmp/rs-gpu-XXXXXX); fi
mkdir -p "$OUT" || exit 64
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d /tmp/rs-gpu-logs-XXXXXX)
started=$SECONDS

# Each step runs as its own process group (timeout makes one), so stopping
# the group stops everything the step started, whatever state it is in.
step_pid=
interrupted=0
stop_step() {
  [ -n "$step_pid" ] || return 0
  kill -TERM -- "-$step_pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 -- "-$step_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$step_pid" 2>/dev/null
  wait "$step_pid" 2>/dev/null
  step_pid=
}
trap 'interrupted=143' TERM
trap 'interrupted=130' INT
trap 'stop_step; rm -rf "$work"' EXIT

# One step, in the process timeout starts; LOGS is the step's log folder.
# shellcheck disable=SC2317  # run by name, in bash -c
run_step() {
  case $1 in
    probe) bash "$RS_GPU_HERE/probe.sh" ;;
    torch) bash "$RS_GPU_HERE/run_torch_allreduce.sh" plugin ;;
    preload) MAX_BYTES=${PRELOAD_MAX_BYTES:-4194304} bash "$RS_GPU_HERE/run_torch_allreduce.sh" preload ;;
    train) STEPS=${TRAIN_STEPS:-20} bash "$RS_GPU_HERE/run_rs_train.sh" ;;
    wire) REDUCER_WIRE_DTYPE=bfloat16 MAX_BYTES=${WIRE_MAX_BYTES:-16777216} bash "$RS_GPU_HERE/run_torch_allreduce.sh" plugin ;;
    failover) bash "$RS_GPU_HERE/run_torch_faults.sh" reducer ;;
    rankloss) bash "$RS_GPU_HERE/run_torch_faults.sh" rank ;;
    perf) bash "$RS_GPU_HERE/run_torch_perf.sh" ;;
    stderr) bash "$RS_GPU_HERE/run_torch_stderr.sh" ;;
    model) bash "$RS_GPU_HERE/run_torch_model.sh" ddp ;;
    fsdp) bash "$RS_GPU_HERE/run_torch_model.sh" fsdp ;;
    cpu) bash "$RS_GPU_HERE/run_cpu_scaling.sh" ;;
    sleep:*) sleep "${1#sleep:}" & echo $! >"$LOGS/sleep.pid"; wait ;;
  esac
}
export -f run_step
export RS_GPU_HERE=$here
for s in $steps; do
  case $s in
    probe | torch | preload | train | wire | failover | rankloss | perf | stderr | model | fsdp | cpu | sleep:[0-9]*) ;;
    *) echo "run_all: unknown step '$s'" >&2; exit 64 ;;
  esac
done

names=() results=() secs=() reasons=()
record() { names+=("$1"); results+=("$2"); secs+=("$3"); reasons+=("$4"); }
stopped=
for s in $steps; do
  if [ -n "$stopped" ]; then record "$s" SKIPPED 0 "$stopped"; continue; fi
  remain=$((BUDGET - (SECONDS - started) - 15))
  if ((remain < STEP_MIN)); then
    record "$s" SKIPPED 0 "${remain} s left of BUDGET ${BUDGET} s, a step needs STEP_MIN ${STEP_MIN} s"
    continue
  fi
  t=$((STEP_TIMEOUT < remain ? STEP_TIMEOUT : remain))
  # A probe that hangs (a driver stuck in CUDA's init) must not eat the budget.
  [ "$s" != probe ] || t=$((t < 90 ? t : 90))
  dir=$work/${s//:/-}
  mkdir -p "$dir"
  echo "run_all: $s (timeout ${t} s)..." >&2
  t0=$SECONDS
  # shellcheck disable=SC2016  # $1 is bash -c's argument
  LOGS=$dir timeout --kill-after=10 "$t" bash -c 'run_step "$1"' run_step "$s" >"$dir/step.log" 2>&1 &
  step_pid=$!
  rc=0
  wait "$step_pid" || rc=$?
  if ((interrupted)); then
    stop_step
    record "$s" FAIL $((SECONDS - t0)) "interrupted (signal $((interrupted - 128)))"
    stopped="run_all.sh was interrupted"
    continue
  fi
  kill -KILL -- "-$step_pid" 2>/dev/null  # whatever outlived the step
  step_pid=
  why=$(grep -E "^(FAILED|SKIPPED|OK): " "$dir/step.log" | tail -1)
  [ -n "$why" ] || [ "$rc" -eq 0 ] || why="exit $rc: $(tail -1 "$dir/step.log")"
  case $rc in
    0) record "$s" PASS $((SECONDS - t0)) "${why#OK: }" ;;
    77) record "$s" SKIPPED $((SECONDS - t0)) "${why#SKIPPED: }" ;;
    124 | 137) record "$s" TIMEOUT $((SECONDS - t0)) "stopped after ${t} s; last words: $(last_words "$dir")" ;;
    *) record "$s" FAIL $((SECONDS - t0)) "${why#FAILED: }" ;;
  esac
  if [ "$s" = probe ] && [ "$rc" -ne 0 ]; then stopped="the probe failed: no GPU check can run"; fi
done

status=0
for i in "${!names[@]}"; do [ "${results[$i]}" = PASS ] || status=1; done
for i in "${!names[@]}"; do
  if [ "${names[$i]}" = probe ] && [ "${results[$i]}" != PASS ]; then status=2; fi
done
((interrupted)) && status=$interrupted

write_summary "$status" >"$OUT/summary.txt"
write_details >"$OUT/details.txt"
tar -czf "$OUT/logs.tar.gz" -C "$work" . 2>/dev/null || echo "run_all: could not write logs.tar.gz" >&2
cat "$OUT/summary.txt" "$OUT/details.txt"
echo "=== result: $(verdict "$status"); summary.txt, details.txt, logs.tar.gz in $OUT"
exit "$status"
