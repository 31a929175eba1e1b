# shellcheck shell=bash
# Sourced by the GPU checks (run_all.sh and its steps). Finds the programs,
# picks the Python, and starts and stops the processes of a step. It never
# builds anything: the GPU machine has no compiler and no packages.
#
# Where the programs are:
#   - in a bundle (scripts/gpu_bundle.sh): this folder is DIR/tests/gpu, and
#     DIR/env.sh sets RS_BUNDLE, PATH, LD_LIBRARY_PATH (the bundle's libraries
#     and PyTorch's nvidia-* wheels) and RS_PLUGIN;
#   - in the repo: BUILD_DIR (default build, relative to the repo's root).
# PYTHON: default /opt/torch/.venv/bin/python3 where it exists, else python3.
# It is chosen before env.sh runs, which finds the wheels through it.

rs_gpu_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "${PYTHON:-}" ]; then
  PYTHON=python3
  [ -x /opt/torch/.venv/bin/python3 ] && PYTHON=/opt/torch/.venv/bin/python3
fi
export PYTHON

if [ -z "${RS_BUNDLE:-}" ] && [ -f "$rs_gpu_dir/../../env.sh" ]; then
  # shellcheck source=/dev/null
  source "$rs_gpu_dir/../../env.sh" || echo "gpu_env: $rs_gpu_dir/../../env.sh failed" >&2
fi
if [ -n "${RS_BUNDLE:-}" ]; then
  RS_WHERE="bundle $RS_BUNDLE"
  RS_REDUCERD=$RS_BUNDLE/bin/reducerd
  RS_TRAIN=$RS_BUNDLE/bin/rs-train
  RS_PLUGIN=${RS_PLUGIN:-$RS_BUNDLE/lib/libnccl-net-reducer.so}
else
  rs_build=${BUILD_DIR:-build}
  case $rs_build in /*) ;; *) rs_build=$(cd "$rs_gpu_dir/../.." && pwd)/$rs_build ;; esac
  RS_WHERE="build folder $rs_build"
  RS_REDUCERD=$rs_build/server/reducerd
  RS_TRAIN=$rs_build/trainer/rs-train
  RS_PLUGIN=$rs_build/nccl_plugin/libnccl-net-reducer.so
fi
export RS_WHERE RS_REDUCERD RS_TRAIN RS_PLUGIN

# Where this step writes its logs: LOGS (run_all.sh sets it), else OUT, else
# a temp dir.
rs_logs_dir() {
  local d=${LOGS:-${OUT:-}}
  [ -n "$d" ] || d=$(mktemp -d /tmp/rs-gpu-XXXXXX)
  mkdir -p "$d"
  echo "$d"
}

# The step's reason for run_all.sh's summary is its last FAILED:/SKIPPED:
# line. Exit 77 is SKIPPED.
rs_fail() { echo "FAILED: $*" >&2; exit 1; }
rs_skip() { echo "SKIPPED: $*" >&2; exit 77; }

rs_need() {
  local f
  for f in "$@"; do [ -e "$f" ] || rs_fail "no $f ($RS_WHERE): build it, or run from the bundle"; done
}

# Every process a step starts goes into rs_pids; the trap stops them all.
rs_pids=()
rs_stop() {
  local p alive
  for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 50); do  # 5 s for reducerd to drain, then for good
    alive=0
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for p in "$@"; do kill -KILL "$p" 2>/dev/null || true; done
  wait "$@" 2>/dev/null || true
}
rs_cleanup() { ((${#rs_pids[@]} == 0)) || rs_stop "${rs_pids[@]}"; rs_pids=(); }
trap rs_cleanup EXIT
trap 'rs_cleanup; exit 143' TERM
trap 'rs_cleanup; exit 130' INT

# rs_start_reducers N DIR FLAG...: N reducers on 127.0.0.1, port 0, logs in
# DIR/reducerI.log. Sets RS_TOKEN (the job token) and RS_ADDRS.
rs_start_reducers() {
  local n=$1 dir=$2 i
  shift 2
  RS_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  RS_ADDRS=
  for i in $(seq 0 $((n - 1))); do
    REDUCER_JOB_TOKEN=$RS_TOKEN "$RS_REDUCERD" --listen 127.0.0.1:0 --port-file "$dir/reducer$i.port" "$@" \
      >"$dir/reducer$i.log" 2>&1 &
    rs_pids+=($!)
  done
  for i in $(seq 0 $((n - 1))); do
    for _ in $(seq 300); do [ -s "$dir/reducer$i.port" ] && break; sleep 0.1; done
    [ -s "$dir/reducer$i.port" ] || rs_fail "reducer $i did not start within 30 s: $(tail -3 "$dir/reducer$i.log" | tr '\n' ' ')"
    RS_ADDRS+=${RS_ADDRS:+,}127.0.0.1:$(cat "$dir/reducer$i.port")
  done
}

# rs_launch LOG COMMAND...: starts one rank, its output to LOG.
rs_ranks=()
declare -A rs_rank_log=()
rs_launch() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 &
  rs_pids+=($!)
  rs_ranks+=($!)
  rs_rank_log[$!]=$log
}

# rs_launch_apart OUT ERR COMMAND...: the same with stdout to OUT and stderr
# to ERR, for checks of what a rank writes to stderr. ERR is the rank's log
# for rs_wait_ranks and rs_rank_failure (Python's traceback is there).
rs_launch_apart() {
  local out=$1 err=$2
  shift 2
  "$@" >"$out" 2>"$err" &
  rs_pids+=($!)
  rs_ranks+=($!)
  rs_rank_log[$!]=$err
}

# rs_wait_ranks: waits for the ranks launched since the last call; 0 when all
# exited 0, else RS_FAILED_LOG is the log of the first that failed. When one
# fails, the others get 20 s to fail with it (usually naming the cause), then
# are stopped: a rank whose peer died would otherwise wait in NCCL until the
# step's timeout and turn a clear FAIL into a TIMEOUT.
# rs_wait_ranks_within SECONDS: the same, but ranks still running SECONDS
# after the call are stopped and count as failed, with RS_WAIT_HUNG=1: one
# run of a step that runs several can hang without taking the step's whole
# timeout.
rs_wait_limit=
rs_wait_ranks_within() {
  rs_wait_limit=$1
  rs_wait_ranks
}
# shellcheck disable=SC2034  # RS_WAIT_HUNG is for the steps
rs_wait_ranks() {
  local left=("${rs_ranks[@]}") still p status=0 deadline='' limit='' secs=$rs_wait_limit
  rs_wait_limit=
  [ -z "$secs" ] || limit=$((SECONDS + secs))
  rs_ranks=()
  RS_FAILED_LOG=
  RS_WAIT_HUNG=0
  while ((${#left[@]})); do
    still=()
    for p in "${left[@]}"; do
      if kill -0 "$p" 2>/dev/null; then
        still+=("$p")
      elif ! wait "$p"; then
        status=1
        RS_FAILED_LOG=${RS_FAILED_LOG:-${rs_rank_log[$p]}}
      fi
    done
    left=("${still[@]}")
    if ((status)) && [ -z "$deadline" ]; then deadline=$((SECONDS + 20)); fi
    if [ -n "$deadline" ] && ((SECONDS >= deadline)) && ((${#left[@]})); then
      echo "stopping ${#left[@]} rank(s) still running 20 s after $(basename "$RS_FAILED_LOG" .log) failed" >&2
      rs_stop "${left[@]}"
      left=()
    fi
    if [ -n "$limit" ] && ((SECONDS >= limit)) && ((${#left[@]})); then
      echo "stopping ${#left[@]} rank(s) still running after $secs s" >&2
      RS_FAILED_LOG=${RS_FAILED_LOG:-${rs_rank_log[${left[0]}]}}
      RS_WAIT_HUNG=1
      status=1
      rs_stop "${left[@]}"
      left=()
    fi
    ((${#left[@]} == 0)) || sleep 0.5
  done
  return "$status"
}

# rs_rank_failure LOG: a failed rank's last words: its exception or error
# line, else NCCL's last warning, else its last line.
rs_rank_failure() {
  local log=$1 line
  line=$(grep -E "^[A-Za-z_][A-Za-z0-9_.]*(Error|Exception): |rs-train: rank [0-9]+: |[0-9]+ wrong elements" "$log" | tail -1)
  [ -n "$line" ] || line=$(grep "NCCL WARN" "$log" | tail -1 | sed 's/^.*NCCL WARN /NCCL WARN /')
  [ -n "$line" ] || line=$(grep -v "NCCL INFO" "$log" | tail -1)
  echo "$(basename "$log" .log) failed: ${line:-no output}"
}
