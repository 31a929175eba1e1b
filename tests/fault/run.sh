#!/usr/bin/env bash
# Fault-injection trials on hosts in network namespaces (root, Linux): W worker
# hosts run a long all-reduce loop (reducer-bench) through R reducer hosts
# (reducerd); at a random moment one victim (a worker or a reducer) is
# killed, frozen (SIGSTOP), cut off (its link set down) or given 10 % loss and
# 50 ms jitter. Each trial then asserts what a user relies on:
#   - every worker that must stop does so within the detection bound + 1 s
#     of the fault, with an error that names the cause;
#   - the surviving reducers end the session within the same bound (their
#     log says why) and keep running;
#   - with loss and jitter the job goes on: no process fails.
# Today's behaviour is that a lost peer fails the job (no failover); the
# expectations live in expect_outcome below, one line per fault and victim.
# Writes trials.csv and a summary to $OUT; exits 1 if any trial broke its
# assertion, 77 (with the reason) where namespaces cannot be created.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=bench/netns/netns_lib.sh
source "$ROOT/bench/netns/netns_lib.sh"
# shellcheck source=scripts/lib/procs.sh
source "$ROOT/scripts/lib/procs.sh"

WORKERS=${WORKERS:-2}
REDUCERS=${REDUCERS:-2}
TRIALS=${TRIALS:-8}
FAULTS=${FAULTS:-kill stop link loss}
VICTIMS=${VICTIMS:-worker reducer}
SEED=${SEED:-$RANDOM}
BOUND=${BOUND:-5}            # detection bound (s): the reducers' --op-timeout and the workers' --timeout
WARMUP_MS=${WARMUP_MS:-1500} # the fault comes at a random moment between WARMUP_MS and twice that
LOSS_SECONDS=${LOSS_SECONDS:-4}
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
OUT=${OUT:-$ROOT/build/fault}

usage() {
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  cat <<EOF

Settings, from the environment (current value):
  WORKERS=$WORKERS REDUCERS=$REDUCERS   hosts of each kind
  TRIALS=$TRIALS SEED=$SEED       trials, and the seed that picks fault, victim and moment
  FAULTS='$FAULTS'  VICTIMS='$VICTIMS'
  BOUND=$BOUND        detection bound in seconds
  WARMUP_MS=$WARMUP_MS LOSS_SECONDS=$LOSS_SECONDS
  BUILD_DIR=$BUILD_DIR (needs server/reducerd and bench/reducer-bench)
  OUT=$OUT
EOF
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "unknown argument '$1'; see $0 --help" >&2; exit 2 ;;
esac

log() { echo "== $*"; }
now_ms() { date +%s%3N; }

PIDS=()
STOPPED=()
cleanup() {
  trap '' INT TERM
  local pid
  for pid in "${STOPPED[@]}"; do kill -CONT "$pid" 2>/dev/null || true; done
  rs_stop_pids 20 "${PIDS[@]}"
  ns_teardown
}

reducer_host() { echo $((WORKERS + $1)); }
reducer_list() {
  local r out=()
  for ((r = 0; r < REDUCERS; r++)); do out+=("$(ns_addr "$(reducer_host "$r")"):7450"); done
  (IFS=,; echo "${out[*]}")
}

# netem_works: 0 when tc's netem (loss, delay) is available (the sch_netem module).
netem_works() {
  local probe="rsnetem$$" ok=0
  ip netns add "$probe" || { echo "cannot create a namespace"; return 1; }
  ip netns exec "$probe" tc qdisc add dev lo root netem loss 1% 2>/dev/null || ok=1
  ip netns del "$probe"
  ((ok == 0)) || echo "tc netem is not available here (kernel module sch_netem)"
  return "$ok"
}

# expect_outcome FAULT VICTIM: what the workers must do, today.
#   fail: every worker still running exits non-zero within BOUND + 1 s, its
#         error matching the cause pattern printed after the colon
#   run:  no process fails while the fault lasts
expect_outcome() {
  case "$1/$2" in
    kill/reducer) echo "fail:reducer|closed|reset|connection" ;;
    kill/worker) echo "fail:rank [0-9]+|disconnected|left" ;;
    stop/* | link/*) echo "fail:timed out|timeout|never contributed|disconnected" ;;
    loss/*) echo "run" ;;
    *) echo "unknown fault '$1/$2'" >&2; return 1 ;;
  esac
}

# Starts reducers and workers for trial N; sets REDUCER_PIDS, WORKER_PIDS.
start_job() {
  local n=$1 r w host
  REDUCER_PIDS=() WORKER_PIDS=()
  # Not ns_exec: a function would leave a bash in between, and $! must be
  # the process itself, for the signals.
  for ((r = 0; r < REDUCERS; r++)); do
    host=$(reducer_host "$r")
    ip netns exec "$(ns_name "$host")" "$BUILD_DIR/server/reducerd" --listen "$(ns_addr "$host"):7450" --threads 1 \
      --op-timeout "${BOUND}s" --join-timeout "${BOUND}s" --drain-timeout 1s --memory-limit 64MiB \
      >"$OUT/logs/t$n-reducer$r.log" 2>&1 &
    REDUCER_PIDS+=($!)
  done
  for ((r = 0; r < REDUCERS; r++)); do  # listening before any worker connects
    for _ in $(seq 100); do
      grep -qs "listening on" "$OUT/logs/t$n-reducer$r.log" && break
      sleep 0.05
    done
  done
  for ((w = 0; w < WORKERS; w++)); do
    ip netns exec "$(ns_name "$w")" "$BUILD_DIR/bench/reducer-bench" --reducers "$(reducer_list)" --world "$WORKERS" --rank "$w" \
      --session "fault-$n" -b 256K -e 256K --iters 1000000 --warmup 0 --check 1 --timeout "${BOUND}s" \
      >"$OUT/logs/t$n-worker$w.log" 2>&1 &
    WORKER_PIDS+=($!)
  done
  PIDS=("${REDUCER_PIDS[@]}" "${WORKER_PIDS[@]}")
}

# inject FAULT VICTIM_KIND INDEX: applies the fault to the victim.
inject() {
  local fault=$1 kind=$2 i=$3 host pid
  if [[ $kind == worker ]]; then host=$i pid=${WORKER_PIDS[$i]}; else host=$(reducer_host "$i") pid=${REDUCER_PIDS[$i]}; fi
  case "$fault" in
    kill)
      kill -KILL "$pid"
      wait "$pid" 2>/dev/null || true  # reaped here, without bash's "Killed" line
      ;;
    stop) kill -STOP "$pid"; STOPPED+=("$pid") ;;
    link) ns_exec "$host" ip link set eth0 down ;;
    loss) ns_exec "$host" tc qdisc replace dev eth0 root netem loss 10% delay 50ms 50ms ;;
  esac
}

# Waits until every pid has exited or `deadline_ms` passes; prints the time
# (ms) of the last exit, or nothing if one is still running.
wait_exits() {
  local deadline_ms=$1 pid alive
  shift
  while (($(now_ms) < deadline_ms)); do
    alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    if ((!alive)); then
      now_ms
      return 0
    fi
    sleep 0.05
  done
  return 0
}

# One trial; appends a line to trials.csv and prints its verdict.
run_trial() {
  local n=$1 fault=$2 kind=$3 victim=$4 moment_ms=$5 expect pattern t0 done_ms detect verdict=ok why="" first_err=""
  local survivors=() w log err
  ns_setup $((WORKERS + REDUCERS)) 0 ""
  start_job "$n"
  sleep "$(printf '%d.%03d' $((moment_ms / 1000)) $((moment_ms % 1000)))"  # the random moment itself
  inject "$fault" "$kind" "$victim"
  t0=$(now_ms)
  expect=$(expect_outcome "$fault" "$kind")
  for w in "${!WORKER_PIDS[@]}"; do
    [[ $kind == worker && $w == "$victim" && $fault =~ ^(kill|stop)$ ]] || survivors+=("${WORKER_PIDS[$w]}")
  done
  if [[ $expect == run ]]; then
    done_ms=$(wait_exits $((t0 + LOSS_SECONDS * 1000)) "${survivors[@]}")
    if [[ -n $done_ms ]] || ! kill -0 "${survivors[0]}" 2>/dev/null; then
      verdict=FAIL why="a worker stopped under loss and jitter"
    fi
    detect=""
  else
    pattern=${expect#fail:}
    done_ms=$(wait_exits $((t0 + (BOUND + 1) * 1000)) "${survivors[@]}")
    if [[ -z $done_ms ]]; then
      verdict=FAIL why="a worker outlived the detection bound + 1 s"
      detect=""
    else
      detect=$((done_ms - t0))
      for w in "${!WORKER_PIDS[@]}"; do
        [[ " ${survivors[*]} " == *" ${WORKER_PIDS[$w]} "* ]] || continue
        log="$OUT/logs/t$n-worker$w.log"
        err=$(grep -iE "error|failed|timed out" "$log" | tail -n 1 || true)
        [[ -n $first_err ]] || first_err=$err
        if ! grep -qE "$pattern" <<<"$err"; then
          verdict=FAIL why="worker $w's error does not name the cause: '${err:-<none>}'"
        fi
      done
    fi
  fi
  if [[ $verdict == ok && $expect != run ]]; then
    local r rlog
    for ((r = 0; r < REDUCERS; r++)); do
      [[ $kind == reducer && $r == "$victim" ]] && continue
      rlog="$OUT/logs/t$n-reducer$r.log"
      until grep -qE "session [0-9a-f]+ (failed|ended)" "$rlog" || (($(now_ms) > t0 + (BOUND + 1) * 1000)); do
        sleep 0.05
      done
      if ! grep -qE "session [0-9a-f]+ (failed|ended)" "$rlog"; then
        verdict=FAIL why="reducer $r did not end the session within the detection bound + 1 s"
      elif ! kill -0 "${REDUCER_PIDS[$r]}" 2>/dev/null; then
        verdict=FAIL why="reducer $r exited: a daemon must outlive its sessions"
      fi
    done
  fi
  for pid in "${STOPPED[@]}"; do kill -CONT "$pid" 2>/dev/null || true; done
  STOPPED=()
  rs_stop_pids 50 "${PIDS[@]}"  # reducerd drains for up to 1 s + 2 s
  PIDS=()
  ns_teardown
  echo "$n,$fault,$kind$victim,$moment_ms,${detect},$verdict,\"$why\",\"${first_err//\"/\'}\"" >>"$OUT/trials.csv"
  printf '  trial %-3d %-5s %-9s at %5d ms: %s%s%s\n' "$n" "$fault" "$kind$victim" "$moment_ms" "$verdict" \
    "${detect:+, detected in $detect ms}" "${why:+ ($why)}"
  [[ $verdict == ok ]]
}

main() {
  local why
  if ! why=$(ns_can_create); then
    echo "SKIPPED: $why; the fault-injection trials need root and network namespaces" >&2
    exit 77
  fi
  for bin in server/reducerd bench/reducer-bench; do
    [[ -x $BUILD_DIR/$bin ]] || { echo "no $BUILD_DIR/$bin: build it first (ninja -C $BUILD_DIR reducerd reducer-bench)" >&2; exit 1; }
  done
  if [[ " $FAULTS " == *" loss "* ]] && ! why=$(netem_works); then
    echo "note: no 'loss' trials: $why" >&2
    FAULTS=${FAULTS//loss/}
  fi
  mkdir -p "$OUT/logs"
  rm -f "$OUT"/trials.csv "$OUT"/logs/*
  echo "trial,fault,victim,moment_ms,detect_ms,verdict,why,error" >"$OUT/trials.csv"
  trap cleanup EXIT
  trap 'echo "interrupted" >&2; exit 130' INT TERM
  RANDOM=$SEED
  read -r -a faults <<<"$FAULTS"
  read -r -a victims <<<"$VICTIMS"
  log "$TRIALS trials, seed $SEED, $WORKERS workers + $REDUCERS reducers, detection bound ${BOUND} s"
  local n failed=0 fault kind index moment
  for ((n = 0; n < TRIALS; n++)); do
    fault=${faults[RANDOM % ${#faults[@]}]}
    kind=${victims[RANDOM % ${#victims[@]}]}
    if [[ $kind == worker ]]; then index=$((RANDOM % WORKERS)); else index=$((RANDOM % REDUCERS)); fi
    moment=$((WARMUP_MS + RANDOM % (WARMUP_MS + 1)))
    run_trial "$n" "$fault" "$kind" "$index" "$moment" || failed=$((failed + 1))
  done
  local worst
  worst=$(awk -F, 'NR > 1 && $5 != "" { if ($5 > m) m = $5 } END { print m + 0 }' "$OUT/trials.csv")
  log "$((TRIALS - failed)) of $TRIALS trials held; worst detection ${worst} ms (bound $((BOUND * 1000)) ms + 1 s); $OUT/trials.csv"
  ((failed == 0)) || exit 1
}

main "$@"
