#!/usr/bin/env bash
# Fault-injection trials on hosts in network namespaces (root, Linux).
# Each trial builds W worker hosts and R reducer hosts (one namespace each, on
# a bridge, links shaped to RATE), starts reducerd on the reducer hosts and
# reducer-bench (a fixed number of all-reduces, every element checked) on the
# worker hosts, and at a random moment hits one victim, a worker or a
# reducer, chosen at random, with one fault:
#   kill  SIGKILL               stop  SIGSTOP (a frozen process)
#   link  its eth0 set down     loss  10 % of its packets dropped each way
#                                     (iptables statistic) for LOSS_SECONDS
# Jitter is not injected: this needs netem (or a BPF program), which the
# kernels these trials run on may lack; see docs/reliability.md.
#
# What each trial asserts (T = LIVENESS, the workers' liveness timeout):
#   worker victim (kill, stop, link): fatal for the session. Every worker
#     that is not the frozen or killed victim exits non-zero within the
#     detection bound + 1 s (bound: 1.1 T, or 2.2 T with failover, the
#     reducers' grace for a silent worker); the survivors' errors name the
#     victim's rank, the cut-off victim's names the reducers. The surviving
#     reducers end the session within the same time and keep running.
#   reducer victim (kill, stop, link), failover on: every worker installs a
#     new epoch without the victim within 1.1 T + 1 s (a rank that lost it
#     logs its address and why), then finishes with exact results (exit 0). A cut-off reducer ends its session
#     within 2.2 T + 1 s and keeps running.
#   reducer victim, failover off: as a worker victim, the errors naming the
#     victim's address, bound 1.1 T.
#   loss: every worker finishes with exact results (exit 0); a reducer
#     victim may be failed over.
# Writes trials.csv and the logs to OUT; prints counts per fault and victim
# and the worst detection time; exits 1 if any trial broke its assertions,
# 77 (with the reason) where namespaces cannot be created.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
NS_PREFIX=${NS_PREFIX:-rsb$$}  # netns_lib.sh's naming, so ns_reap_stale finds ours
# shellcheck source=bench/netns/netns_lib.sh
source "$ROOT/bench/netns/netns_lib.sh"
# shellcheck source=scripts/lib/procs.sh
source "$ROOT/scripts/lib/procs.sh"

WORKERS=${WORKERS:-2}
REDUCERS=${REDUCERS:-2}
TRIALS=${TRIALS:-4}
FAULTS=${FAULTS:-kill stop link loss}
VICTIMS=${VICTIMS:-worker reducer}
FAILOVER=${FAILOVER:-1}
SEED=${SEED:-$RANDOM}
LIVENESS=${LIVENESS:-2}       # seconds: the workers' --liveness-timeout
RATE=${RATE:-200mbit}         # link shaping (tbf), so a job's length does not depend on the CPU
SIZE=${SIZE:-256K}            # bytes per all-reduce; 4M with 3 reducers and 6 workers got writes
                              # stuck on a lost reducer (pieces beyond the socket buffers)
ITERS=${ITERS:-200}           # all-reduces per job (2.5 s and more at 200mbit)
BENCH_ARGS=${BENCH_ARGS:-}    # more reducer-bench flags, e.g. '--inflight 8' or '--pattern collnet'
MOMENT_MS=${MOMENT_MS:-300-1500}  # the fault comes this long after the workers joined (random in range)
LOSS_SECONDS=${LOSS_SECONDS:-3}
JOB_DEADLINE=${JOB_DEADLINE:-60}  # seconds after the fault by which every job must be over
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
OUT=${OUT:-$BUILD_DIR/fault}

usage() {
  sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'
  cat <<EOF

Settings, from the environment (current value):
  TRIALS=$TRIALS SEED=$SEED   trials; the seed picks fault, victim and moment
  FAULTS='$FAULTS'  VICTIMS='$VICTIMS'  FAILOVER=$FAILOVER
  WORKERS=$WORKERS REDUCERS=$REDUCERS  LIVENESS=$LIVENESS (s)  RATE=$RATE
  SIZE=$SIZE ITERS=$ITERS  BENCH_ARGS='$BENCH_ARGS'  MOMENT_MS=$MOMENT_MS  LOSS_SECONDS=$LOSS_SECONDS  JOB_DEADLINE=$JOB_DEADLINE
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
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }

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
reducer_addr() { echo "$(ns_addr "$(reducer_host "$1")"):7450"; }
reducer_list() {
  local r out=()
  for ((r = 0; r < REDUCERS; r++)); do out+=("$(reducer_addr "$r")"); done
  (IFS=,; echo "${out[*]}")
}

# Starts reducers and workers for trial N and waits until every reducer has
# the session open; sets REDUCER_PIDS, WORKER_PIDS. Returns 1 if the job did
# not start.
start_job() {
  local n=$1 r w host
  REDUCER_PIDS=() WORKER_PIDS=()
  # Not ns_exec: a function would leave a bash in between, and $! must be
  # the process itself, for the signals.
  for ((r = 0; r < REDUCERS; r++)); do
    host=$(reducer_host "$r")
    ip netns exec "$(ns_name "$host")" "$BUILD_DIR/server/reducerd" --listen "$(reducer_addr "$r")" --threads 1 \
      --op-timeout 30s --join-timeout 20s --drain-timeout 1s --memory-limit 64MiB \
      >"$OUT/logs/t$n-reducer$r.log" 2>&1 &
    REDUCER_PIDS+=($!)
  done
  PIDS=("${REDUCER_PIDS[@]}")
  for ((r = 0; r < REDUCERS; r++)); do  # listening before any worker connects
    for _ in $(seq 200); do
      grep -qs "listening on" "$OUT/logs/t$n-reducer$r.log" && break
      sleep 0.05
    done
  done
  for ((w = 0; w < WORKERS; w++)); do
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of flags
    ip netns exec "$(ns_name "$w")" "$BUILD_DIR/bench/reducer-bench" --reducers "$(reducer_list)" --world "$WORKERS" \
      --rank "$w" --session "fault-$n" -b "$SIZE" -e "$SIZE" --iters "$ITERS" --warmup 0 --check 1 \
      --liveness-timeout "${LIVENESS}s" --failover "$FAILOVER" --op-timeout 30s --connect-timeout 20s \
      $BENCH_ARGS >"$OUT/logs/t$n-worker$w.log" 2>&1 &
    WORKER_PIDS+=($!)
  done
  PIDS+=("${WORKER_PIDS[@]}")
  for ((r = 0; r < REDUCERS; r++)); do  # every rank has joined every reducer
    for _ in $(seq 400); do
      grep -qs "session .* opened" "$OUT/logs/t$n-reducer$r.log" && break
      sleep 0.05
    done
    grep -qs "session .* opened" "$OUT/logs/t$n-reducer$r.log" || return 1
  done
}

# iptables rules in the victim's namespace dropping 10 % of what it sends
# and receives; prints the number of packets dropped when removed.
loss_rules() {
  local action=$1 host=$2 chain
  for chain in INPUT OUTPUT; do
    ns_exec "$host" iptables "$action" "$chain" -m statistic --mode random --probability 0.1 -j DROP
  done
}
loss_dropped() {
  ns_exec "$1" iptables -L -v -n -x | awk '/statistic/ { n += $1 } END { print n + 0 }'
}

# inject FAULT KIND INDEX: applies the fault to the victim.
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
    loss) loss_rules -A "$host" ;;
  esac
}

alive() { kill -0 "$1" 2>/dev/null && [[ $(ps -o stat= -p "$1" 2>/dev/null) != Z* ]]; }

# exit_code PID: the exit status of a child that has ended, in RC (no
# subshell: only this shell can wait for its children).
declare -A RCS=()
exit_code() {
  local rc=0
  if [[ -z ${RCS[$1]:-} ]]; then
    wait "$1" 2>/dev/null || rc=$?
    RCS[$1]=$rc
  fi
  RC=${RCS[$1]}
}

# The last error-like line of a worker's log.
worker_error() {
  grep -E "failed|error|wrong elements|Error" "$1" | tail -n 1 || true
}

# One trial; appends a line to trials.csv and prints its verdict.
run_trial() {
  local n=$1 fault=$2 kind=$3 victim=$4 moment_ms=$5
  local verdict=ok why="" detect="" bound_ms expect t0 w r pid log err first_err="" dropped=""
  local -a must_exit=()
  ns_setup $((WORKERS + REDUCERS)) "$RATE" ""
  if ! start_job "$n"; then
    verdict=FAIL why="the job did not start (reducer logs: $OUT/logs/t$n-reducer*.log)"
  fi
  local victim_pid victim_host victim_addr=""
  if [[ $kind == worker ]]; then
    victim_pid=${WORKER_PIDS[$victim]:-} victim_host=$victim
  else
    victim_pid=${REDUCER_PIDS[$victim]:-} victim_host=$(reducer_host "$victim") victim_addr=$(reducer_addr "$victim")
  fi
  # What this trial must show.
  if [[ $fault == loss ]]; then
    expect=finish bound_ms=0
  elif [[ $kind == reducer && $FAILOVER == 1 ]]; then
    expect=failover bound_ms=$((LIVENESS * 1100))
  else
    expect=fail
    if [[ $kind == worker && $FAILOVER == 1 ]]; then bound_ms=$((LIVENESS * 2200)); else bound_ms=$((LIVENESS * 1100)); fi
  fi
  if [[ $verdict == ok ]]; then
    sleep_ms "$moment_ms"
    for pid in "${WORKER_PIDS[@]}"; do
      alive "$pid" || { verdict=VOID why="the job ended before the fault (raise ITERS)"; break; }
    done
  fi
  if [[ $verdict == ok ]]; then
    inject "$fault" "$kind" "$victim"
    t0=$(now_ms)
    case "$expect" in
      fail)
        # Every worker but a killed or frozen victim exits, with an error.
        for w in "${!WORKER_PIDS[@]}"; do
          [[ $kind == worker && $w == "$victim" && $fault != link ]] || must_exit+=("$w")
        done
        local deadline=$((t0 + bound_ms + 1000)) left
        while (($(now_ms) < deadline)); do
          left=0
          for w in "${must_exit[@]}"; do alive "${WORKER_PIDS[$w]}" && left=1; done
          ((left)) || break
          sleep 0.05
        done
        detect=$(($(now_ms) - t0))
        for w in "${must_exit[@]}"; do
          log="$OUT/logs/t$n-worker$w.log"
          if alive "${WORKER_PIDS[$w]}"; then
            verdict=FAIL why="worker $w outlived the detection bound + 1 s ($((bound_ms + 1000)) ms)"
            continue
          fi
          err=$(worker_error "$log")
          [[ -n $first_err ]] || first_err=$err
          exit_code "${WORKER_PIDS[$w]}"
          if [[ $RC == 0 ]]; then
            verdict=FAIL why="worker $w exited 0 after a fatal fault"
          elif [[ $kind == worker && $w == "$victim" ]]; then
            grep -qE "reducer|$(ns_addr "$(reducer_host 0)")" <<<"$err" ||
              { verdict=FAIL why="the cut-off worker's error does not name the reducers: '${err:-<none>}'"; }
          elif [[ $kind == worker ]]; then
            grep -qE "rank $victim\b" <<<"$err" ||
              { verdict=FAIL why="worker $w's error does not name rank $victim: '${err:-<none>}'"; }
          else
            grep -qF "$victim_addr" <<<"$err" ||
              { verdict=FAIL why="worker $w's error does not name $victim_addr: '${err:-<none>}'"; }
          fi
        done
        # The surviving reducers end the session and keep running.
        for ((r = 0; r < REDUCERS; r++)); do
          [[ $kind == reducer && $r == "$victim" ]] && continue
          log="$OUT/logs/t$n-reducer$r.log"
          until grep -qE "session [0-9a-f]+ (failed|ended)" "$log" || (($(now_ms) > deadline)); do sleep 0.05; done
          if ! grep -qE "session [0-9a-f]+ (failed|ended)" "$log"; then
            verdict=FAIL why="reducer $r did not end the session within the detection bound + 1 s"
          elif ! alive "${REDUCER_PIDS[$r]}"; then
            verdict=FAIL why="reducer $r exited: a daemon must outlive its sessions"
          fi
        done
        ;;
      failover)
        # Every worker installs a new epoch without the victim, in time.
        local deadline=$((t0 + bound_ms + 1000)) left
        while (($(now_ms) < deadline)); do
          left=0
          for w in "${!WORKER_PIDS[@]}"; do
            grep -qs "installed" "$OUT/logs/t$n-worker$w.log" || left=1
          done
          ((left)) || break
          sleep 0.05
        done
        detect=$(($(now_ms) - t0))
        for w in "${!WORKER_PIDS[@]}"; do
          log="$OUT/logs/t$n-worker$w.log"
          if ! grep -qs "installed" "$log"; then
            # A job that ended before it needed the lost reducer is no failure.
            if ! alive "${WORKER_PIDS[$w]}" && exit_code "${WORKER_PIDS[$w]}" && [[ $RC == 0 ]]; then
              [[ $verdict == ok ]] && verdict=VOID why="worker $w finished before it needed the victim"
              continue
            fi
            verdict=FAIL why="worker $w installed no new epoch within 1.1 T + 1 s ($((bound_ms + 1000)) ms)"
          elif grep "installed" "$log" | tail -n 1 | grep -qF "$victim_addr"; then
            verdict=FAIL why="worker $w's new epoch still has $victim_addr: '$(grep installed "$log" | tail -n 1)'"
          fi
        done
        # The rank(s) that lost the victim say which reducer and why (the
        # others follow the coordinator's proposal).
        if [[ $verdict == ok ]] && ! grep -qsF "$victim_addr" <(cat "$OUT/logs/t$n-worker"*.log | grep "failing over"); then
          verdict=FAIL why="no worker's log names the lost reducer $victim_addr"
        fi
        ;;
    esac
    if [[ $fault == loss ]]; then
      sleep "$LOSS_SECONDS"
      dropped=$(loss_dropped "$victim_host")
      loss_rules -D "$victim_host"
    fi
    # Failover and loss trials: every job finishes with exact results. A
    # cut-off reducer ends its session and keeps running.
    if [[ $expect != fail ]]; then
      local deadline=$((t0 + JOB_DEADLINE * 1000)) left
      while (($(now_ms) < deadline)); do
        left=0
        for pid in "${WORKER_PIDS[@]}"; do alive "$pid" && left=1; done
        ((left)) || break
        sleep 0.1
      done
      for w in "${!WORKER_PIDS[@]}"; do
        log="$OUT/logs/t$n-worker$w.log"
        if alive "${WORKER_PIDS[$w]}"; then
          verdict=FAIL why="worker $w still running $JOB_DEADLINE s after the fault"
        elif exit_code "${WORKER_PIDS[$w]}" && [[ $RC != 0 ]]; then
          err=$(worker_error "$log")
          verdict=FAIL why="worker $w failed: '${err:-<no message>}'"
        elif grep -q "wrong elements" "$log"; then
          verdict=FAIL why="worker $w got wrong results"
        fi
      done
      if [[ $fault == link && $kind == reducer ]]; then
        log="$OUT/logs/t$n-reducer$victim.log"
        local rdeadline=$((t0 + LIVENESS * 2200 + 1000))
        until grep -qE "session [0-9a-f]+ (failed|ended)" "$log" || (($(now_ms) > rdeadline)); do sleep 0.05; done
        if ! grep -qE "session [0-9a-f]+ (failed|ended)" "$log"; then
          verdict=FAIL why="the cut-off reducer kept the session past 2.2 T + 1 s"
        elif ! alive "$victim_pid"; then
          verdict=FAIL why="the cut-off reducer exited: a daemon must outlive its sessions"
        fi
      fi
    fi
  fi
  for pid in "${STOPPED[@]}"; do kill -CONT "$pid" 2>/dev/null || true; done
  STOPPED=()
  rs_stop_pids 50 "${PIDS[@]}"  # reducerd drains for up to 1 s
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
  RCS=()
  ns_teardown
  echo "$n,$fault,$kind,$victim,$FAILOVER,$moment_ms,$detect,$bound_ms,$dropped,$verdict,\"$why\",\"${first_err//\"/\'}\"" >>"$OUT/trials.csv"
  printf '  trial %-4d %-4s %-7s %d at %4d ms: %s%s%s%s\n' "$n" "$fault" "$kind" "$victim" "$moment_ms" "$verdict" \
    "${detect:+, over in $detect ms (bound $bound_ms + 1000)}" "${dropped:+, $dropped packets dropped}" "${why:+ ($why)}"
  [[ $verdict != FAIL ]]
}

summary() {
  awk -F, 'NR > 1 {
      key = $2 "/" $3; n[key]++; v[key "," $10]++
      if ($7 != "" && $7 + 0 > worst[key]) worst[key] = $7 + 0
      if ($7 != "" && $7 + 0 > all) all = $7 + 0
    }
    END {
      printf "  %-16s %6s %6s %6s %6s %10s\n", "fault/victim", "trials", "ok", "FAIL", "void", "worst ms"
      for (k in n) printf "  %-16s %6d %6d %6d %6d %10s\n", k, n[k], v[k ",ok"], v[k ",FAIL"], v[k ",VOID"], \
        (k in worst) ? worst[k] : "-"
      printf "  worst time from fault to detection (or failover installed): %d ms\n", all
    }' "$OUT/trials.csv"
}

main() {
  local why
  if ! why=$(ns_can_create); then
    echo "SKIPPED: $why; the fault-injection trials need root and network namespaces" >&2
    exit 77
  fi
  if [[ " $FAULTS " == *" loss "* ]] && ! command -v iptables >/dev/null; then
    echo "SKIPPED: iptables is not installed (the loss trials need it; or set FAULTS without loss)" >&2
    exit 77
  fi
  for bin in server/reducerd bench/reducer-bench; do
    [[ -x $BUILD_DIR/$bin ]] || { echo "no $BUILD_DIR/$bin: build it first (ninja -C $BUILD_DIR reducerd reducer-bench)" >&2; exit 1; }
  done
  ns_reap_stale
  mkdir -p "$OUT/logs"
  rm -f "$OUT"/trials.csv "$OUT"/logs/*
  echo "trial,fault,victim_kind,victim,failover,moment_ms,detect_ms,bound_ms,dropped,verdict,why,error" >"$OUT/trials.csv"
  trap cleanup EXIT
  trap 'echo "interrupted" >&2; exit 130' INT TERM
  RANDOM=$SEED
  read -r -a faults <<<"$FAULTS"
  read -r -a victims <<<"$VICTIMS"
  local lo=${MOMENT_MS%-*} hi=${MOMENT_MS#*-}
  log "$TRIALS trials, seed $SEED, $WORKERS workers + $REDUCERS reducers, liveness ${LIVENESS} s, failover $FAILOVER"
  local n failed=0 fault kind index moment
  for ((n = 0; n < TRIALS; n++)); do
    fault=${faults[RANDOM % ${#faults[@]}]}
    kind=${victims[RANDOM % ${#victims[@]}]}
    if [[ $kind == worker ]]; then index=$((RANDOM % WORKERS)); else index=$((RANDOM % REDUCERS)); fi
    moment=$((lo + RANDOM % (hi - lo + 1)))
    run_trial "$n" "$fault" "$kind" "$index" "$moment" || failed=$((failed + 1))
  done
  summary
  log "$((TRIALS - failed)) of $TRIALS trials held (seed $SEED); $OUT/trials.csv"
  ((failed == 0)) || exit 1
}

main "$@"
