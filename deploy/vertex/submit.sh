#!/usr/bin/env bash
# Submits job.yaml as a Vertex AI custom job with gcloud, with a job token
# generated here for this job only and given to every pool.
#
#   deploy/vertex/submit.sh --region us-central1 [--project P] [--display-name N] [--config job.yaml]
#
# The token is 32 random bytes (hex) from /dev/urandom; it is never printed
# and lives only in a temporary copy of the config (removed on exit) and in
# the job's spec. What it protects and what not: README.md, "Vertex AI".
set -euo pipefail

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
config=$here/job.yaml
region= project= name=reduction-server-$(date +%Y%m%d-%H%M%S)
while [ $# -gt 0 ]; do
  case $1 in
    --region) region=${2:?--region needs a value}; shift 2 ;;
    --project) project=${2:?--project needs a value}; shift 2 ;;
    --display-name) name=${2:?--display-name needs a value}; shift 2 ;;
    --config) config=${2:?--config needs a value}; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "submit.sh: unknown argument '$1'" >&2; usage 2 >&2 ;;
  esac
done
[ -n "$region" ] || { echo "submit.sh: --region is required (e.g. us-central1)" >&2; exit 2; }
[ -r "$config" ] || { echo "submit.sh: cannot read $config" >&2; exit 2; }
placeholder=generated-at-submission
grep -q "value: $placeholder\$" "$config" ||
  { echo "submit.sh: $config has no REDUCER_JOB_TOKEN set to '$placeholder' to replace" >&2; exit 2; }

token=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
[ ${#token} -eq 64 ] || { echo "submit.sh: could not read 32 random bytes" >&2; exit 1; }
tmp=$(mktemp "${TMPDIR:-/tmp}/rs-vertex-job.XXXXXX.yaml")
trap 'rm -f "$tmp"' EXIT
chmod 600 "$tmp"
sed "s/value: $placeholder\$/value: $token/" "$config" >"$tmp"

args=(ai custom-jobs create --region="$region" --display-name="$name" --config="$tmp")
[ -z "$project" ] || args+=(--project="$project")
echo "submitting $name ($(grep -c "value: $token\$" "$tmp") REDUCER_JOB_TOKEN entries set to a new token)"
gcloud "${args[@]}"
