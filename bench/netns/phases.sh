# shellcheck shell=bash
# The harness's phases (iperf3; ours, collnet, ddp on the reducers; gloo and
# gloo_ddp on a ring; torch_hook and torch_gloo, a real DDP step) and CPU
# accounting. Sourced by run.sh, which defines the settings, PIDS (stopped on
# exit) and the ns_* helpers.

CLK_TCK=$(getconf CLK_TCK)
TORCH_MASTER_PORT=${TORCH_MASTER_PORT:-29500}

now() { date +%s.%N; }

# "user system" CPU seconds a live process has used so far.
proc_cpu() {
  awk -v hz="$CLK_TCK" '{ sub(/^.*\) /, ""); printf "%.3f %.3f", $12 / hz, $13 / hz }' "/proc/$1/stat" 2>/dev/null ||
    echo 0 0
}

# Seconds a live process's threads have spent runnable but waiting for a CPU.
proc_runq() {
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ t += $2 } END { printf "%.3f", t / 1e9 }'
}

# "busy total kernel softirq" jiffies of the whole machine, from /proc/stat;
# kernel is system + irq + softirq, where the veth/bridge/tbf packet work is
# counted; softirq is irq + softirq, the part charged to no process.
machine_jiffies() {
  awk '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i; print t - $5 - $6, t, $4 + $7 + $8, $7 + $8 }' /proc/stat
}

# cpu_row PHASE PROCESS CPU WALL [USER SYS]
cpu_row() { echo "$1,$2,$3,$4,${5:-},${6:-}" >>"$OUT/cpu.csv"; }

# rs-delay-line's "user system" CPU seconds so far; empty without one.
delay_line_cpu() { [[ -z $NS_DELAY_LINE_PID ]] || proc_cpu "$NS_DELAY_LINE_PID"; }

# delay_line_row PHASE WALL START: rs-delay-line's CPU since START (a
# delay_line_cpu sample). It carries every link's frames both ways; its system
# time includes the bridge and tbf work of the frames it writes.
delay_line_row() {
  local c u s
  [[ -n $3 ]] || return 0
  read -r c u s <<<"$(cpu_delta "$3" "$(delay_line_cpu)")"
  cpu_row "$1" "rs-delay-line (every link; sys includes the bridge and tbf work)" "$c" "$2" "$u" "$s"
}

# cpu_delta "U0 S0" "U1 S1": "cpu user sys" between two proc_cpu samples.
cpu_delta() {
  awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); u = y[1] - x[1]; s = y[2] - x[2]
    printf "%.2f %.2f %.2f", u + s, u, s }'
}

# Machine-wide CPU between two machine_jiffies samples, as CPU seconds.
machine_row() {
  local phase=$1 wall=$2 b0 t0 k0 q0 b1 t1 k1 q1
  read -r b0 t0 k0 q0 <<<"$3"
  read -r b1 t1 k1 q1 <<<"$4"
  share() { awk -v b="$1" -v t=$((t1 - t0)) -v c="$CORES" -v w="$wall" 'BEGIN { printf "%.2f", t ? b / t * c * w : 0 }'; }
  local busy kernel
  busy=$(share $((b1 - b0)))
  kernel=$(share $((k1 - k0)))
  cpu_row "$phase" "all (whole machine incl. other users; ${CORES} cores)" "$busy" "$wall" \
    "$(awk -v b="$busy" -v k="$kernel" 'BEGIN { printf "%.2f", b - k }')" "$kernel"
  cpu_row "$phase" "of which kernel: system + irq + softirq (packet work)" "$kernel" "$wall"
  cpu_row "$phase" "of which irq + softirq (charged to no process)" "$(share $((q1 - q0)))" "$wall"
}

# run_accounted FILE HOST CMD...: runs CMD in HOST's namespace under the
# phase timeout; CMD's CPU seconds (user + system) end up in FILE.
run_accounted() {
  local file=$1 host=$2
  shift 2
  # shellcheck disable=SC2016  # expanded by the inner shell
  timeout -k 5 "$RUN_TIMEOUT" ip netns exec "$(ns_name "$host")" bash -c \
    '"$@"; rc=$?; times >"$0"; exit $rc' "$file" "$@"  # not "times | ...": a subshell has no children
}

# "cpu user sys" seconds in a file run_accounted wrote (times: "0m1.5s 0m0.2s", 2nd line).
accounted_cpu() {
  awk -F'[ms ]' 'NR == 2 { u = $1 * 60 + $2; s = $4 * 60 + $5; printf "%.2f %.2f %.2f", u + s, u, s; found = 1 }
    END { if (!found) print "0 0 0" }' "$1" 2>/dev/null || echo 0 0 0
}

CORES=$(nproc)

# The command that reproduces this run.
command_line() {
  local cmd="sudo WORKERS=$WORKERS REDUCERS=$REDUCERS RATE=$RATE${DELAY:+ DELAY=$DELAY}"
  [[ $NS_DELAY_IMPL == auto ]] || cmd+=" NS_DELAY_IMPL=$NS_DELAY_IMPL"
  [[ -z $NS_DELAY_LINE_ARGS ]] || cmd+=" NS_DELAY_LINE_ARGS='$NS_DELAY_LINE_ARGS'"
  [[ $NS_TCP_CC == cubic ]] || cmd+=" NS_TCP_CC=$NS_TCP_CC"
  [[ -z $NS_SLOW_START_AFTER_IDLE ]] || cmd+=" NS_SLOW_START_AFTER_IDLE=$NS_SLOW_START_AFTER_IDLE"
  [[ -z $NS_LOSS || $NS_LOSS == 0 ]] || cmd+=" NS_LOSS=$NS_LOSS"
  [[ $NS_TCP_RMEM == "$NS_TCP_RMEM_DEFAULT" ]] || cmd+=" NS_TCP_RMEM='$NS_TCP_RMEM'"
  [[ $NS_TCP_WMEM == "$NS_TCP_WMEM_DEFAULT" ]] || cmd+=" NS_TCP_WMEM='$NS_TCP_WMEM'"
  [[ $NS_TBF_LATENCY == 25ms ]] || cmd+=" NS_TBF_LATENCY=$NS_TBF_LATENCY"
  [[ $NS_HOST_TBF_LATENCY == 100ms ]] || cmd+=" NS_HOST_TBF_LATENCY=$NS_HOST_TBF_LATENCY"
  [[ -z $NS_GSO_BYTES ]] || cmd+=" NS_GSO_BYTES=$NS_GSO_BYTES"
  cmd+=" MIN_BYTES=$MIN_BYTES MAX_BYTES=$MAX_BYTES STEP=$STEP ITERS=$ITERS WARMUP=$WARMUP"
  [[ $PHASES == "$DEFAULT_PHASES" ]] || cmd+=" PHASES='$PHASES'"
  [[ -z $BIN_DIR ]] || cmd+=" BIN_DIR=$BIN_DIR"
  [[ $BENCH_ARGS == "$DEFAULT_BENCH_ARGS" ]] || cmd+=" BENCH_ARGS='$BENCH_ARGS'"
  [[ $REDUCERD_ARGS == "$DEFAULT_REDUCERD_ARGS" ]] || cmd+=" REDUCERD_ARGS='$REDUCERD_ARGS'"
  [[ $PHASES != *collnet* ]] || cmd+=" COLLNET_ARGS='$COLLNET_ARGS'"
  [[ $PHASES != *ddp* ]] || cmd+=" DDP_MODEL=$DDP_MODEL DDP_BUCKETS=$DDP_BUCKETS DDP_FIRST_BUCKET=$DDP_FIRST_BUCKET DDP_GAP=$DDP_GAP"
  [[ $PHASES != *ddp* || $DDP_FORWARD == 0 ]] || cmd+=" DDP_FORWARD=$DDP_FORWARD"
  [[ $PHASES != *torch_* ]] || cmd+=" TORCH_DDP_MODEL=$TORCH_DDP_MODEL TORCH_DDP_BUCKETS=$TORCH_DDP_BUCKETS TORCH_DDP_BATCH=$TORCH_DDP_BATCH"
  echo "$cmd bench/netns/run.sh"
}

write_meta() {
  local torch
  torch=$("$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo none)
  cat >"$OUT/meta.env" <<EOF
WORKERS=$WORKERS
REDUCERS=$REDUCERS
RATE=$RATE
DELAY=$DELAY
DELAY_IMPL=$NS_DELAY_USED
CORES=$CORES
TCP_CC=$(ns_tcp_cc)
SLOW_START_AFTER_IDLE=$(ns_slow_start_after_idle)
LOSS=${NS_LOSS:-0}
QUEUES=$NS_TBF_LATENCY $NS_HOST_TBF_LATENCY
GSO_BYTES=$NS_GSO_BYTES
IPERF_SECONDS=$IPERF_SECONDS
TORCH=$torch
OURS_FLAGS=$BENCH_ARGS, reducerd $REDUCERD_ARGS, iters $ITERS, warmup $WARMUP
COLLNET_FLAGS=$COLLNET_ARGS
DDP_FLAGS=model $DDP_MODEL, buckets $DDP_BUCKETS, first bucket $DDP_FIRST_BUCKET, compute gap $DDP_GAP, forward $DDP_FORWARD
TORCH_DDP_FLAGS=model $TORCH_DDP_MODEL of float32 parameters, bucket_cap_mb $TORCH_DDP_BUCKETS, batch $TORCH_DDP_BATCH per rank, iters $ITERS, warmup $WARMUP
COMMAND=$(command_line)
EOF
}

# Sizes of the sweep in bytes, as reducer-bench and gloo_allreduce.py walk it.
sweep_total_bytes() {
  "$PYTHON" - "$MIN_BYTES" "$MAX_BYTES" "$STEP" <<'EOF'
import sys
u = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
def size(t):
    t = t.upper().rstrip("B").rstrip("I")
    return int(t[:-1]) * u[t[-1]] if t[-1] in u else int(t)
lo, hi, f = size(sys.argv[1]), size(sys.argv[2]), int(sys.argv[3])
total = 0
while lo <= hi:
    total += lo // 4 * 4
    lo *= f
print(total)
EOF
}

phase_iperf() {
  log "iperf3: host 0 -> host 1, 1 TCP stream, ${IPERF_SECONDS} s"
  ns_exec 1 timeout $((IPERF_SECONDS + 20)) iperf3 -s -1 -B "$(ns_addr 1)" -p 5201 >"$OUT/logs/iperf-server.log" 2>&1 &
  PIDS+=($!)
  local server=$! tries
  for ((tries = 0; tries < 50; tries++)); do
    ns_exec 1 ss -Hltn "sport = :5201" | grep -q . && break
    sleep 0.1
  done
  if ! ns_exec 0 timeout $((IPERF_SECONDS + 15)) iperf3 -c "$(ns_addr 1)" -p 5201 -t "$IPERF_SECONDS" -J \
    >"$OUT/iperf.json" 2>"$OUT/logs/iperf-client.err"; then
    echo "iperf3 failed:" >&2
    cat "$OUT/logs/iperf-client.err" "$OUT/iperf.json" >&2
    exit 1
  fi
  wait "$server" 2>/dev/null || true
}

start_reducers() {
  local i h port tries
  REDUCER_PIDS=()
  ADDRS=""
  for ((i = 0; i < REDUCERS; i++)); do
    h=$((WORKERS + i))
    rm -f "$OUT/logs/reducer$i.port"
    # Not ns_exec: a function would leave a bash in between, and $! must be reducerd for its CPU.
    # shellcheck disable=SC2086  # REDUCERD_ARGS is a list of flags
    ip netns exec "$(ns_name "$h")" "$REDUCERD_BIN" --listen "$(ns_addr "$h"):0" --port-file "$OUT/logs/reducer$i.port" \
      --job-token-file "$TOKEN_FILE" --op-timeout 60s --join-timeout 60s --drain-timeout 1s \
      $REDUCERD_ARGS >"$OUT/logs/reducer$i.log" 2>&1 &
    PIDS+=($!)
    REDUCER_PIDS+=($!)
  done
  for ((i = 0; i < REDUCERS; i++)); do
    port=""
    for ((tries = 0; tries < 100; tries++)); do
      port=$(cat "$OUT/logs/reducer$i.port" 2>/dev/null || true)
      [[ $port =~ ^[0-9]+$ ]] && break
      sleep 0.1
    done
    [[ $port =~ ^[0-9]+$ ]] || { echo "reducer $i did not start:" >&2; cat "$OUT/logs/reducer$i.log" >&2; exit 1; }
    ADDRS+="${ADDRS:+,}$(ns_addr $((WORKERS + i))):$port"
  done
}

stop_reducers() {
  local pid
  for pid in "${REDUCER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${REDUCER_PIDS[@]}"; do timeout 10 tail --pid="$pid" -f /dev/null || kill -KILL "$pid" 2>/dev/null || true; done
}

# wait_workers PHASE NAME PIDS...: waits for every worker; records their CPU.
wait_workers() {
  local phase=$1 name=$2 r=0 rc=0 pid
  shift 2
  for pid in "$@"; do
    if ! wait "$pid"; then
      echo "$phase: $name rank $r failed; its output:" >&2
      tail -n 20 "$OUT/logs/$phase-rank$r.out" "$OUT/logs/$phase-rank$r.err" >&2 || true
      rc=1
    fi
    r=$((r + 1))
  done
  return $rc
}

# Queue drops and TCP retransmissions of a phase: what shaping did to the flows.
# Timeouts (RTOs) and tail-loss probes say how the losses were recovered: an
# RTO stalls the stream for at least the timeout's floor (the kernel's 200 ms
# for iperf3 and gloo; the products set theirs, --tcp-rto-min, 5 ms by
# default), a probe for about 2 round trips. DSACKs received count the
# retransmissions a receiver already had (spurious: sent again while the first
# copy was late, not lost), and spurious RTOs the timeouts that F-RTO undid.
# Drops are counted apart where they happen: at a host's own egress (its NIC,
# where its own streams queue) or at the switch's port towards a host (where
# many senders meet: incast shows there).
link_stats() {
  local phase=$1 h
  for ((h = 0; h < WORKERS + REDUCERS; h++)); do
    echo "== host $h: TCP retransmitted segments, timeouts, loss probes; its queues:"
    ns_exec "$h" nstat -az TcpRetransSegs TcpExtTCPTimeouts TcpExtTCPLossProbes TcpExtTCPDSACKRecv \
      TcpExtTCPDSACKOfoRecv TcpExtTCPSpuriousRTOs | grep -E '^Tcp' || true
    echo "gso_max_size $(ns_gso_bytes "$(ns_name "$h")" eth0)"
    echo "-- nic: eth0 egress, the host's own"
    ns_exec "$h" tc -s qdisc show dev eth0 | grep -E 'qdisc|Sent'
    echo "-- switch: its bridge port's egress, towards the host"
    ip netns exec "$(ns_switch)" tc -s qdisc show dev "p$h" | grep -E 'qdisc|Sent'
  done >"$OUT/logs/links-$phase.txt" 2>&1
  # The sums over every host, since the links were made (the report takes differences).
  local header=phase,drops,retransmitted,timeouts,loss_probes,drops_nic,drops_switch,dsacks,spurious_rtos
  [[ -s $OUT/links.csv ]] || echo "$header" >"$OUT/links.csv"
  awk -v phase="$phase" '
    /^-- nic/ { side = "nic" } /^-- switch/ { side = "switch" }
    /dropped/ { match($0, /dropped [0-9]+/); n = substr($0, RSTART + 8, RLENGTH - 8); d += n; if (side == "nic") dn += n; else ds += n }
    $1 == "TcpRetransSegs" { r += $2 } $1 == "TcpExtTCPTimeouts" { t += $2 } $1 == "TcpExtTCPLossProbes" { p += $2 }
    $1 == "TcpExtTCPDSACKRecv" || $1 == "TcpExtTCPDSACKOfoRecv" { k += $2 } $1 == "TcpExtTCPSpuriousRTOs" { u += $2 }
    END { printf "%s,%d,%d,%d,%d,%d,%d,%d,%d\n", phase, d, r, t, p, dn, ds, k, u }
  ' "$OUT/logs/links-$phase.txt" >>"$OUT/links.csv"
}

# The reducers' CPU and run-queue time so far (REDUCER_CPU0, REDUCER_RUNQ0), for reducer_cpu_rows.
reducer_cpu_start() {
  local pid
  REDUCER_CPU0=() REDUCER_RUNQ0=()
  for pid in "${REDUCER_PIDS[@]}"; do
    REDUCER_CPU0+=("$(proc_cpu "$pid")")
    REDUCER_RUNQ0+=("$(proc_runq "$pid")")
  done
}

# reducer_cpu_rows PHASE WALL: each reducer's CPU since reducer_cpu_start, and its wait for a CPU.
reducer_cpu_rows() {
  local i c u s
  for ((i = 0; i < REDUCERS; i++)); do
    read -r c u s <<<"$(cpu_delta "${REDUCER_CPU0[i]}" "$(proc_cpu "${REDUCER_PIDS[i]}")")"
    cpu_row "$1" "reducerd $i" "$c" "$2" "$u" "$s"
  done
  for ((i = 0; i < REDUCERS; i++)); do
    cpu_row "$1" "reducerd $i: waiting for a CPU while runnable" \
      "$(awk -v a="${REDUCER_RUNQ0[i]}" -v b="$(proc_runq "${REDUCER_PIDS[i]}")" 'BEGIN { printf "%.2f", b - a }')" "$2"
  done
}

# run_ours PHASE FLAGS...: reducer-bench on every worker host against fresh
# reducers, FLAGS after the harness's own; records CPU (user and system per
# process, the machine's share) and the bytes the workers all-reduced.
run_ours() {
  local phase=$1
  shift
  TOKEN_FILE=$(mktemp /tmp/rs-netns-token.XXXXXX)
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TOKEN_FILE"
  start_reducers
  log "$phase: $WORKERS reducer-bench workers -> reducers $ADDRS"
  local r pids=() m0 m1 t0 t1 wall dl0
  reducer_cpu_start
  dl0=$(delay_line_cpu)
  m0=$(machine_jiffies)
  t0=$(now)
  for ((r = 0; r < WORKERS; r++)); do
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of flags
    run_accounted "$OUT/logs/$phase-rank$r.cpu" "$r" "$BENCH_BIN" --reducers "$ADDRS" \
      --world "$WORKERS" --rank "$r" --job-token-file "$TOKEN_FILE" --session "netns-$$-$phase" -b "$MIN_BYTES" \
      -e "$MAX_BYTES" -f "$STEP" -d float32 -n "$ITERS" -w "$WARMUP" --check 1 --op-timeout 60s --connect-timeout 60s \
      --csv "$OUT/$phase.csv" $BENCH_ARGS "$@" >"$OUT/logs/$phase-rank$r.out" 2>"$OUT/logs/$phase-rank$r.err" &
    pids+=($!)
    PIDS+=($!)
  done
  local ok=0
  wait_workers "$phase" reducer-bench "${pids[@]}" || ok=1
  t1=$(now)
  m1=$(machine_jiffies)
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  local c u s
  reducer_cpu_rows "$phase" "$wall"
  for ((r = 0; r < WORKERS; r++)); do
    read -r c u s <<<"$(accounted_cpu "$OUT/logs/$phase-rank$r.cpu")"
    cpu_row "$phase" "reducer-bench rank $r" "$c" "$wall" "$u" "$s"
  done
  delay_line_row "$phase" "$wall" "$dl0"
  machine_row "$phase" "$wall" "$m0" "$m1"
  link_stats "$phase"
  stop_reducers
  rm -f "$TOKEN_FILE"
  record_input_bytes "$phase"
  record_tcp_waits "$phase"
  cat "$OUT/logs/$phase-rank0.out"
  ((ok == 0)) || exit 1
}

# What rank 0's streams waited for in a phase (reducer-bench's "# TCP waits"
# line): seconds with pieces to send and the two waits' shares, for
# results.md. Nothing for a reducer-bench without that line.
record_tcp_waits() {
  local phase=$1 waits
  waits=$(sed -nE 's/^# TCP waits *: ([0-9.]+) s with .*, ([0-9.]+) % of it .*, ([0-9.]+) % for room .*/\1 \2 \3/p' \
    "$OUT/logs/$phase-rank0.out" | tail -1)
  [[ -z $waits ]] || echo "TCP_WAITS_$phase=$waits" >>"$OUT/meta.env"
}

# The bytes all workers handed to the all-reduce in a phase, from the rank's
# summary ("# Input bytes : N per rank", reducer-bench and gloo_allreduce.py);
# for an older reducer-bench without that line, the sweep's own count.
record_input_bytes() {
  local phase=$1 per_rank
  per_rank=$(awk '/^# Input bytes/ { print $5 }' "$OUT/logs/$phase-rank0.out")
  if [[ -z $per_rank && $phase == ours ]]; then
    per_rank=$(($(sweep_total_bytes) * (ITERS + (WARMUP > 0 ? WARMUP : 1))))
  fi
  [[ -z $per_rank ]] || echo "INPUT_BYTES_$phase=$((WORKERS * per_rank))" >>"$OUT/meta.env"
}

phase_ours() { run_ours ours; }

# NCCL's CollNet proxy pattern over the sweep's sizes.
# shellcheck disable=SC2086  # COLLNET_ARGS is a list of flags
phase_collnet() { run_ours collnet --pattern collnet $COLLNET_ARGS; }

phase_ddp() {
  run_ours ddp --pattern ddp --ddp-model "$DDP_MODEL" --ddp-bucket "$DDP_BUCKETS" \
    --ddp-first-bucket "$DDP_FIRST_BUCKET" --ddp-gap "$DDP_GAP" --ddp-forward "$DDP_FORWARD"
}

# run_gloo PHASE FLAGS...: gloo_allreduce.py on every worker host.
run_gloo() {
  local phase=$1
  shift
  log "$phase: $WORKERS torch.distributed ranks on the worker hosts"
  local r pids=() m0 m1 t0 t1 wall c u s dl0
  dl0=$(delay_line_cpu)
  m0=$(machine_jiffies)
  t0=$(now)
  for ((r = 0; r < WORKERS; r++)); do
    run_accounted "$OUT/logs/$phase-rank$r.cpu" "$r" env GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 \
      "$PYTHON" "$HERE/gloo_allreduce.py" --master "$(ns_addr 0):$TORCH_MASTER_PORT" --world "$WORKERS" --rank "$r" \
      -b "$MIN_BYTES" -e "$MAX_BYTES" -f "$STEP" -n "$ITERS" -w "$WARMUP" --timeout 120 --csv "$OUT/$phase.csv" \
      "$@" >"$OUT/logs/$phase-rank$r.out" 2>"$OUT/logs/$phase-rank$r.err" &
    pids+=($!)
    PIDS+=($!)
  done
  local ok=0
  wait_workers "$phase" gloo "${pids[@]}" || ok=1
  t1=$(now)
  m1=$(machine_jiffies)
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  for ((r = 0; r < WORKERS; r++)); do
    read -r c u s <<<"$(accounted_cpu "$OUT/logs/$phase-rank$r.cpu")"
    cpu_row "$phase" "torch gloo rank $r" "$c" "$wall" "$u" "$s"
  done
  delay_line_row "$phase" "$wall" "$dl0"
  machine_row "$phase" "$wall" "$m0" "$m1"
  link_stats "$phase"
  record_input_bytes "$phase"
  cat "$OUT/logs/$phase-rank0.out"
  ((ok == 0)) || exit 1
}

phase_gloo() { run_gloo gloo; }

# phase_ddp's step as a bucketed torch.distributed loop: the same buckets.
phase_gloo_ddp() {
  run_gloo gloo_ddp --pattern ddp --ddp-model "$DDP_MODEL" --ddp-bucket "$DDP_BUCKETS" \
    --ddp-first-bucket "$DDP_FIRST_BUCKET" --ddp-gap "$DDP_GAP" --ddp-forward "$DDP_FORWARD"
}

# run_torch PHASE COMM: torch_ddp_step.py on every worker host, a real DDP step
# of a TORCH_DDP_MODEL model; COMM hook: reduction_server.torch's comm hook
# against fresh reducers (the token and addresses as run_ours gives them),
# gloo: DDP's own all-reduce on the gloo group.
run_torch() {
  local phase=$1 comm=$2 hook_env=() to=""
  if [[ $comm == hook ]]; then
    TOKEN_FILE=$(mktemp /tmp/rs-netns-token.XXXXXX)
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TOKEN_FILE"
    start_reducers
    hook_env=(PYTHONPATH="$RS_PYTHONPATH" REDUCER_ADDRS="$ADDRS" REDUCER_JOB_TOKEN_FILE="$TOKEN_FILE")
    reducer_cpu_start
    to=" -> reducers $ADDRS"
  fi
  log "$phase: $WORKERS torch DDP ranks ($comm) on the worker hosts$to"
  local r pids=() m0 m1 t0 t1 wall c u s dl0
  dl0=$(delay_line_cpu)
  m0=$(machine_jiffies)
  t0=$(now)
  for ((r = 0; r < WORKERS; r++)); do
    run_accounted "$OUT/logs/$phase-rank$r.cpu" "$r" env GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 "${hook_env[@]}" \
      "$PYTHON" "$HERE/torch_ddp_step.py" --comm "$comm" --master "$(ns_addr 0):$TORCH_MASTER_PORT" \
      --world "$WORKERS" --rank "$r" --model-bytes "$TORCH_DDP_MODEL" --bucket-cap-mb "$TORCH_DDP_BUCKETS" \
      --batch "$TORCH_DDP_BATCH" -n "$ITERS" -w "$WARMUP" --timeout 120 --csv "$OUT/$phase.csv" \
      >"$OUT/logs/$phase-rank$r.out" 2>"$OUT/logs/$phase-rank$r.err" &
    pids+=($!)
    PIDS+=($!)
  done
  local ok=0
  wait_workers "$phase" "torch DDP" "${pids[@]}" || ok=1
  t1=$(now)
  m1=$(machine_jiffies)
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  [[ $comm != hook ]] || reducer_cpu_rows "$phase" "$wall"
  for ((r = 0; r < WORKERS; r++)); do
    read -r c u s <<<"$(accounted_cpu "$OUT/logs/$phase-rank$r.cpu")"
    cpu_row "$phase" "torch DDP rank $r" "$c" "$wall" "$u" "$s"
  done
  delay_line_row "$phase" "$wall" "$dl0"
  machine_row "$phase" "$wall" "$m0" "$m1"
  link_stats "$phase"
  if [[ $comm == hook ]]; then
    stop_reducers
    rm -f "$TOKEN_FILE"
  fi
  record_input_bytes "$phase"
  cat "$OUT/logs/$phase-rank0.out"
  ((ok == 0)) || exit 1
}

phase_torch_hook() { run_torch torch_hook hook; }
phase_torch_gloo() { run_torch torch_gloo gloo; }
