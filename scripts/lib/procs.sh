# shellcheck shell=bash
# Shared by the scripts that start daemons and workers: stops a set of
# processes by pid, politely first (SIGTERM lets reducerd drain), then for
# good after a grace period. Source it, then: rs_stop_pids TENTHS pid...

rs_stop_pids() {
  local tenths=$1 pid alive
  shift
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq "$tenths"); do
    alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "$@"; do kill -KILL "$pid" 2>/dev/null || true; done
}

# rs_output_dir NAME: the folder for a benchmark's logs. OUT as the user gave
# it (kept, KEEP=1), or a new /tmp/NAME.XXXXXX removed at exit (KEEP=0).
# Starts PIDS empty: what the script appends there is stopped at exit
# (politely first, 3 s). INT and TERM end the script with 130.
# shellcheck disable=SC2034  # KEEP and PIDS are the caller's
rs_output_dir() {
  KEEP=1
  if [[ -z ${OUT:-} ]]; then
    OUT=$(mktemp -d "/tmp/$1.XXXXXX")
    KEEP=0
  fi
  mkdir -p "$OUT"
  PIDS=()
  trap 'rs_stop_pids 30 "${PIDS[@]}"; ((KEEP)) || rm -rf "$OUT"' EXIT
  trap 'echo "interrupted" >&2; exit 130' INT TERM
}
