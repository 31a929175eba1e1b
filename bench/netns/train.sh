#!/usr/bin/env bash
# rs-train on the network-namespace cluster (root, Linux): W worker hosts run
# one rs-train rank each (CPU backend), R reducer hosts run reducerd, every
# link shaped to RATE both ways (netns_lib.sh). Also times the same model on
# one rank without communication, for the compute alone. Prints rank 0's
# progress and writes $OUT/train.md with step time, all-reduce time and
# algbw, and the share of the step spent waiting for communication.
# Everything it creates is removed on exit. See --help.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=bench/netns/netns_lib.sh
source "$HERE/netns_lib.sh"
# shellcheck source=bench/netns/phases.sh
source "$HERE/phases.sh"
# shellcheck source=scripts/lib/procs.sh
source "$ROOT/scripts/lib/procs.sh"

WORKERS=${WORKERS:-4}
REDUCERS=${REDUCERS:-4}
RATE=${RATE:-1gbit}
DELAY=${DELAY:-}
STEPS=${STEPS:-30}
TRAIN_ARGS=${TRAIN_ARGS:-}
CLIENT_ARGS=${CLIENT_ARGS:---streams 1 --max-piece 128K --send-window 512K}
REDUCERD_ARGS=${REDUCERD_ARGS:---memory-limit 512MiB}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
BUILD_DIR=${BUILD_DIR:-$ROOT/build-perf}
OUT=${OUT:-$ROOT/bench/results/train-w${WORKERS}-r${REDUCERS}-${RATE}}
NS_DELAY_LINE=${NS_DELAY_LINE:-$BUILD_DIR/bench/rs-delay-line}

usage() {
  cat <<EOF
Usage: [VAR=value ...] $0 [--help]

Builds $WORKERS worker hosts and $REDUCERS reducer hosts as network namespaces on a bridge,
links shaped to RATE both ways, trains with rs-train (one rank per worker host) and writes
\$OUT/train.md. Needs root and iproute2. Exit status: 0 on success, 77 when namespaces
cannot be created here (with the reason), 1 on any failure (logs kept in \$OUT/logs).

Settings, from the environment (current value):
  WORKERS=$WORKERS REDUCERS=$REDUCERS   hosts of each kind
  RATE=$RATE   per-link rate both ways, e.g. 1gbit, 500mbit; 0 = unshaped
  DELAY=$DELAY   one-way delay per link direction, e.g. 1ms (netem, or rs-delay-line where the
                kernel has no netem; NS_DELAY_IMPL=$NS_DELAY_IMPL: auto, netem or userspace)
  STEPS=$STEPS   training steps (the summary leaves out the first two)
  TRAIN_ARGS='$TRAIN_ARGS'   more rs-train flags, e.g. '--width 2048 --bucket-mb 25'
  CLIENT_ARGS='$CLIENT_ARGS'   the client's settings (the all-reduce harness's)
  REDUCERD_ARGS='$REDUCERD_ARGS'
  RUN_TIMEOUT=$RUN_TIMEOUT   seconds the training may take
  BUILD_DIR=$BUILD_DIR   (built here when reducerd or rs-train is missing)
  OUT=$OUT
EOF
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "unknown argument '$1'; see $0 --help" >&2; exit 2 ;;
esac

log() { echo "== $*"; }

PIDS=()
FAILED=1
TOKEN_FILE=""
LOAD_BEFORE=""
cleanup() {
  trap '' INT TERM
  rs_stop_pids 30 "${PIDS[@]}"
  ns_teardown
  [[ -z $TOKEN_FILE ]] || rm -f "$TOKEN_FILE"
  ((FAILED)) && [[ -d ${OUT:-}/logs ]] && echo "logs kept in $OUT/logs" >&2
  return 0
}

build_if_missing() {
  local targets=()
  [[ -x $BUILD_DIR/server/reducerd && -x $BUILD_DIR/trainer/rs-train ]] || targets=(reducerd rs-train)
  [[ $NS_DELAY_USED != userspace || -x $NS_DELAY_LINE ]] || targets+=(rs-delay-line)
  ((${#targets[@]})) || return 0
  log "building ${targets[*]} in $BUILD_DIR"
  local generator=()
  [[ -f $BUILD_DIR/CMakeCache.txt ]] || generator=(-G Ninja)
  cmake -S "$ROOT" -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" --target "${targets[@]}"
}

# train.md from rank 0's JSON output and the one-rank run's.
write_report() {
  python3 - "$OUT/logs/train-rank0.out" "$OUT/logs/alone.out" "$OUT/train.md" <<PY
import json, sys

def read(path):
    start = summary = None
    for line in open(path):
        if line.startswith("{"):
            j = json.loads(line)
            start = j if j.get("event") == "start" else start
            summary = j if j.get("event") == "summary" else summary
    return start, summary

(start, s), (_, alone) = read(sys.argv[1]), read(sys.argv[2])
delay = " + $DELAY" if "$DELAY" else ""
with open(sys.argv[3], "w") as out:
    out.write(f"# rs-train on the netns cluster: $WORKERS workers + $REDUCERS reducers, links $RATE{delay}\n\n")
    out.write("Command: \`sudo WORKERS=$WORKERS REDUCERS=$REDUCERS RATE=$RATE STEPS=$STEPS"
              + (" TRAIN_ARGS='$TRAIN_ARGS'" if "$TRAIN_ARGS" else "") + " bench/netns/train.sh\`\n\n")
    out.write(f"Model: {start['model']}, {s['grad_bytes'] / 2**20:.1f} MiB of float32 gradients in "
              f"{start['buckets']} buckets; {start['backend']}; client $CLIENT_ARGS; $(nproc) cores, load average "
              f"$LOAD_BEFORE before the run. "
              f"Rank 0's figures, averaged over steps 3-$STEPS.\n\n")
    out.write("| | step (ms) | all-reduce (ms) | algbw (GB/s) | waiting for communication | loss |\n")
    out.write("|---|---:|---:|---:|---:|---|\n")
    out.write(f"| $WORKERS ranks through $REDUCERS reducers | {s['step_ms']:.1f} | {s['allreduce_ms']:.1f} | "
              f"{s['algbw_gbs']:.3f} | {s['comm_wait_share'] * 100:.0f} % | "
              f"{s['first_loss']:.4f} -> {s['last_loss']:.4f} |\n")
    out.write(f"| 1 rank, no communication | {alone['step_ms']:.1f} | | | | "
              f"{alone['first_loss']:.4f} -> {alone['last_loss']:.4f} |\n\n")
    out.write(f"Weights identical on every rank at {s['checks']} checks.\n")
PY
}

main() {
  local why
  if ! why=$(ns_can_create); then
    echo "SKIPPED: $why; the harness needs root and network namespaces" >&2
    exit 77
  fi
  ns_choose_delay "$DELAY" || exit 1
  build_if_missing
  mkdir -p "$OUT/logs"
  rm -f "$OUT"/logs/*
  trap cleanup EXIT
  trap 'echo "interrupted" >&2; exit 130' INT TERM
  log "building $((WORKERS + REDUCERS)) hosts in namespaces ${NS_PREFIX}-*, links $RATE${DELAY:+ + $DELAY}"
  NS_DELAY_LOG=$OUT/logs/delay-line.log
  ns_setup $((WORKERS + REDUCERS)) "$RATE" "$DELAY"
  TOKEN_FILE=$(mktemp /tmp/rs-netns-token.XXXXXX)
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TOKEN_FILE"

  LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)
  log "compute alone: one rank, no reducers, $STEPS steps"
  # shellcheck disable=SC2086  # TRAIN_ARGS is a list of flags
  ns_exec 0 timeout "$RUN_TIMEOUT" "$BUILD_DIR/trainer/rs-train" --steps "$STEPS" --json $TRAIN_ARGS \
    >"$OUT/logs/alone.out" 2>&1

  start_reducers
  log "training: $WORKERS rs-train ranks -> reducers $ADDRS, $STEPS steps"
  local r pids=() ok=0
  for ((r = 0; r < WORKERS; r++)); do
    # shellcheck disable=SC2086  # flag lists
    ip netns exec "$(ns_name "$r")" env RANK=$r WORLD_SIZE="$WORKERS" MASTER_ADDR="$(ns_addr 0)" MASTER_PORT=29400 \
      REDUCER_ADDRS="$ADDRS" REDUCER_JOB_TOKEN_FILE="$TOKEN_FILE" timeout -k 5 "$RUN_TIMEOUT" \
      "$BUILD_DIR/trainer/rs-train" --steps "$STEPS" --json --log-every 5 $CLIENT_ARGS $TRAIN_ARGS \
      >"$OUT/logs/train-rank$r.out" 2>"$OUT/logs/train-rank$r.err" &
    pids+=($!)
    PIDS+=($!)
  done
  for ((r = 0; r < WORKERS; r++)); do
    wait "${pids[r]}" || { echo "rank $r failed:" >&2; tail -5 "$OUT/logs/train-rank$r.err" >&2; ok=1; }
  done
  link_stats train
  stop_reducers
  cat "$OUT/logs/train-rank0.out"
  ((ok == 0)) || exit 1
  write_report
  cat "$OUT/train.md"
  FAILED=0
}

main "$@"
