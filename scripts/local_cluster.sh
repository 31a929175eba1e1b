#!/usr/bin/env bash
# The main job: build reducerd, reducer-bench and rs-train, start a local
# cluster on 127.0.0.1 (reducers plus worker processes, one per rank), run an
# all-reduce sweep over sizes and data types with every element verified,
# print the benchmark table, then train a model data-parallel through the same
# reducers (rs-train, CPU backend, checked bit for bit against a
# single-process reference), and print a one-line verdict. Run it as root on a fresh Debian 12
# machine; it installs the packages it needs first. See --help.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/deps.sh
source "$ROOT/scripts/lib/deps.sh"
# shellcheck source=scripts/lib/procs.sh
source "$ROOT/scripts/lib/procs.sh"
WORKERS=${WORKERS:-4}
REDUCERS=${REDUCERS:-2}
MIN_BYTES=${MIN_BYTES:-4K}
MAX_BYTES=${MAX_BYTES:-64M}
DTYPES=${DTYPES:-float32,bfloat16,float16,int32,float64}
OP=${OP:-sum}
BENCH_ARGS=${BENCH_ARGS:-}
RUN_TIMEOUT=${RUN_TIMEOUT:-1200}
TRAIN_STEPS=${TRAIN_STEPS:-100}
TRAIN_ARGS=${TRAIN_ARGS:---verify}
# Its own folder: the test command configures build/ with tests and another
# build type, and the two must not reconfigure each other.
BUILD_DIR=${BUILD_DIR:-build-local}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR

usage() {
  cat <<EOF
Usage: $0 [--help]

Builds reducerd, reducer-bench and rs-train (Release, in \$BUILD_DIR), starts $REDUCERS reducers
and $WORKERS worker processes on 127.0.0.1 with a fresh random job token, runs an all-reduce
sweep with every element of every result checked and prints rank 0's table, then trains with
rs-train ($WORKERS ranks through the same reducers), prints a verdict, and stops everything it
started (also on Ctrl-C or failure). Installs its apt packages when missing
(needs root then). Prints the iperf3 single-stream loopback rate too, if iperf3 is installed.

Settings, from the environment (current value):
  WORKERS=$WORKERS        ranks, one reducer-bench process each
  REDUCERS=$REDUCERS       reducerd processes
  MIN_BYTES=$MIN_BYTES   MAX_BYTES=$MAX_BYTES   size sweep, doubling
  DTYPES=$DTYPES   comma list, or 'all'
  OP=$OP          sum, prod, max or min
  BENCH_ARGS='$BENCH_ARGS'   more reducer-bench flags, e.g. '--inflight 4 --iters 50'
  RUN_TIMEOUT=$RUN_TIMEOUT   seconds the whole sweep (and the training) may take before it is stopped
  TRAIN_STEPS=$TRAIN_STEPS   rs-train steps after the sweep; 0 skips training
  TRAIN_ARGS='$TRAIN_ARGS'   more rs-train flags, e.g. '--width 2048 --grad-dtype bfloat16'
  BUILD_DIR=$BUILD_DIR
Exit status: 0 when every operation succeeded, every element was right and the training
passed its checks.
EOF
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "unknown argument '$1'; see $0 --help" >&2; exit 2 ;;
esac

log() { echo "== $*"; }


build() {
  log "building reducerd, reducer-bench and rs-train in $BUILD_DIR"
  # -G only on the first configure: cmake refuses to change an existing tree's generator.
  local generator=()
  [[ -f $BUILD_DIR/CMakeCache.txt ]] || generator=(-G Ninja)
  cmake -S "$ROOT" -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DRS_BUILD_TESTS=OFF \
    -DRS_BUILD_BENCH=ON >/dev/null
  cmake --build "$BUILD_DIR" --target reducerd reducer-bench rs-train
}

# Processes we started, stopped by pid on any exit.
PIDS=()
WORKER_RC=()
IPERF_LINE=""
WORK=""
FAILED=1
cleanup() {
  trap '' INT TERM  # a second Ctrl-C must not cut the cleanup short
  # reducerd drains on SIGTERM (bounded by --drain-timeout); give everyone 5 s, then SIGKILL.
  rs_stop_pids 50 "${PIDS[@]}"
  if [[ -n $WORK ]]; then
    if ((FAILED)); then echo "logs kept in $WORK" >&2; else rm -rf "$WORK"; fi
  fi
}
trap cleanup EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

start_reducers() {
  local i pids=()
  for ((i = 0; i < REDUCERS; i++)); do
    "$BUILD_DIR/server/reducerd" --listen 127.0.0.1:0 --port-file "$WORK/reducer$i.port" \
      --job-token-file "$WORK/job-token" --op-timeout 30s --join-timeout 60s --drain-timeout 2s \
      >"$WORK/reducer$i.log" 2>&1 &
    pids+=($!)
    PIDS+=($!)
  done
  ADDRS=""
  for ((i = 0; i < REDUCERS; i++)); do
    local port="" tries
    for ((tries = 0; tries < 100; tries++)); do  # 10 s
      port=$(cat "$WORK/reducer$i.port" 2>/dev/null || true)
      [[ $port =~ ^[0-9]+$ ]] && break
      kill -0 "${pids[i]}" 2>/dev/null || break
      sleep 0.1
    done
    if ! [[ $port =~ ^[0-9]+$ ]]; then
      echo "reducer $i did not start; its log:" >&2
      cat "$WORK/reducer$i.log" >&2
      exit 1
    fi
    ADDRS+="${ADDRS:+,}127.0.0.1:$port"
  done
  log "reducers listening on $ADDRS"
}

# Loopback line rate for comparison with algbw; informational only.
measure_iperf3() {
  command -v iperf3 >/dev/null || return 0
  local port=$((20000 + RANDOM % 20000)) rate
  timeout 15 iperf3 -s -1 -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
  local server=$!
  PIDS+=("$server")
  sleep 0.5
  rate=$(timeout 10 iperf3 -c 127.0.0.1 -p "$port" -t 3 -P 1 -f g 2>/dev/null |
    awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Gbits/sec") printf "%s Gbit/s = %.2f GB/s", $i, $i / 8 }') || true
  wait "$server" 2>/dev/null || true
  IPERF_LINE="# iperf3 loopback, 1 TCP stream: ${rate:-measurement failed} (the line rate to compare algbw with)"
}

run_workers() {
  local r pids=() rc=0
  log "running $WORKERS workers: sizes $MIN_BYTES..$MAX_BYTES, dtypes $DTYPES, op $OP"
  for ((r = 0; r < WORKERS; r++)); do
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of flags
    timeout -k 5 "$RUN_TIMEOUT" "$BUILD_DIR/bench/reducer-bench" --reducers "$ADDRS" --world "$WORKERS" --rank "$r" \
      --job-token-file "$WORK/job-token" --session "local-cluster-$$" -b "$MIN_BYTES" -e "$MAX_BYTES" \
      -d "$DTYPES" -o "$OP" --check 1 --op-timeout 40s --connect-timeout 40s $BENCH_ARGS \
      >"$WORK/worker$r.out" 2>"$WORK/worker$r.err" &
    pids+=($!)
    PIDS+=($!)
  done
  # Rank 0's table as it grows; tail stops when rank 0 exits.
  tail -n +1 --pid="${pids[0]}" -f "$WORK/worker0.out" &
  PIDS+=($!)
  local tailer=$!
  for r in "${!pids[@]}"; do
    wait "${pids[r]}" || { WORKER_RC[r]=$?; rc=1; }
  done
  wait "$tailer" 2>/dev/null || true
  return $rc
}

# rs-train on the same reducers, one process per rank, configured only by the
# environment a launcher would set.
TRAIN_LINE=""
TRAIN_FAILED=0
run_training() {
  ((TRAIN_STEPS > 0)) || return 0
  local r pids=() rc=0 port=$((20000 + RANDOM % 20000))
  log "training: rs-train, $WORKERS ranks x $REDUCERS reducers, $TRAIN_STEPS steps ${TRAIN_ARGS}"
  for ((r = 0; r < WORKERS; r++)); do
    # shellcheck disable=SC2086  # TRAIN_ARGS is a list of flags
    RANK=$r WORLD_SIZE=$WORKERS MASTER_ADDR=127.0.0.1 MASTER_PORT=$port REDUCER_ADDRS=$ADDRS \
      REDUCER_JOB_TOKEN_FILE=$WORK/job-token timeout -k 5 "$RUN_TIMEOUT" "$BUILD_DIR/trainer/rs-train" \
      --steps "$TRAIN_STEPS" $TRAIN_ARGS >"$WORK/train$r.out" 2>"$WORK/train$r.err" &
    pids+=($!)
    PIDS+=($!)
  done
  tail -n +1 --pid="${pids[0]}" -f "$WORK/train0.out" &
  PIDS+=($!)
  local tailer=$!
  for r in "${!pids[@]}"; do
    if ! wait "${pids[r]}"; then
      rc=1
      echo "training rank $r failed:" >&2
      sed 's/^/  /' "$WORK/train$r.err" >&2
    fi
  done
  wait "$tailer" 2>/dev/null || true
  ((rc == 0)) || TRAIN_FAILED=1
  ((rc == 0)) && TRAIN_LINE="; trained $TRAIN_STEPS steps with weights identical on every rank"
  [[ $TRAIN_ARGS != *--verify* ]] || TRAIN_LINE+=" and equal to the single-process reference"
  return $rc
}

verdict() {
  local results wrong
  results=$(grep -c '^ ' "$WORK/worker0.out" || true)
  wrong=$(awk -F: '/^# Wrong elements/ { split($2, a, " "); print a[1] }' "$WORK/worker0.out")
  if [[ $1 -eq 0 && $wrong == 0 && $results -gt 0 ]]; then
    echo "all $results results verified ($WORKERS workers x $REDUCERS reducers, every element checked on every rank)$TRAIN_LINE"
    return 0
  fi
  if ((TRAIN_FAILED)); then
    echo "FAILED: the sweep passed ($results results verified) but the training failed (its errors above)" >&2
    return 1
  fi
  local r
  for r in "${!WORKER_RC[@]}"; do
    local why="exit status ${WORKER_RC[r]}"
    ((WORKER_RC[r] == 124 || WORKER_RC[r] == 137)) && why="stopped after RUN_TIMEOUT=${RUN_TIMEOUT}s"
    echo "worker $r failed ($why):" >&2
    sed 's/^/  /' "$WORK/worker$r.err" >&2
  done
  grep -h -E ' (warning|error) ' "$WORK"/reducer*.log 2>/dev/null | tail -n 5 | sed 's/^/  reducer: /' >&2 || true
  echo "FAILED after $results results; wrong elements: ${wrong:-not reported, the run did not finish}" >&2
  return 1
}

main() {
  # shellcheck disable=SC2119
  rs_install_deps
  build
  WORK=$(mktemp -d /tmp/reducer-cluster.XXXXXX)
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/job-token")
  measure_iperf3  # before the reducers, so nothing else competes for the CPU
  start_reducers
  local rc=0
  run_workers || rc=$?
  [[ -z $IPERF_LINE ]] || echo "$IPERF_LINE"
  ((rc != 0)) || run_training || rc=$?
  verdict "$rc" && FAILED=0
  return $FAILED
}

main "$@"
