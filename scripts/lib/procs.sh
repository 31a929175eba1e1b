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
