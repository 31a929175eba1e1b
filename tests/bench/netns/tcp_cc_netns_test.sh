#!/usr/bin/env bash
# The harness leaves the machine's allowed TCP congestion controls as it found
# them. Its hosts run NS_TCP_CC (cubic), which a namespace may only take when
# net.ipv4.tcp_allowed_congestion_control lists it; on a machine booted with
# another default (bbr) the harness adds it (netns_lib.sh). Checks, with an
# algorithm the machine does not allow at the start (taken out of the list for
# the test, and the list put back at exit whatever happens):
#   - ns_setup adds it and every host runs it; ns_teardown takes it out again;
#   - two runs at the same time: the first to end leaves it for the second's
#     hosts, and the second takes it out;
#   - an algorithm allowed by someone else stays allowed.
# Exit 0 on success, 1 on a failure, 77 (skipped, with the reason) where
# namespaces cannot be created.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
LIB=$ROOT/bench/netns/netns_lib.sh
# shellcheck source=bench/netns/netns_lib.sh
source "$LIB"

fail() { echo "FAIL: $*" >&2; exit 1; }

if ! why=$(ns_can_create); then
  echo "SKIPPED: $why" >&2
  exit 77
fi
ns_reap_stale

# An algorithm the kernel has that is not the machine's default: cubic where
# the machine boots with bbr, else reno (built into every kernel).
default=$(sysctl -n net.ipv4.tcp_congestion_control)
available=$(sysctl -n net.ipv4.tcp_available_congestion_control)
algo=""
for candidate in cubic reno; do
  [[ $candidate != "$default" && " $available " == *" $candidate "* ]] && { algo=$candidate; break; }
done
[[ -n $algo ]] || { echo "SKIPPED: no congestion control other than the default ($default) in: $available" >&2; exit 77; }

original=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
TMP=$(mktemp -d /tmp/rs-tcp-cc-test.XXXXXX)
export NS_TCP_CC_MARKER=$TMP/marker
OTHER_PID=""
restore() {
  [[ -z $OTHER_PID ]] || kill "$OTHER_PID" 2>/dev/null || true
  ns_teardown 2>/dev/null || true
  sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$original" >/dev/null
  rm -rf "$TMP"
}
trap restore EXIT

allowed() { sysctl -n net.ipv4.tcp_allowed_congestion_control; }
without() {
  local a out=()
  for a in $1; do [[ $a == "$2" ]] || out+=("$a"); done
  echo "${out[*]}"
}
is_allowed() { [[ " $(allowed) " == *" $algo "* ]]; }
start=$(without "$original" "$algo")
sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$start" >/dev/null
export NS_TCP_CC=$algo

echo "== one run: $algo is allowed while its hosts exist, and only then"
ns_setup 2 0 ""
is_allowed || fail "ns_setup did not allow $algo (allowed: $(allowed))"
for ((i = 0; i < 2; i++)); do
  got=$(ns_exec "$i" sysctl -n net.ipv4.tcp_congestion_control)
  [[ $got == "$algo" ]] || fail "host $i runs $got, expected $algo"
done
ns_teardown
[[ $(allowed) == "$start" ]] || fail "after ns_teardown the allowed list is '$(allowed)', expected '$start'"
[[ ! -e $NS_TCP_CC_MARKER ]] || fail "ns_teardown left its mark ($NS_TCP_CC_MARKER)"

echo "== two runs at the same time: the last to end takes $algo back"
ns_setup 1 0 ""
# A second run, in its own process with its own namespaces, that holds them
# until told to go (bounded: 30 s).
(
  NS_PREFIX=rsb$BASHPID  # sourcing resets the rest of the library's state
  # shellcheck source=bench/netns/netns_lib.sh
  source "$LIB"
  trap 'ns_teardown' EXIT
  ns_setup 1 0 ""
  touch "$TMP/ready"
  for _ in $(seq 300); do
    [[ -e $TMP/go ]] && break
    sleep 0.1
  done
) &
OTHER_PID=$!
for _ in $(seq 300); do
  [[ -e $TMP/ready ]] && break
  kill -0 "$OTHER_PID" 2>/dev/null || fail "the second run ended before it was ready"
  sleep 0.1
done
[[ -e $TMP/ready ]] || fail "the second run was not ready within 30 s"
ns_teardown
is_allowed || fail "the first run to end took $algo out while the second run's hosts use it"
touch "$TMP/go"
wait "$OTHER_PID" || fail "the second run failed"
OTHER_PID=""
[[ $(allowed) == "$start" ]] || fail "after both runs the allowed list is '$(allowed)', expected '$start'"

echo "== allowed by someone else: it stays"
sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$start $algo" >/dev/null
ns_setup 1 0 ""
ns_teardown
is_allowed || fail "ns_teardown took out $algo, which it had not added"
echo "PASS"
