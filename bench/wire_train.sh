#!/usr/bin/env bash
# Trains rs-train twice on the same seed, wire 'off' (float32 gradients) then
# 'bfloat16', 4 CPU ranks through 2 local reducerd processes on 127.0.0.1 with a
# job token, and keeps rank 0's JSON progress lines, so that the two loss curves
# can be compared (bench/wire_train_plot.py draws them). See --help.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/procs.sh
source "$ROOT/scripts/lib/procs.sh"
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
OUT_DIR=${OUT_DIR:-$ROOT/bench/results/wire-bf16-numerics-training}
WORKERS=${WORKERS:-4}
REDUCERS=${REDUCERS:-2}
STEPS=${STEPS:-500}
WIRES=${WIRES:-off,bfloat16}
TRAIN_ARGS=${TRAIN_ARGS:---width 1024 --depth 4 --batch 32 --seed 1 --log-every 1 --verify}
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}

usage() {
  cat <<USAGE
Usage: $0 [--help]

For each wire type in \$WIRES: starts $REDUCERS reducerd on 127.0.0.1 with a fresh job token,
runs rs-train with $WORKERS ranks for $STEPS steps (same seed, --wire-dtype set), writes rank 0's
JSON lines to \$OUT_DIR/train-<wire>.jsonl, and stops everything it started.
Settings, from the environment (current value):
  BUILD_DIR=$BUILD_DIR   (needs server/reducerd and trainer/rs-train)
  OUT_DIR=$OUT_DIR
  WORKERS=$WORKERS  REDUCERS=$REDUCERS  STEPS=$STEPS  WIRES=$WIRES
  TRAIN_ARGS='$TRAIN_ARGS'
  RUN_TIMEOUT=$RUN_TIMEOUT   seconds one training may take
Exit status: 0 when every training passed its checks (and --verify's, when given).
USAGE
}
case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "unknown argument '$1'; see $0 --help" >&2; exit 2 ;;
esac

PIDS=()
WORK=$(mktemp -d /tmp/wire-train.XXXXXX)
cleanup() { rs_stop_pids 50 "${PIDS[@]}"; }
trap cleanup EXIT
mkdir -p "$OUT_DIR"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/job-token")

train_one() {
  local wire=$1 i r addrs="" pids=() rc=0 port=$((20000 + RANDOM % 20000))
  for ((i = 0; i < REDUCERS; i++)); do
    rm -f "$WORK/reducer$i.port"
    "$BUILD_DIR/server/reducerd" --listen 127.0.0.1:0 --port-file "$WORK/reducer$i.port" \
      --job-token-file "$WORK/job-token" --op-timeout 30s --join-timeout 60s --drain-timeout 2s \
      >"$WORK/reducer$i-$wire.log" 2>&1 &
    PIDS+=($!)
  done
  for ((i = 0; i < REDUCERS; i++)); do
    local p="" tries
    for ((tries = 0; tries < 100; tries++)); do  # 10 s
      p=$(cat "$WORK/reducer$i.port" 2>/dev/null || true)
      [[ $p =~ ^[0-9]+$ ]] && break
      sleep 0.1
    done
    [[ $p =~ ^[0-9]+$ ]] || { echo "reducer $i did not start" >&2; cat "$WORK/reducer$i-$wire.log" >&2; return 1; }
    addrs+="${addrs:+,}127.0.0.1:$p"
  done
  echo "== wire $wire: $WORKERS ranks x $REDUCERS reducers ($addrs), $STEPS steps, $TRAIN_ARGS"
  for ((r = 0; r < WORKERS; r++)); do
    # shellcheck disable=SC2086  # TRAIN_ARGS is a list of flags
    RANK=$r WORLD_SIZE=$WORKERS MASTER_ADDR=127.0.0.1 MASTER_PORT=$port REDUCER_ADDRS=$addrs \
      REDUCER_JOB_TOKEN_FILE=$WORK/job-token timeout -k 5 "$RUN_TIMEOUT" "$BUILD_DIR/trainer/rs-train" \
      --steps "$STEPS" --wire-dtype "$wire" --json $TRAIN_ARGS \
      >"$WORK/train$r-$wire.out" 2>"$WORK/train$r-$wire.err" &
    pids+=($!)
    PIDS+=($!)
  done
  for r in "${!pids[@]}"; do
    if ! wait "${pids[r]}"; then
      rc=1
      echo "rank $r failed:" >&2
      sed 's/^/  /' "$WORK/train$r-$wire.err" >&2
    fi
  done
  cp "$WORK/train0-$wire.out" "$OUT_DIR/train-$wire.jsonl"
  tail -n 1 "$OUT_DIR/train-$wire.jsonl"
  rs_stop_pids 50 "${PIDS[@]}"
  PIDS=()  # on an early return they stay listed, for cleanup
  return $rc
}

status=0
IFS=, read -r -a wires <<<"$WIRES"
for w in "${wires[@]}"; do train_one "$w" || status=1; done
rm -rf "$WORK"
exit $status
