#!/usr/bin/env python3
"""Submits job.yaml as a Vertex AI custom job with the Python SDK.

  pip install google-cloud-aiplatform pyyaml
  deploy/vertex/submit.py --project P --region us-central1 [--display-name N] [--config job.yaml] [--wait]

A job token is generated here for this job only (32 random bytes, hex) and
set as REDUCER_JOB_TOKEN in every pool that job.yaml gives the placeholder:
the reducers require it, the GPU workers prove they hold it. It is never
printed. What it protects and what not: README.md, "Vertex AI".
"""
import argparse
import secrets
import sys
import time

import yaml

PLACEHOLDER = "generated-at-submission"
TOKEN_VARIABLE = "REDUCER_JOB_TOKEN"


def snake_case(name):
    """workerPoolSpecs -> worker_pool_specs: the SDK takes the API's field
    names as protobuf spells them; gcloud's YAML spells them in camelCase."""
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def to_sdk(value):
    if isinstance(value, dict):
        return {snake_case(k): to_sdk(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_sdk(v) for v in value]
    return value


def with_token(spec, token):
    """The worker pool specs with every placeholder token replaced; the
    number of pools that got it."""
    pools = spec["workerPoolSpecs"]
    given = 0
    for pool in pools:
        container = pool.get("containerSpec")
        if not container:  # an empty pool ({}) skips it
            continue
        # YAML aliases share one list between pools: replace in a copy.
        container["env"] = env = [dict(e) for e in container.get("env", [])]
        for entry in env:
            if entry["name"] == TOKEN_VARIABLE and entry["value"] == PLACEHOLDER:
                entry["value"] = token
                given += 1
    return pools, given


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--project", required=True)
    p.add_argument("--region", required=True, help="e.g. us-central1")
    p.add_argument("--display-name", default="reduction-server-" + time.strftime("%Y%m%d-%H%M%S"))
    p.add_argument("--config", default=__file__.rsplit("/", 1)[0] + "/job.yaml")
    p.add_argument("--staging-bucket", help="gs://... (the SDK needs one for some jobs)")
    p.add_argument("--wait", action="store_true", help="wait for the job to finish")
    args = p.parse_args(argv)

    with open(args.config) as f:
        spec = yaml.safe_load(f)
    token = secrets.token_hex(32)
    pools, given = with_token(spec, token)
    if given == 0:
        sys.exit(f"submit.py: {args.config} has no {TOKEN_VARIABLE} set to '{PLACEHOLDER}' to replace")

    from google.cloud import aiplatform  # imported late: --help works without it

    aiplatform.init(project=args.project, location=args.region, staging_bucket=args.staging_bucket)
    job = aiplatform.CustomJob(display_name=args.display_name, worker_pool_specs=to_sdk(pools))
    print(f"submitting {args.display_name} ({given} {TOKEN_VARIABLE} entries set to a new token)")
    if args.wait:
        job.run(sync=True)
    else:
        job.submit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
