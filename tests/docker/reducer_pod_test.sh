#!/usr/bin/env bash
# The Kubernetes reducer pod, run from the shipped spec: the reducer pod
# template of deploy/kubernetes/training-jobset.yaml (reducer_pod_spec.py
# reads it at run time), with the reducer image of docker/Dockerfile built
# from this build's .deb (--target reducer-from-debs).
#
# 1. `podman kube play` of that Pod and its job-token Secret: podman accepts
#    the spec; reducerd runs with the spec's security context (user 10001,
#    no capabilities, no privilege escalation, seccomp filter, read-only
#    root), reads a token file (no "no job token" warning, no restart; which
#    token is not checked: podman 4.3 writes the Secret's base64 text),
#    answers the spec's own readiness probe (grpc.health.v1 through
#    reducerctl) and serves metrics and data through the pod's ports; then
#    `podman kube down`.
# 2. The token file as the kubelet makes it, which podman does not (it
#    ignores fsGroup, and 4.3 a Secret's defaultMode): root's, mode 0440,
#    group fsGroup. reducerd runs as the spec says and reads it; the control,
#    the same spec without fsGroup, exits 2 "cannot read job token file" (the
#    crash loop issue 31 found).
#
#   reducer_pod_test.sh PACKAGE_DIR SCRATCH_DIR
# Exit 77 with the reason where containers cannot run here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
debs=$(cd "$1" && pwd) scratch=$2
# shellcheck source=tests/support/containers.sh
source "$here/../support/containers.sh"

jobset=$root/deploy/kubernetes/training-jobset.yaml
spec_tool=(python3 "$here/reducer_pod_spec.py")
image=reduction-server/reducer:latest  # the compose test's tag: one build, cached
pod=train-reducers-0-0                  # what the JobSet names reducer 0
ctr=$pod-reducerd                       # podman: <pod>-<container>
secret=train-job-token
kubelet_ct=rs-reducer-pod-kubelet-$$
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# (grep >/dev/null after a pipe, not grep -q: -q stops reading, and the
# writer's SIGPIPE would fail the pipe under pipefail.)
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

python3 -c 'import yaml' 2>/dev/null || rs_ct_skip "python3-yaml is not installed (scripts/lib/deps.sh's test packages)"
ls "$debs"/reduction-server_*.deb >/dev/null || fail "no .deb in $debs (the packages_build test makes them)"
rs_ct_init "$scratch"
kube=$scratch/reducer-pod.yaml

kube_down() {  # the pod, and what kube play leaves: the Secret and its volume
  if [ -f "$kube" ]; then podman kube down "$kube" >/dev/null 2>&1 || true; fi
  podman pod rm -f -t 0 "$pod" >/dev/null 2>&1 || true
  podman secret rm "$secret" >/dev/null 2>&1 || true
  podman volume rm -f "$secret" >/dev/null 2>&1 || true
}
cleanup() {
  set +e
  podman rm -f -t 0 "$kubelet_ct" >/dev/null 2>&1
  kube_down
}
trap cleanup EXIT
trap 'exit 143' TERM INT

wait_listening() {  # wait_listening CONTAINER: 0 once reducerd listens, 1 if it stopped or took 10 s
  local _
  for _ in $(seq 100); do
    podman logs "$1" 2>&1 | grep '^reducerd listening on' >/dev/null && return 0
    [ "$(podman inspect --format '{{.State.Running}}' "$1" 2>/dev/null)" = true ] || return 1
    sleep 0.1
  done
  return 1
}

rs_ct_base_image
context=$scratch/reducer-context
rm -rf "$context" && mkdir -p "$context"
cp "$debs"/reduction-server_*.deb "$context/"
echo "==> building $image"
podman build --format docker -t "$image" -f "$root/docker/Dockerfile" --target reducer-from-debs "$context" \
  >"$scratch/build-reducer.log" 2>&1 || { tail -30 "$scratch/build-reducer.log" >&2; fail "building $image failed"; }
mapfile -t probe < <("${spec_tool[@]}" probe "$jobset")
[ "${#probe[@]}" -gt 0 ] || fail "the reducer pod has no readiness probe command"

# --- 1. podman kube play ------------------------------------------------------
start=$(date +%s.%N)
read -r data_port metrics_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
"${spec_tool[@]}" kube "$jobset" "localhost/$image" "$token" \
  --publish "data=$data_port" --publish "metrics=$metrics_port" >"$kube"
kube_down  # what an interrupted run left
echo "==> podman kube play: the JobSet's reducer pod and its Secret"
# (podman's stderr: no systemd here for the liveness probe's timer.)
timeout 120 podman kube play "$kube" >"$scratch/kube-play.log" 2>&1 ||
  { cat "$scratch/kube-play.log" >&2; fail "podman kube play does not accept the reducer pod"; }
if ! wait_listening "$ctr"; then
  podman logs "$ctr" >&2 || true
  fail "reducerd did not start in the pod (exit 2: it could not read its token)"
fi
podman logs "$ctr" >"$scratch/reducer-pod.log" 2>&1
[ "$(podman inspect --format '{{.RestartCount}}' "$ctr")" = 0 ] || fail "reducerd restarted in the pod"
! grep -q 'no job token configured' "$scratch/reducer-pod.log" || fail "reducerd runs without the job token"
grep -q '"severity":"INFO"' "$scratch/reducer-pod.log" ||
  fail "reducerd's JSON log (REDUCER_LOG_FORMAT=json) has no severity for Cloud Logging"
# The spec's security context, as the process has it.
status=$(podman exec "$ctr" cat /proc/1/status)
for want in 'Uid:	10001	10001	10001	10001' 'Gid:	10001	10001	10001	10001' 'NoNewPrivs:	1' 'Seccomp:	2' \
  'CapEff:	0000000000000000'; do
  grep -qF "$want" <<<"$status" || fail "reducerd in the pod lacks '$want' (/proc/1/status)"
done
[ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$ctr")" = true ] ||
  fail "the pod's root filesystem is writable (readOnlyRootFilesystem)"
health=$(podman exec "$ctr" "${probe[@]}" 2>&1) || fail "the readiness probe (${probe[*]}) fails: $health"
echo "  readiness probe (${probe[*]}): $health"
curl -sf --max-time 5 "http://127.0.0.1:$metrics_port/metrics" | grep '^reducer_' >/dev/null ||
  fail "no reducer metrics on the pod's metrics port"
(exec 3<>"/dev/tcp/127.0.0.1/$data_port") 2>/dev/null || fail "nothing listens on the pod's data port"
timeout 120 podman kube down "$kube" >"$scratch/kube-down.log" 2>&1 ||
  { cat "$scratch/kube-down.log" >&2; fail "podman kube down failed"; }
! podman pod exists "$pod" || fail "podman kube down left the pod"
end=$(date +%s.%N)
echo "  played, checked and taken down in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s"

# --- 2. the token file as the kubelet makes it --------------------------------
kubelet_run() {  # kubelet_run [--without-fsgroup]: start the container, detached
  local dir=$scratch/kubelet${1:-} args
  rm -rf "$dir" && mkdir -p "$dir"
  mapfile -t args < <("${spec_tool[@]}" kubelet "$jobset" "localhost/$image" "$token" "$dir" "$@")
  [ "${#args[@]}" -gt 0 ] || fail "reducer_pod_spec.py kubelet printed nothing"
  podman rm -f -t 0 "$kubelet_ct" >/dev/null 2>&1 || true
  # Kubernetes runs the spec's probes, never an image's HEALTHCHECK.
  podman run -d --name "$kubelet_ct" --network none --no-healthcheck "${args[@]}" >/dev/null
}
echo "==> the token file as the kubelet makes it: root's, mode 0440, group fsGroup"
kubelet_run
wait_listening "$kubelet_ct" || { podman logs "$kubelet_ct" >&2; fail "reducerd cannot read its token with the pod's fsGroup"; }
podman exec "$kubelet_ct" "${probe[@]}" >/dev/null || fail "the readiness probe fails with the kubelet's token file"
podman exec "$kubelet_ct" ls -ln /var/run/secrets/reducer/token | awk '{ print "  " $1, $3 ":" $4, "token: read" }'
podman rm -f -t 0 "$kubelet_ct" >/dev/null

echo "==> control: the same spec without fsGroup"
kubelet_run --without-fsgroup
code=$(timeout 10 podman wait "$kubelet_ct" 2>/dev/null) || code="still running after 10 s"
[ "$code" = 2 ] || fail "without fsGroup reducerd should exit 2 (unreadable token), not: $code"
podman logs "$kubelet_ct" 2>&1 | grep 'cannot read job token file' >/dev/null ||
  fail "without fsGroup reducerd should say it cannot read the token file"
echo "  exits 2: $(podman logs "$kubelet_ct" 2>&1 | grep -m1 'cannot read job token file')"
echo "reducer pod test passed"
