#!/usr/bin/env bash
# Multi-host all-reduce harness on one Linux machine (root): one network
# namespace per host, links shaped both ways with tc (and delayed with netem,
# or rs-delay-line where the kernel has no netem). In one invocation it
# measures the line rate with iperf3, runs our all-reduce (W worker hosts with
# reducer-bench, R reducer hosts with reducerd) as a size sweep, as NCCL's
# CollNet proxy issues it and as DDP's gradient buckets, and a ring peer
# (torch gloo on the same W worker hosts) for the sweep and the DDP step, a
# real PyTorch DDP step with our comm hook against DDP's own gloo all-reduce,
# records CPU per process, and writes results.md and algbw.png into $OUT.
# Everything it creates is removed on exit or interrupt. See --help.
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
MIN_BYTES=${MIN_BYTES:-4K}
MAX_BYTES=${MAX_BYTES:-64M}
STEP=${STEP:-4}
ITERS=${ITERS:-10}
WARMUP=${WARMUP:-2}
DEFAULT_PHASES="iperf ours gloo"
PHASES=${PHASES:-$DEFAULT_PHASES}
IPERF_SECONDS=${IPERF_SECONDS:-5}
# The client's own defaults (client/transport_plan.h) for streams, pieces and window.
DEFAULT_BENCH_ARGS="--inflight 1"
BENCH_ARGS=${BENCH_ARGS-$DEFAULT_BENCH_ARGS}
DEFAULT_REDUCERD_ARGS="--memory-limit 512MiB"
REDUCERD_ARGS=${REDUCERD_ARGS-$DEFAULT_REDUCERD_ARGS}
# One machine hosts every namespace: a proxy thread spinning on a worker host
# would take the CPU the reducers' hosts need, which separate machines do not.
COLLNET_ARGS=${COLLNET_ARGS-"--collnet-channels 4 --collnet-poll block"}
DDP_MODEL=${DDP_MODEL:-100M}
DDP_BUCKETS=${DDP_BUCKETS:-25M}
DDP_FIRST_BUCKET=${DDP_FIRST_BUCKET:-1M}
DDP_GAP=${DDP_GAP:-0}
DDP_FORWARD=${DDP_FORWARD:-0}
TORCH_DDP_MODEL=${TORCH_DDP_MODEL:-100M}
TORCH_DDP_BUCKETS=${TORCH_DDP_BUCKETS:-25}
TORCH_DDP_BATCH=${TORCH_DDP_BATCH:-8}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
RUNS=${RUNS:-1}
BUILD_DIR=${BUILD_DIR:-$ROOT/build-perf}
BIN_DIR=${BIN_DIR:-}  # set: reducerd and reducer-bench from this folder, nothing built
if [[ -n $BIN_DIR ]]; then
  REDUCERD_BIN=$BIN_DIR/reducerd BENCH_BIN=$BIN_DIR/reducer-bench
else
  REDUCERD_BIN=$BUILD_DIR/server/reducerd BENCH_BIN=$BUILD_DIR/bench/reducer-bench
fi
# The userspace delay line (netns_lib.sh): BIN_DIR's when it has one, else built in BUILD_DIR.
if [[ -z $NS_DELAY_LINE ]]; then
  NS_DELAY_LINE=$BUILD_DIR/bench/rs-delay-line
  [[ -z $BIN_DIR || ! -x $BIN_DIR/rs-delay-line ]] || NS_DELAY_LINE=$BIN_DIR/rs-delay-line
fi
PYTHON=${PYTHON:-/usr/bin/python3}  # Debian's, where python3-torch lives
# The reduction_server package for torch_hook: BIN_DIR's python/ when it has one, else BUILD_DIR's.
if [[ -z ${RS_PYTHONPATH:-} ]]; then
  RS_PYTHONPATH=$BUILD_DIR/python
  [[ -z $BIN_DIR || ! -d $BIN_DIR/python ]] || RS_PYTHONPATH=$BIN_DIR/python
fi
OUT=${OUT:-$ROOT/bench/results/w${WORKERS}-r${REDUCERS}-${RATE}}

usage() {
  cat <<EOF
Usage: [VAR=value ...] $0 [--help]

Builds $WORKERS worker hosts and $REDUCERS reducer hosts as network namespaces on a bridge,
every link shaped to RATE both ways, runs the phases and writes \$OUT/results.md and
\$OUT/algbw.png. Needs root, iproute2, iperf3, python3-torch and python3-matplotlib.
Exit status: 0 on success, 77 when namespaces cannot be created here (with the reason),
1 on any failure (logs kept in \$OUT/logs).

Settings, from the environment (current value):
  WORKERS=$WORKERS REDUCERS=$REDUCERS   hosts of each kind
  RATE=$RATE            per-link rate both ways (tbf), e.g. 1gbit, 500mbit; 0 = unshaped
  DELAY=$DELAY               one-way delay added per link direction, e.g. 5ms, 500us: host to host
                        2 x DELAY one way, 4 x DELAY round trip; empty or 0 = none
  NS_DELAY_IMPL=$NS_DELAY_IMPL   how DELAY is made: netem (tc, below tbf on both ends of a veth pair),
                        userspace (rs-delay-line: two tap devices per link, frames forwarded after DELAY
                        each way, tbf on the taps; for kernels without netem), auto = netem if tc has it
  NS_DELAY_LINE=$NS_DELAY_LINE
                        the rs-delay-line binary (built with the others when userspace is used)
  NS_TCP_CC=$NS_TCP_CC          TCP congestion control in every host (empty: this machine's default,
                        now $(sysctl -n net.ipv4.tcp_congestion_control 2>/dev/null)); both = the whole run under
                        cubic and under bbr (or a list, e.g. 'cubic bbr reno'), each in \$OUT/<algorithm>/run<k>,
                        and \$OUT/results.md compares them (bench/netns/compare_cc.py). The products pick their
                        own per socket (REDUCER_TCP_CONGESTION, default auto); this sets the hosts' default
  RUNS=$RUNS               with both or a list: runs of each algorithm, taken in turn; the comparison
                        gives min - max over them
  NS_LOSS=$NS_LOSS              random loss: every host drops this percentage (e.g. 1, 0.1) of the packets
                        it receives (iptables statistic); empty or 0 = none
  NS_SLOW_START_AFTER_IDLE=$NS_SLOW_START_AFTER_IDLE   net.ipv4.tcp_slow_start_after_idle in every host: 1 (Linux's
                        default) shrinks the window of a connection idle past its retransmission
                        timeout, 0 keeps it; empty = what a new namespace gets (1)
  NS_TCP_RMEM='$NS_TCP_RMEM' NS_TCP_WMEM='$NS_TCP_WMEM'
                        net.ipv4.tcp_rmem / tcp_wmem in every host (min default max, bytes);
                        Debian's own ceilings are 6291456 / 4194304
  NS_TBF_LATENCY=$NS_TBF_LATENCY NS_HOST_TBF_LATENCY=$NS_HOST_TBF_LATENCY
                        queue of the tbf on each switch port (towards a host: shallow, where
                        many senders meet) and on each host's own eth0 (its NIC: deep, as real
                        hosts' are; 25ms until 2026-11-29). Losses says where drops happened
  NS_GSO_BYTES=$NS_GSO_BYTES   the largest GSO packet of every link (gso_max_size, bytes; empty = 64 KiB):
                        the bridge forwards a GSO packet whole, where a switch interleaves senders'
                        MTU-sized packets; smaller ones come nearer that, for more CPU (tried on veths only)
  NS_DELAY_LINE_ARGS='$NS_DELAY_LINE_ARGS'   more rs-delay-line flags (its defaults: a thread per CPU
                        at SCHED_FIFO priority 1; e.g. '--threads 1 --rt-priority 0')
  MIN_BYTES=$MIN_BYTES MAX_BYTES=$MAX_BYTES STEP=$STEP   float32 size sweep (ours, collnet, gloo)
  ITERS=$ITERS WARMUP=$WARMUP      timed and untimed operations per size, or DDP steps (both systems)
  PHASES='$PHASES'   in this order, any of:
      iperf     the line rate (iperf3, one TCP stream)
      ours      reducer-bench's size sweep        gloo      the same sweep, torch gloo ring
      collnet   each size as NCCL's CollNet proxy issues it (reducer-bench --pattern collnet)
      ddp       one DDP step per iteration (reducer-bench --pattern ddp)
      gloo_ddp  the same step with the same buckets, torch gloo async all_reduce per bucket
      torch_hook  a real PyTorch DDP step (bench/netns/torch_ddp_step.py) with
                reduction_server.torch's comm hook on the reducer hosts
      torch_gloo  the same step with DDP's own all-reduce on gloo
  IPERF_SECONDS=$IPERF_SECONDS
  BENCH_ARGS='$BENCH_ARGS'   more reducer-bench flags (every phase of ours; empty: its defaults)
  REDUCERD_ARGS='$REDUCERD_ARGS'   more reducerd flags
  COLLNET_ARGS='$COLLNET_ARGS'   collnet's reducer-bench flags
  DDP_MODEL=$DDP_MODEL DDP_BUCKETS=$DDP_BUCKETS DDP_FIRST_BUCKET=$DDP_FIRST_BUCKET DDP_GAP=$DDP_GAP
                        ddp and gloo_ddp: gradient bytes per step, bucket caps (a comma list
                        gives one line each), first bucket, compute before each bucket
  DDP_FORWARD=$DDP_FORWARD   ddp and gloo_ddp: forward compute at each step's start, nothing on
                        the wire (e.g. 1s: longer than TCP's retransmission timeout)
  TORCH_DDP_MODEL=$TORCH_DDP_MODEL TORCH_DDP_BUCKETS=$TORCH_DDP_BUCKETS TORCH_DDP_BATCH=$TORCH_DDP_BATCH
                        torch_hook and torch_gloo: float32 parameter (= gradient) bytes of
                        the Linear stack, DDP's bucket_cap_mb (a comma list gives one line
                        each), samples per rank per step; ITERS timed steps after WARMUP
  RS_PYTHONPATH=$RS_PYTHONPATH   where torch_hook imports reduction_server from
  RUN_TIMEOUT=$RUN_TIMEOUT      seconds any one phase may take
  PYTHON=$PYTHON   the interpreter with python3-torch
  BUILD_DIR=$BUILD_DIR   (reducerd and reducer-bench built here, or brought up to date)
  BIN_DIR=$BIN_DIR         a folder holding reducerd and reducer-bench (e.g. older builds) instead
                        (and rs-delay-line, else it comes from BUILD_DIR)
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
cleanup() {
  trap '' INT TERM  # a second Ctrl-C must not cut the cleanup short
  rs_stop_pids 30 "${PIDS[@]}"
  ns_teardown
  ((FAILED)) && [[ -d ${OUT:-}/logs ]] && echo "logs kept in $OUT/logs" >&2
  return 0
}

# Brings BUILD_DIR's reducerd and reducer-bench (and rs-delay-line when links
# need it) up to date (a no-op when they are), so a run never measures stale
# binaries; BIN_DIR's are used as they are.
build_binaries() {
  local targets=()
  if [[ -n $BIN_DIR ]]; then
    [[ -x $REDUCERD_BIN && -x $BENCH_BIN ]] || { echo "BIN_DIR=$BIN_DIR holds no reducerd and reducer-bench" >&2; exit 1; }
  else
    targets=(reducerd reducer-bench)
    [[ $PHASES != *torch_hook* || $RS_PYTHONPATH != "$BUILD_DIR/python" ]] || targets+=(rs_python)
  fi
  [[ $NS_DELAY_USED != userspace || $NS_DELAY_LINE != "$BUILD_DIR/bench/rs-delay-line" ]] || targets+=(rs-delay-line)
  ((${#targets[@]})) || return 0
  log "building ${targets[*]} in $BUILD_DIR (if out of date)"
  # A new tree is configured for Release without tests (they need packages the
  # harness does not); an existing one keeps its settings.
  [[ -f $BUILD_DIR/CMakeCache.txt ]] ||
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRS_BUILD_TESTS=OFF >/dev/null
  cmake --build "$BUILD_DIR" --target "${targets[@]}"
}

# The phases are over: stops rs-delay-line (if the links have one) and puts
# its summary, without the per-link counts, in meta.env for the report: its
# CPU, frames, drops and how late it wrote frames, which says whether the
# links had the delay asked for.
record_delay_line() {
  [[ -n $NS_DELAY_LINE_PID ]] || return 0
  ns_stop_delay_line 2>/dev/null
  echo "DELAY_LINE=$(grep -h '^rs-delay-line: stopped' "$NS_DELAY_LOG" | sed 's/^rs-delay-line: stopped; //; s/; [^;]*->.*$//')" \
    >>"$OUT/meta.env"
}

check_tools() {
  local missing=()
  command -v iperf3 >/dev/null || [[ $PHASES != *iperf* ]] || missing+=(iperf3)
  if [[ $PHASES == *gloo* || $PHASES == *torch_* ]] && ! "$PYTHON" -c 'import torch.distributed' 2>/dev/null; then
    missing+=(python3-torch)
  fi
  "$PYTHON" -c 'import matplotlib' 2>/dev/null || missing+=(python3-matplotlib)
  if ((${#missing[@]})); then
    echo "missing: ${missing[*]}; apt-get install ${missing[*]}" >&2
    exit 1
  fi
}

# torch_hook imports reduction_server (built by CMake where pybind11 is found) from RS_PYTHONPATH.
check_hook_package() {
  [[ $PHASES == *torch_hook* ]] || return 0
  PYTHONPATH=$RS_PYTHONPATH "$PYTHON" -c 'import reduction_server.torch' 2>/dev/null && return 0
  echo "torch_hook: no reduction_server package in RS_PYTHONPATH=$RS_PYTHONPATH (build the rs_python target," \
    "which needs python3-dev and python3-pybind11)" >&2
  exit 1
}

# Every phase asked for must have left its result, and the report its files.
check_outputs() {
  local f
  for f in results.md algbw.png; do [[ -s $OUT/$f ]] || { echo "no $OUT/$f" >&2; exit 1; }; done
  [[ $PHASES != *iperf* ]] || grep -q bits_per_second "$OUT/iperf.json" || { echo "iperf3 gave no rate" >&2; exit 1; }
  local phase
  for phase in $PHASES; do
    [[ $phase == iperf ]] && continue
    [[ -s $OUT/$phase.csv ]] && (($(wc -l <"$OUT/$phase.csv") > 1)) || { echo "$phase: no results" >&2; exit 1; }
    grep -q "^$phase," "$OUT/links.csv" || { echo "$phase: no loss counts in links.csv" >&2; exit 1; }
  done
}

main() {
  local why phase
  for phase in $PHASES; do
    [[ $phase =~ ^(iperf|ours|gloo|collnet|ddp|gloo_ddp|torch_hook|torch_gloo)$ ]] ||
      { echo "unknown phase '$phase' in PHASES; see $0 --help" >&2; exit 2; }
  done
  if ! why=$(ns_can_create); then
    echo "SKIPPED: $why; the harness needs root and network namespaces" >&2
    exit 77
  fi
  ns_reap_stale
  ns_choose_delay "$DELAY" || exit 1
  check_tools
  build_binaries
  check_hook_package
  mkdir -p "$OUT/logs"
  rm -f "$OUT"/{ours,gloo,collnet,ddp,gloo_ddp,torch_hook,torch_gloo,cpu,links}.csv "$OUT"/iperf.json "$OUT"/logs/*
  trap cleanup EXIT
  trap 'echo "interrupted" >&2; exit 130' INT TERM
  log "building $((WORKERS + REDUCERS)) hosts in namespaces ${NS_PREFIX}-*, links $RATE${DELAY:+ + $DELAY}${NS_DELAY_USED:+ ($NS_DELAY_USED)}"
  NS_DELAY_LOG=$OUT/logs/delay-line.log
  ns_setup $((WORKERS + REDUCERS)) "$RATE" "$DELAY"
  write_meta
  echo "phase,process,cpu_s,wall_s,user_s,sys_s" >"$OUT/cpu.csv"
  for phase in $PHASES; do
    case "$phase" in
      iperf) phase_iperf && link_stats iperf ;;  # the losses after it are the next phase's
      ours) phase_ours ;;
      gloo) phase_gloo ;;
      collnet) phase_collnet ;;
      ddp) phase_ddp ;;
      gloo_ddp) phase_gloo_ddp ;;
      torch_hook) phase_torch_hook ;;
      torch_gloo) phase_torch_gloo ;;
      *) echo "unknown phase '$phase'" >&2; exit 2 ;;
    esac
  done
  record_delay_line
  "$PYTHON" "$HERE/report.py" "$OUT"
  check_outputs
  FAILED=0
  log "wrote $OUT/results.md and $OUT/algbw.png"
}

# NS_TCP_CC=both (or a list) or RUNS > 1: this script once per algorithm
# and run, in turn, then the comparison.
compare_main() {
  local ccs=$NS_TCP_CC k cc
  [[ $ccs == both ]] && ccs="cubic bbr"
  [[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "RUNS='$RUNS': give a count, 1 or more" >&2; exit 2; }
  for ((k = 1; k <= RUNS; k++)); do
    for cc in $ccs; do
      log "run $k of $RUNS under $cc: $OUT/$cc/run$k"
      NS_TCP_CC=$cc RUNS=1 OUT=$OUT/$cc/run$k "$0" || { echo "run $k under $cc failed" >&2; exit 1; }
    done
  done
  "$PYTHON" "$HERE/compare_cc.py" "$OUT" >/dev/null
  log "wrote $OUT/results.md"
}

if [[ $NS_TCP_CC == both || $NS_TCP_CC == *" "* || $RUNS != 1 ]]; then
  compare_main
else
  main "$@"
fi
