# shellcheck shell=bash
# shellcheck disable=SC2154  # work, started and the arrays are run_all.sh's
# Sourced by run_all.sh: the summary and the details, read back from the
# steps' logs (one folder per step under $work). Only grep, sed, awk and sort:
# the summary must come out when Python or PyTorch is what is broken.
# Reads run_all.sh's names/results/secs/reasons arrays and BUDGET, started.

verdict() {
  case $1 in
    0) echo "PASS (exit 0): every step passed" ;;
    2) echo "STOPPED (exit 2), no usable GPU" ;;
    130 | 143) echo "INTERRUPTED (exit $1)" ;;
    *) echo "FAIL (exit $1)" ;;
  esac
}

# The last line a timed-out step got to: rank 0's progress, else its own.
last_words() {
  local f line=
  for f in "$1/rank0.log" "$1/bfloat16-rank0.log" "$1/float32-rank0.log" "$1/step.log"; do
    [ -f "$f" ] || continue
    line=$(grep -v "NCCL INFO\|RS_CHECK" "$f" | grep -v '^\s*$' | tail -1)
    [ -n "$line" ] && break
  done
  echo "${line:-nothing}"
}

# key=value from the probe's output.
probe_value() {
  local v
  v=$(grep -m1 "^$1=" "$work/probe/step.log" 2>/dev/null | cut -d= -f2-)
  echo "${v:-${2-?}}"
}

nccl_text() { sed 's/^.*NCCL \(INFO\|WARN\) //'; }

# NCCL's own lines in LOG: plugin loaded, tuner, network, CollNet.
nccl_lines() {
  local log=$1 line
  for pattern in "NET/Plugin: Loaded net" "NET/Plugin: Loaded collnet" "TUNER/Plugin: Using" "NET/Reducer : tuner" \
    "NET/Reducer : CollNet connected"; do
    line=$(grep -m1 "$pattern" "$log" | nccl_text)
    echo "  ${line:-(no \"$pattern\" line)}"
  done
  preload_lines "$log"
  echo "  $(networks "$log")"
}

# What the plugin set itself when it was preloaded, if it says so.
preload_lines() { grep -m2 "NET/Reducer : .*\(LD_PRELOAD\|preload\)" "$1" | nccl_text | sed 's/^/  /'; }

networks() {
  local line
  line=$(grep -o "Using network .*" "$1" | sort | uniq -c | awk '{n=$1; $1=""; printf "%s%s x%s", s, substr($0, 2), n; s="; "}')
  echo "${line:-(no 'Using network' line: NCCL chose no network)}"
}

# One line: the network, CollNet, the plugin's and the tuner's versions.
nccl_brief() {
  local log=$1 net tuner
  net=$(grep -m1 -o "NET/Plugin: Loaded net plugin .*" "$log" | sed 's/.* plugin //')
  tuner=$(grep -m1 -o "TUNER/Plugin: Using .*" "$log" | sed 's/.*Using //')
  echo "  $(networks "$log"); net plugin ${net:-not loaded}; tuner ${tuner:-not loaded};" \
    "CollNet connected: $(grep -q "NET/Reducer : CollNet connected" "$log" && echo yes || echo no)"
  preload_lines "$log"
}

# NCCL's warnings over every rank of a step's folder, distinct.
warnings() {
  local dir=$1 n
  n=$(cat "$dir"/*rank*.log 2>/dev/null | grep "NCCL WARN" | nccl_text | sort -u | wc -l)
  ((n)) || return 0
  echo "  NCCL WARN, all ranks: $n distinct line(s), the first:"
  cat "$dir"/*rank*.log | grep "NCCL WARN" | nccl_text | awk '!seen[$0]++' | head -2 | cut -c1-200 | sed 's/^/    /'
}

# "AllReduce: 4096 Bytes -> Algo COLLNET_CHAIN proto SIMPLE channel..." is
# NCCL 2.28's INFO line (TUNING subsystem, rank 0) for every collective.
algorithms() {
  local log=$1 func=$2
  awk -v func_="$func:" '$0 ~ / NCCL INFO / {
      for (i = 1; i < NF; i++) if ($i == func_ && $(i + 2) == "Bytes") {
        key = $(i + 1); algo[key] = algo[key] "," $(i + 5) "/" $(i + 7)
      }
    }
    END {
      for (b in algo) {
        n = split(substr(algo[b], 2), a, ","); delete c; out = ""
        for (j = 1; j <= n; j++) c[a[j]]++
        for (x in c) out = out "  " x " x" c[x]
        printf "%12s B%s\n", b, out
      }
    }' "$log" | sort -n
}

# Sessions and operations of every reducer of a step.
reducers_line() {
  local dir=$1
  compgen -G "$dir/reducer*.log" >/dev/null || return 0
  awk '/session .* ended: / { ended[FILENAME]++; ops += $(index_of("ended:") + 1); pieces += $(index_of("ended:") + 3) }
       /session .* failed: / { failed++ }
       function index_of(w,   i) { for (i = 1; i <= NF; i++) if ($i == w) return i; return NF }
       END {
         for (i = 1; i < ARGC; i++) { per = per sep (ended[ARGV[i]] + 0); sep = "/" }
         printf "%d reducer(s): sessions ended %s (per reducer), failed %d; %d operations, %d pieces\n",
                ARGC - 1, per, failed, ops, pieces
       }' "$dir"/reducer*.log
}

# Wrong elements of torch_allreduce.py's checks, over every rank.
wrong_line() {
  local dir=$1
  cat "$dir"/rank*.log 2>/dev/null | awk '/^RS_CHECK / {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      checks++; total += v["wrong"]
      if (v["wrong"] > 0 && bad++ < 3) list = list sprintf("; %s %s %s B group %s rank %s: %s", v["op"], v["dtype"],
                                                           v["bytes"], v["group"], v["rank"], v["wrong"])
    }
    END { if (checks) printf "%d wrong elements in %d checks (all ranks)%s\n", total, checks, list
          else print "no results (no RS_CHECK lines)" }'
}

train_check_line() {
  local dir=$1 dtype line
  for dtype in float32 bfloat16; do
    [ -f "$dir/$dtype-rank0.log" ] || continue
    line=$(grep -h -m1 "checks: parameters identical" "$dir/$dtype-rank0.log")
    [ -n "$line" ] || line=$(grep -h "differ from rank 0\|rs-train: rank [0-9]*: error" "$dir"/$dtype-rank*.log | head -1)
    echo "    $dtype: ${line:-no result}"
  done
}

write_summary() {
  local i rev device
  device=$(probe_value device "")
  rev=$(sed -n 's/^revision: *//p' "${RS_BUNDLE:-/nonexistent}/MANIFEST.txt" 2>/dev/null | grep . ||
    git -C "$RS_GPU_HERE" rev-parse --short HEAD 2>/dev/null || echo "revision unknown")
  local bad=
  for i in "${!names[@]}"; do [ "${results[$i]}" = PASS ] || bad+="${bad:+, }${names[$i]} ${results[$i]}"; done
  echo "GPU CHECK: $(verdict "$1")${bad:+: $bad}"
  echo "  run_all.sh ($rev) $(date -u '+%F %T UTC'), $((SECONDS - started)) s of BUDGET $BUDGET s, WORLD ${WORLD:-4}"
  if [ -f "$work/probe/step.log" ]; then
    echo "host:    $(probe_value gpu); $(probe_value cpus) CPUs"
    echo "python:  $(probe_value python)"
    echo "torch:   $(probe_value torch) (CUDA $(probe_value torch_cuda)), NCCL $(probe_value nccl)${device:+, GPU 0: $device}"
  else
    echo "host:    (no probe step in RUN_ALL_STEPS)"
  fi
  echo "from:    $RS_WHERE"
  grep -h "^missing=\|^unresolved=" "$work/probe/step.log" 2>/dev/null | sed 's/^/  LIBRARIES: /'
  echo "steps:"
  for i in "${!names[@]}"; do
    printf "  %-9s %-7s %4s s  %s\n" "${names[$i]}" "${results[$i]}" "${secs[$i]}" "${reasons[$i]}"
  done
  if [ -f "$work/torch/rank0.log" ]; then
    echo "NCCL, torch step (rank 0):"
    nccl_lines "$work/torch/rank0.log"
    warnings "$work/torch"
  fi
  if [ -f "$work/preload/rank0.log" ]; then
    echo "NCCL, preload step (rank 0):"
    nccl_brief "$work/preload/rank0.log"
    warnings "$work/preload"
  fi
  if [ -f "$work/train/float32-rank0.log" ]; then
    echo "NCCL, train step (rank 0, float32):"
    nccl_brief "$work/train/float32-rank0.log"
    warnings "$work/train"
  fi
  if [ -f "$work/torch/rank0.log" ]; then
    echo "all-reduce algorithm per size, torch step (NCCL's TUNING lines, rank 0, both groups, x = times):"
    algorithms "$work/torch/rank0.log" AllReduce | grep . || echo "  (no 'AllReduce: N Bytes -> Algo' lines)"
  fi
  for s in torch preload train; do
    compgen -G "$work/$s/reducer*.log" >/dev/null && echo "reducers, $s step: $(reducers_line "$work/$s")"
  done
  for s in torch preload; do
    compgen -G "$work/$s/rank*.log" >/dev/null && echo "wrong elements, $s step: $(wrong_line "$work/$s")"
  done
  if compgen -G "$work/train/*-rank0.log" >/dev/null; then
    echo "wrong elements, train step (rs-train's parameter checks):"
    train_check_line "$work/train"
  fi
  if [ -f "$work/wire/rank0.log" ]; then
    echo "wire step (REDUCER_WIRE_DTYPE=bfloat16): $(reducers_line "$work/wire"); $(wrong_line "$work/wire")"
    grep -h -m1 "float32 sums as" "$work"/wire/reducer*.log | sed 's/^.*ended: /  a reducer: /' | head -1
  fi
  if [ -f "$work/failover/step.log" ]; then
    echo "failover step (a reducer killed mid-job), what the plugin said (rank 0):"
    grep -A4 "^--- what the plugin says about the lost reducer" "$work/failover/step.log" | tail -n +2 | cut -c1-200 |
      sed 's/^/  /'
  fi
  if [ -f "$work/rankloss/step.log" ]; then
    echo "rankloss step (a rank killed mid-job), what the others saw:"
    grep -E "^rank [0-9]+: (exit|NCCL's last)" "$work/rankloss/step.log" | cut -c1-240 | sed 's/^/  /'
    grep -A3 "^--- what the plugin says" "$work/rankloss/step.log" | tail -n +2 | cut -c1-200 | sed 's/^/  NCCL WARN: /'
  fi
  if [ -f "$work/perf/step.log" ]; then
    sed -n '/^--- all-reduce, float32/,/^OK: \|^FAILED: /p' "$work/perf/step.log" | grep -v "^OK: \|^FAILED: " |
      sed 's/^--- /perf step: /'
  fi
  local lines s
  lines=$(grep "^config \|^  rank 0 said: " "$work/stderr/step.log" 2>/dev/null | cut -c1-220)
  if [ -n "$lines" ]; then
    echo "stderr step (NCCL_DEBUG unset, LD_PRELOAD only): each configuration, and rank 0's first line from the plugin:"
    echo "$lines" | sed 's/^config /  /; s/^  rank 0 said: /    rank 0: /'
  fi
  for s in model fsdp; do
    lines=$( (grep "^reducers \|^compare " "$work/$s/step.log" 2>/dev/null
      grep -h "^gradients: " "$work/$s/compare-socket-plugin.txt" 2>/dev/null | sed 's/^/socket -> plugin, /') | cut -c1-218 | sed 's/^/  /')
    [ -n "$lines" ] || continue
    echo "$s step (ResNet-18, one step: NCCL's sockets, then the plugin twice):"
    echo "$lines"
  done
  if [ -f "$work/cpu/step.log" ]; then
    echo "cpu step (issue 42's CPU scaling, no GPU):"
    sed -n '/^--- cpu scaling/,/^per worker GB\/s:/p' "$work/cpu/step.log" | grep -v '^per worker GB/s:' |
      sed '/^$/d; s/^--- //; s/^/  /'
  fi
  echo "files: summary.txt, details.txt, logs.tar.gz (every rank's and reducer's log) in $OUT"
}

write_details() {
  local d f i
  echo
  echo "=== DETAILS ==="
  for i in "${!names[@]}"; do
    d=$work/${names[$i]//:/-}
    [ -d "$d" ] || continue
    echo "--- step $(basename "$d"): its output"
    cat "$d/step.log"
    if [ -f "$d/rank0.log" ]; then
      echo "--- step $(basename "$d"): every collective's algorithm (rank 0)"
      for f in AllReduce Broadcast AllGather ReduceScatter; do algorithms "$d/rank0.log" "$f" | sed "s/^/$f /"; done
    fi
    for f in "$d"/*rank*.log "$d"/reducer*.log; do
      [ -f "$f" ] || continue
      echo "--- $(basename "$d")/$(basename "$f"): last lines (NCCL INFO left out)"
      grep -v "NCCL INFO\|RS_CHECK" "$f" | tail -8
    done
  done
}
