#!/usr/bin/env python3
"""Submits job.yaml as a Vertex AI custom job with the Python client library.

  pip install google-cloud-aiplatform pyyaml
  deploy/vertex/submit.py --project P --region us-central1 [--display-name N] [--config job.yaml]
                          [--token-bucket gs://BUCKET[/PREFIX]] [--wait]

The job is created the way `gcloud ai custom-jobs create` creates it:
JobServiceClient.create_custom_job with job.yaml's whole CustomJobSpec
(scheduling included). The SDK's aiplatform.CustomJob would need a staging
bucket (it raises without one) and takes only the worker pools from a spec.

A job token is generated here for this job only (32 random bytes, hex). By
default it replaces every REDUCER_JOB_TOKEN placeholder in job.yaml, which
puts it in the job's spec, and so in every replica's CLUSTER_SPEC. With
--token-bucket it goes instead to a new object in that bucket, which
Vertex AI mounts in every replica under /gcs/, and the pools get
REDUCER_JOB_TOKEN_FILE naming it: the spec holds only the path; if the job
is not created, the object is removed again. The token is never printed. What it protects and what not: docs/guide/deploying.md, "The job token".
"""
import argparse
import re
import secrets
import sys
import time

import yaml

PLACEHOLDER = "generated-at-submission"
TOKEN_VARIABLE = "REDUCER_JOB_TOKEN"
FILE_VARIABLE = "REDUCER_JOB_TOKEN_FILE"
TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"}


def snake_case(name):
    """workerPoolSpecs -> worker_pool_specs: the client library takes the
    API's field names as protobuf spells them; gcloud's YAML spells them in
    camelCase."""
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def to_sdk(value):
    if isinstance(value, dict):
        return {snake_case(k): to_sdk(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_sdk(v) for v in value]
    return value


def with_token(spec, entry):
    """The spec with every placeholder token entry replaced by `entry`
    (name and value); the number of pools that got it."""
    given = 0
    for pool in spec["workerPoolSpecs"]:
        container = pool.get("containerSpec")
        if not container:  # an empty pool ({}) skips it
            continue
        # YAML aliases share one list between pools: replace in a copy.
        container["env"] = env = [dict(e) for e in container.get("env", [])]
        for e in env:
            if e["name"] == TOKEN_VARIABLE and e["value"] == PLACEHOLDER:
                e.update(entry)
                given += 1
    return spec, given


def split_bucket(uri):
    m = re.fullmatch(r"gs://([a-z0-9][a-z0-9._-]{1,221}[a-z0-9])(/.*)?", uri or "")
    if not m:
        raise ValueError(f"--token-bucket '{uri}' is not gs://BUCKET or gs://BUCKET/PREFIX")
    return m.group(1), (m.group(2) or "").strip("/")


def store_token(project, uri, token):
    """Writes the token to a new object under `uri`; its path in the
    replicas (Vertex AI mounts buckets at /gcs/<bucket>), its gs:// name and
    the object (to remove it if the job is not created)."""
    bucket, prefix = split_bucket(uri)
    name = "/".join(p for p in (prefix, "reduction-server-job-" + secrets.token_hex(8), "job-token") if p)
    from google.cloud import storage  # a dependency of google-cloud-aiplatform

    blob = storage.Client(project=project).bucket(bucket).blob(name)
    # if_generation_match=0: a new object, never one that exists.
    blob.upload_from_string(token, content_type="text/plain", if_generation_match=0)
    return f"/gcs/{bucket}/{name}", f"gs://{bucket}/{name}", blob


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--project", required=True)
    p.add_argument("--region", required=True, help="e.g. us-central1")
    p.add_argument("--display-name", default="reduction-server-" + time.strftime("%Y%m%d-%H%M%S"))
    p.add_argument("--config", default=__file__.rsplit("/", 1)[0] + "/job.yaml")
    p.add_argument("--token-bucket", metavar="gs://BUCKET[/PREFIX]",
                   help="keep the token out of the job's spec: store it in this bucket and give the pools "
                        f"{FILE_VARIABLE}=/gcs/... (the job's service account must be able to read it)")
    p.add_argument("--wait", action="store_true", help="wait for the job to end; exit 1 unless it succeeded")
    p.add_argument("--poll-seconds", type=float, default=60, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    with open(args.config) as f:
        spec = yaml.safe_load(f)
    token = secrets.token_hex(32)
    if args.token_bucket:
        try:
            split_bucket(args.token_bucket)
        except ValueError as e:
            sys.exit(f"submit.py: {e}")
    spec, given = with_token(spec, {})  # count first: nothing is stored for a config without placeholders
    if given == 0:
        sys.exit(f"submit.py: {args.config} has no {TOKEN_VARIABLE} set to '{PLACEHOLDER}' to replace")
    where, stored = "the job's spec", None
    if args.token_bucket:
        # Before the job: its replicas read the object as they start.
        path, uri, stored = store_token(args.project, args.token_bucket, token)
        spec, given = with_token(spec, {"name": FILE_VARIABLE, "value": path})
        where = f"{uri} ({FILE_VARIABLE}); remove it once the job has ended: gcloud storage rm {uri}"
    else:
        spec, given = with_token(spec, {"value": token})

    print(f"submitting {args.display_name} (a new token for {given} pools, in {where})", flush=True)
    try:
        # Imported late: --help works without the library.
        from google.cloud import aiplatform_v1

        client = aiplatform_v1.JobServiceClient(
            client_options={"api_endpoint": f"{args.region}-aiplatform.googleapis.com"})
        job = client.create_custom_job(
            parent=f"projects/{args.project}/locations/{args.region}",
            custom_job={"display_name": args.display_name, "job_spec": to_sdk(spec)})
    except Exception as e:
        # No job will read the token: remove it rather than leave a secret behind.
        print(f"submit.py: the job was not created: {type(e).__name__}: {e}", file=sys.stderr)
        if stored is not None:
            try:
                stored.delete()
                print(f"submit.py: removed the token {uri}", file=sys.stderr)
            except Exception as e2:
                print(f"submit.py: could not remove {uri} ({e2}); remove it yourself: gcloud storage rm {uri}",
                      file=sys.stderr)
        return 1
    print(f"created {job.name}", flush=True)
    if not args.wait:
        return 0
    # Bounded by the API's longest job (scheduling.timeout is at most 7 days
    # by default; a day more for queueing).
    for _ in range(int(8 * 86400 / max(args.poll_seconds, 1e-3)) + 1):
        state = client.get_custom_job(name=job.name).state
        name = getattr(state, "name", str(state))
        if name in TERMINAL:
            print(f"{job.name}: {name}")
            return 0 if name == "JOB_STATE_SUCCEEDED" else 1
        time.sleep(args.poll_seconds)
    print(f"{job.name}: still running after 8 days; stopped waiting", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
