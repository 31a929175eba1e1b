#!/usr/bin/env bash
# Submits job.yaml as a Vertex AI custom job with gcloud, with a job token
# generated here for this job only and given to every pool.
#
#   deploy/vertex/submit.sh --region us-central1 [--project P] [--display-name N] [--config job.yaml]
#                           [--token-bucket gs://BUCKET[/PREFIX]]
#
# The token is 32 random bytes (hex) from /dev/urandom, never printed. By
# default it lives in a temporary copy of the config (removed on exit) and in
# the job's spec, so in every replica's CLUSTER_SPEC. --token-bucket keeps it
# out: it goes to a new object in that bucket (mounted by Vertex AI at /gcs/)
# and the pools get REDUCER_JOB_TOKEN_FILE with its path; if the job is
# not created, the object is removed again. What it protects and what not:
# docs/guide/deploying.md, "The job token".
set -euo pipefail

usage() {
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
config=$here/job.yaml
region='' project='' bucket='' name=reduction-server-$(date +%Y%m%d-%H%M%S)
while [ $# -gt 0 ]; do
  case $1 in
    --region) region=${2:?--region needs a value}; shift 2 ;;
    --project) project=${2:?--project needs a value}; shift 2 ;;
    --display-name) name=${2:?--display-name needs a value}; shift 2 ;;
    --config) config=${2:?--config needs a value}; shift 2 ;;
    --token-bucket) bucket=${2:?--token-bucket needs a value}; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "submit.sh: unknown argument '$1'" >&2; usage 2 >&2 ;;
  esac
done
[ -n "$region" ] || { echo "submit.sh: --region is required (e.g. us-central1)" >&2; exit 2; }
[ -r "$config" ] || { echo "submit.sh: cannot read $config" >&2; exit 2; }
placeholder=generated-at-submission
grep -q "value: $placeholder\$" "$config" ||
  { echo "submit.sh: $config has no REDUCER_JOB_TOKEN set to '$placeholder' to replace" >&2; exit 2; }

if [ -n "$bucket" ]; then
  [[ $bucket =~ ^gs://[a-z0-9][a-z0-9._-]+[a-z0-9](/.*)?$ ]] ||
    { echo "submit.sh: --token-bucket '$bucket' is not gs://BUCKET or gs://BUCKET/PREFIX" >&2; exit 2; }
fi

token=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
[ ${#token} -eq 64 ] || { echo "submit.sh: could not read 32 random bytes" >&2; exit 1; }
tmp=$(mktemp "${TMPDIR:-/tmp}/rs-vertex-job.XXXXXX.yaml")
trap 'rm -f "$tmp"' EXIT
chmod 600 "$tmp"
# (Entries, not pools: a YAML alias gives one entry to several pools.)
count=$(grep -c "value: $placeholder\$" "$config")
project_flag=()
[ -z "$project" ] || project_flag=(--project="$project")
if [ -n "$bucket" ]; then
  # A new object (its name random), written from stdin: the token touches
  # no file here. Vertex AI mounts the bucket at /gcs/<bucket> in every replica.
  object=${bucket%/}/reduction-server-job-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')/job-token
  printf %s "$token" | gcloud storage cp "${project_flag[@]}" - "$object" >/dev/null ||
    { echo "submit.sh: could not write the token to $object" >&2; exit 1; }
  path=/gcs/${object#gs://}
  # The placeholder's entry becomes REDUCER_JOB_TOKEN_FILE (the line before
  # names the variable).
  sed -e "/name: REDUCER_JOB_TOKEN\$/{N;s|name: REDUCER_JOB_TOKEN\(\n *\)value: $placeholder\$|name: REDUCER_JOB_TOKEN_FILE\1value: $path|}" \
    "$config" >"$tmp"
  [ "$(grep -c "value: $path\$" "$tmp")" = "$count" ] ||
    { echo "submit.sh: $config: each '$placeholder' must directly follow 'name: REDUCER_JOB_TOKEN'" >&2; exit 2; }
  where="$object (REDUCER_JOB_TOKEN_FILE); remove it once the job has ended: gcloud storage rm $object"
else
  sed "s/value: $placeholder\$/value: $token/" "$config" >"$tmp"
  where="the job's spec"
fi

args=(ai custom-jobs create --region="$region" --display-name="$name" --config="$tmp" "${project_flag[@]}")
echo "submitting $name (a new token for every pool's REDUCER_JOB_TOKEN placeholder, in $where)"
rc=0
gcloud "${args[@]}" || rc=$?
if [ "$rc" -ne 0 ] && [ -n "$bucket" ]; then
  # No job will read it: a token left behind would only be one more secret to guard.
  echo "submit.sh: the job was not created (gcloud exit $rc): removing the token $object" >&2
  gcloud storage rm "${project_flag[@]}" "$object" >/dev/null ||
    echo "submit.sh: could not remove $object; remove it yourself: gcloud storage rm $object" >&2
fi
exit "$rc"
