# shellcheck shell=bash
# Shared by the benchmarks that measure CPU per byte (bench/cpu_per_byte.sh,
# bench/cpu_scaling.sh): the CPU time of processes and of the machine, sizes,
# and where a build keeps reducerd and reducer-bench. Source it after setting
# nothing; it reads CLK_TCK itself.

CLK_TCK=$(getconf CLK_TCK)

# "user sys" seconds of a live process.
proc_cpu() { awk -v hz="$CLK_TCK" '{ sub(/^.*\) /, ""); printf "%.3f %.3f", $12 / hz, $13 / hz }' "/proc/$1/stat"; }

# "busy kernel softirq" CPU-seconds of the whole machine so far (all CPUs).
machine_cpu() {
  awk -v hz="$CLK_TCK" '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i
    printf "%.3f %.3f %.3f", (t - $5 - $6) / hz, ($4 + $7 + $8) / hz, ($7 + $8) / hz }' /proc/stat
}

# "user sys" seconds in a file a shell wrote with `times` (2nd line: its children).
times_cpu() { awk -F'[ms ]' 'NR == 2 { printf "%.3f %.3f", $1 * 60 + $2, $4 * 60 + $5 }' "$1"; }

# Sums and differences of "user sys [softirq]" pairs.
add() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.3f %.3f", x[1] + y[1], x[2] + y[2] }'; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.3f %.3f %.3f", y[1] - x[1], y[2] - x[2], y[3] - x[3] }'; }

# "64M", "1GiB", "4096" -> bytes (binary units, as reducer-bench reads them).
size_bytes() {
  local t=${1^^}
  t=${t%B}
  t=${t%I}
  case "$t" in
    *K) echo $((${t%K} << 10)) ;;
    *M) echo $((${t%M} << 20)) ;;
    *G) echo $((${t%G} << 30)) ;;
    *[!0-9]* | "") return 1 ;;
    *) echo "$t" ;;
  esac
}

# The reducerd and reducer-bench of a folder (holding both, or a CMake build
# folder with server/ and bench/), or an error naming it.
binaries() {
  local d=$1
  if [[ -x $d/reducerd && -x $d/reducer-bench ]]; then
    echo "$d/reducerd $d/reducer-bench"
  elif [[ -x $d/server/reducerd && -x $d/bench/reducer-bench ]]; then
    echo "$d/server/reducerd $d/bench/reducer-bench"
  else
    echo "'$d' holds neither reducerd + reducer-bench nor server/reducerd + bench/reducer-bench" >&2
    return 1
  fi
}

# Waits (10 s at most) for a reducer's port file; prints the port.
wait_port() {
  local file=$1 port=""
  for _ in $(seq 100); do
    port=$(cat "$file" 2>/dev/null || true)
    [[ $port =~ ^[0-9]+$ ]] && { echo "$port"; return 0; }
    sleep 0.1
  done
  return 1
}

# start_reducers LOGS COUNT CPUS REDUCERD [FLAG...]: COUNT reducerd on
# 127.0.0.1 pinned to CPUS ("all": not pinned), logs and port files in LOGS.
# Sets REDUCER_ADDRS (host:port,...) and REDUCER_PIDS, appends to PIDS (the
# caller's list to stop on exit). Fails, printing the log, when one does not start.
start_reducers() {
  local logs=$1 count=$2 cpus=$3 reducerd=$4 i port pin=()
  shift 4
  [[ $cpus == all ]] || pin=(taskset -c "$cpus")
  REDUCER_ADDRS="" REDUCER_PIDS=()
  for ((i = 0; i < count; i++)); do
    "${pin[@]}" "$reducerd" --listen 127.0.0.1:0 --port-file "$logs/reducer$i.port" --log-level warn "$@" \
      >"$logs/reducer$i.log" 2>&1 &
    PIDS+=($!)
    REDUCER_PIDS+=($!)
  done
  for ((i = 0; i < count; i++)); do
    port=$(wait_port "$logs/reducer$i.port") ||
      { echo "reducer $i did not start:" >&2; cat "$logs/reducer$i.log" >&2; return 1; }
    REDUCER_ADDRS+="${REDUCER_ADDRS:+,}127.0.0.1:$port"
  done
}
