#!/usr/bin/env python3
"""deploy/vertex's submission scripts, run against stand-ins for gcloud, the
Vertex AI client library and Cloud Storage that answer as those are
documented to: one fresh token per job, in every pool or (--token-bucket) in
a file no CLUSTER_SPEC contains and that every component reads; never
printed or left on disk; removed from the bucket again when the job is not
created. (Split from deploy_specs_test.py, whose helpers it uses.)

  vertex_submit_test.py --probe P
"""
import argparse
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import deploy_specs_test as specs  # noqa: E402  (exits 77 without its packages)
import vertex_schema  # noqa: E402
import yaml  # noqa: E402
from deploy_specs_test import (PLACEHOLDER, TOKEN, container_env, dockerfile_env, path, probe, run,  # noqa: E402
                               vertex_cluster_spec, vertex_spec)


class SubmitTest(unittest.TestCase):
    def fake_gcloud(self, workdir, n):
        fake = os.path.join(workdir, "bin")
        capture = os.path.join(workdir, f"capture{n}")
        os.makedirs(fake, exist_ok=True)
        os.makedirs(capture)
        # `gcloud ai custom-jobs create --config=F` (failing with FAIL_CREATE set),
        # `gcloud storage cp - gs://...` (the object from stdin) and `gcloud
        # storage rm gs://...`, as gcloud takes them.
        with open(os.path.join(fake, "gcloud"), "w") as f:
            f.write('#!/bin/sh\n'
                    'if [ "$1" = storage ] && [ "$2" = rm ]; then\n'
                    '  for a in "$@"; do last=$a; done\n'
                    '  printf "%s\\n" "$last" >> "$CAPTURE/removed"; exit 0\n'
                    'fi\n'
                    'if [ "$1" = storage ]; then\n'
                    '  [ "$2" = cp ] || exit 2\n'
                    '  for a in "$@"; do last=$a; done\n'
                    '  case $last in gs://*) ;; *) echo "not a gs:// URL: $last" >&2; exit 2;; esac\n'
                    '  printf "%s\\n" "$last" > "$CAPTURE/object"; cat > "$CAPTURE/object-data"; exit 0\n'
                    'fi\n'
                    'printf "%s\\n" "$@" > "$CAPTURE/args"\n'
                    'if [ -n "$FAIL_CREATE" ]; then echo "ERROR: (gcloud.ai.custom-jobs.create) PERMISSION_DENIED" >&2;'
                    ' exit 1; fi\n'
                    'for a in "$@"; do case $a in --config=*) cp "${a#--config=}" "$CAPTURE/config.yaml";'
                    ' echo "${a#--config=}" > "$CAPTURE/config-path";; esac; done\n')
        os.chmod(os.path.join(fake, "gcloud"), 0o755)
        return {"PATH": f"{fake}:/usr/bin:/bin", "CAPTURE": capture, "TMPDIR": workdir}, capture

    def submit_with_gcloud(self, workdir, n, extra=()):
        env, capture = self.fake_gcloud(workdir, n)
        result = run([path("deploy", "vertex", "submit.sh"), "--region", "us-central1", "--project", "p",
                      "--display-name", "t", *extra], env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(capture, "args")) as f:
            args = f.read().split("\n")
        with open(os.path.join(capture, "config-path")) as f:
            config_path = f.read().strip()
        with open(os.path.join(capture, "config.yaml")) as f:
            config = yaml.safe_load(f)
        return args, config_path, config, result.stdout + result.stderr

    def check_tokens(self, pools, output):
        tokens = {e["value"] for p in pools for e in (p.get("containerSpec") or p.get("container_spec"))["env"]
                  if e["name"] == "REDUCER_JOB_TOKEN"}
        self.assertEqual(len(tokens), 1, "every pool must get the same token")
        token = tokens.pop()
        self.assertRegex(token, TOKEN)
        self.assertNotIn(token, output, "the token was printed")
        return token

    def check_token_file(self, spec, token, output, snake=False):
        """The bucket variant: every pool names the same file, the token is
        in no replica's CLUSTER_SPEC, and every component reads it there."""
        pools = spec["worker_pool_specs" if snake else "workerPoolSpecs"]
        key = "container_spec" if snake else "containerSpec"
        self.assertRegex(token, TOKEN)
        self.assertNotIn(token, output, "the token was printed")
        files = set()
        for pool in pools:
            names = [e["name"] for e in pool[key]["env"]]
            self.assertNotIn("REDUCER_JOB_TOKEN", names)
            files |= {e["value"] for e in pool[key]["env"] if e["name"] == "REDUCER_JOB_TOKEN_FILE"}
        self.assertEqual(len(files), 1, "every pool must name the same token file")
        token_path = files.pop()
        self.assertRegex(token_path, r"^/gcs/bucket/jobs/reduction-server-job-[0-9a-f]{16}/job-token$")
        camel = vertex_spec()["workerPoolSpecs"]
        for i, pool in enumerate(camel):
            pool["containerSpec"]["env"] = [
                {"name": "REDUCER_JOB_TOKEN_FILE", "value": token_path} if e["value"] == PLACEHOLDER else e
                for e in pool["containerSpec"]["env"]]
        self.assertNotIn(token, vertex_cluster_spec(camel, "workerpool1", 0))
        with tempfile.NamedTemporaryFile("w", suffix=".token") as f:
            f.write(token)
            f.flush()
            for pool, stage, who in ((camel[0], "training-base", "plugin"), (camel[2], "reducer-base", "reducerd")):
                env = {**dockerfile_env(stage), **{k: (f.name if v == token_path else v)
                                                   for k, v in container_env(pool).items()}}
                env["CLUSTER_SPEC"] = vertex_cluster_spec(camel, "workerpool0" if who == "plugin" else "workerpool2", 0)
                got = probe(env)
                self.assertTrue(got[who]["token"], f"{who} did not read the token file")
                if who == "plugin":
                    self.assertTrue(got["rs-train"]["token"], "rs-train did not read the token file")
        return token_path

    def test_submit_sh_gives_every_pool_one_fresh_token(self):
        with tempfile.TemporaryDirectory() as workdir:
            tokens = []
            for n in range(2):
                args, config_path, config, output = self.submit_with_gcloud(workdir, n)
                self.assertEqual(args[:3], ["ai", "custom-jobs", "create"])
                self.assertIn("--region=us-central1", args)
                self.assertIn("--display-name=t", args)
                self.assertFalse(os.path.exists(config_path), "the config with the token was left on disk")
                tokens.append(self.check_tokens(config["workerPoolSpecs"], output))
                errors = []
                vertex_schema.validate_job_spec(config, errors)
                self.assertEqual(errors, [])
                # Nothing but the token changed (scheduling included).
                for pool in config["workerPoolSpecs"]:
                    for e in pool["containerSpec"]["env"]:
                        if e["value"] == tokens[-1]:
                            e["value"] = PLACEHOLDER
                self.assertEqual(config, vertex_spec())
            self.assertNotEqual(tokens[0], tokens[1], "two jobs got the same token")

    def test_submit_sh_token_bucket_keeps_the_token_out_of_the_spec(self):
        with tempfile.TemporaryDirectory() as workdir:
            args, config_path, config, output = self.submit_with_gcloud(
                workdir, 0, ("--token-bucket", "gs://bucket/jobs"))
            capture = os.path.join(workdir, "capture0")
            with open(os.path.join(capture, "object")) as f:
                obj = f.read().strip()
            with open(os.path.join(capture, "object-data")) as f:
                token = f.read()
            self.assertFalse(os.path.exists(config_path))
            token_path = self.check_token_file(config, token, output)
            self.assertEqual(obj, "gs://" + token_path[len("/gcs/"):])
            self.assertIn(f"gcloud storage rm {obj}", output, "say how to remove the token afterwards")
            errors = []
            vertex_schema.validate_job_spec(config, errors)
            self.assertEqual(errors, [])
            env, _ = self.fake_gcloud(workdir, 1)
            result = run([path("deploy", "vertex", "submit.sh"), "--region", "r", "--token-bucket", "bucket"], env=env)
            self.assertEqual(result.returncode, 2)
            self.assertIn("is not gs://BUCKET", result.stderr)

    # Stand-ins for the Python client library, answering as the real one is
    # documented to: aiplatform.CustomJob raises without a staging bucket
    # ("staging_bucket should be passed to CustomJob constructor or should be
    # set using aiplatform.init(staging_bucket='gs://my-bucket')", from
    # google/cloud/aiplatform/jobs.py); aiplatform_v1.JobServiceClient takes
    # keyword arguments only and refuses a field its CustomJob message lacks
    # (proto-plus: "Unknown field for CustomJob"); storage's
    # Blob.upload_from_string with if_generation_match=0 writes a new object.
    SDK_STAND_IN = '''
import json, os
def _record(call, data):
    with open(os.environ["CAPTURE"], "a") as f:
        f.write(json.dumps({"call": call, "data": data}) + "\\n")
'''
    AIPLATFORM = '''
from google.cloud import _record
_staging = None
def init(project=None, location=None, staging_bucket=None, **kw):
    global _staging
    _staging = staging_bucket
    _record("init", {"project": project, "location": location, "staging_bucket": staging_bucket})
class CustomJob:
    def __init__(self, display_name, worker_pool_specs, staging_bucket=None, **kw):
        if not (staging_bucket or _staging):
            raise RuntimeError("staging_bucket should be passed to CustomJob constructor or "
                               "should be set using aiplatform.init(staging_bucket='gs://my-bucket')")
        _record("CustomJob", {"display_name": display_name, "worker_pool_specs": worker_pool_specs})
    def submit(self, **kw):
        _record("submit", kw)
    def run(self, **kw):
        _record("run", kw)
'''
    AIPLATFORM_V1 = '''
import enum
import os
from google.cloud import _record
_FIELDS = {"display_name", "job_spec", "labels", "encryption_spec"}
class _State(enum.Enum):
    JOB_STATE_RUNNING = 3
    JOB_STATE_SUCCEEDED = 4
class _Job:
    def __init__(self, name, state):
        self.name, self.state = name, state
class JobServiceClient:
    _polls = 0
    def __init__(self, *, client_options=None, **kw):
        _record("JobServiceClient", {"client_options": client_options})
    def create_custom_job(self, request=None, *, parent=None, custom_job=None, **kw):
        if os.environ.get("FAIL_CREATE"):
            raise PermissionError("403 Permission 'aiplatform.customJobs.create' denied")
        unknown = set(custom_job) - _FIELDS
        if unknown:
            raise ValueError("Unknown field for CustomJob: " + ", ".join(sorted(unknown)))
        _record("create_custom_job", {"parent": parent, "custom_job": custom_job})
        return _Job(parent + "/customJobs/123", _State.JOB_STATE_RUNNING)
    def get_custom_job(self, request=None, *, name=None, **kw):
        JobServiceClient._polls += 1
        _record("get_custom_job", {"name": name})
        return _Job(name, _State.JOB_STATE_SUCCEEDED if JobServiceClient._polls > 1 else _State.JOB_STATE_RUNNING)
'''
    STORAGE = '''
from google.cloud import _record
class _Blob:
    def __init__(self, bucket, name):
        self.bucket, self.name = bucket, name
    def upload_from_string(self, data, content_type=None, if_generation_match=None, **kw):
        _record("upload", {"uri": "gs://" + self.bucket + "/" + self.name, "data": data,
                           "if_generation_match": if_generation_match})
    def delete(self, **kw):
        _record("delete", {"uri": "gs://" + self.bucket + "/" + self.name})
class _Bucket:
    def __init__(self, name):
        self.name = name
    def blob(self, name):
        return _Blob(self.name, name)
class Client:
    def __init__(self, project=None, **kw):
        pass
    def bucket(self, name):
        return _Bucket(name)
'''

    def submit_with_sdk(self, workdir, n, extra=(), fail_create=False):
        cloud = os.path.join(workdir, "google", "cloud")
        if not os.path.isdir(cloud):
            os.makedirs(os.path.join(cloud, "aiplatform"))
            open(os.path.join(workdir, "google", "__init__.py"), "w").close()
            for name, text in (("__init__.py", self.SDK_STAND_IN), ("aiplatform/__init__.py", self.AIPLATFORM),
                               ("aiplatform_v1.py", self.AIPLATFORM_V1), ("storage.py", self.STORAGE)):
                with open(os.path.join(cloud, name), "w") as f:
                    f.write(text)
        capture = os.path.join(workdir, f"calls{n}.jsonl")
        # -S: no site .pth files, whose google namespace (Debian's
        # google-auth) would hide the stand-in; Debian's packages (yaml)
        # stay reachable through PYTHONPATH.
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{workdir}:/usr/lib/python3/dist-packages", "CAPTURE": capture}
        if fail_create:
            env["FAIL_CREATE"] = "1"
        result = run([sys.executable, "-S", path("deploy", "vertex", "submit.py"), "--project", "p",
                      "--region", "us-central1", "--display-name", "t", *extra], env=env)
        calls = []
        if os.path.exists(capture):
            with open(capture) as f:
                calls = [json.loads(line) for line in f]
        return result, calls

    def test_sdk_stand_in_answers_as_the_sdk(self):
        # The stand-in itself: CustomJob without a staging bucket fails as
        # the real SDK does, so a submit.py that used it so would fail here.
        with tempfile.TemporaryDirectory() as workdir:
            self.submit_with_sdk(workdir, 0)
            env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": workdir, "CAPTURE": os.path.join(workdir, "c.jsonl")}
            code = ("from google.cloud import aiplatform\naiplatform.init(project='p', location='l')\n"
                    "aiplatform.CustomJob(display_name='t', worker_pool_specs=[])\n")
            result = run([sys.executable, "-S", "-c", code], env=env)
            self.assertNotEqual(result.returncode, 0)
            self.assertIn("staging_bucket should be passed to CustomJob constructor", result.stderr)

    def test_submit_py_gives_every_pool_one_fresh_token(self):
        with tempfile.TemporaryDirectory() as workdir:
            tokens = []
            for n in range(2):
                result, calls = self.submit_with_sdk(workdir, n)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual([c["call"] for c in calls], ["JobServiceClient", "create_custom_job"])
                self.assertEqual(calls[0]["data"]["client_options"],
                                 {"api_endpoint": "us-central1-aiplatform.googleapis.com"})
                created = calls[1]["data"]
                self.assertEqual(created["parent"], "projects/p/locations/us-central1")
                self.assertEqual(created["custom_job"]["display_name"], "t")
                spec = created["custom_job"]["job_spec"]
                errors = []
                vertex_schema.validate_job_spec(spec, errors, snake=True)
                self.assertEqual(errors, [])
                # The whole spec, scheduling included, as gcloud sends it.
                self.assertIs(spec["scheduling"]["restart_job_on_worker_restart"], True)
                tokens.append(self.check_tokens(spec["worker_pool_specs"], result.stdout + result.stderr))
            self.assertNotEqual(tokens[0], tokens[1], "two jobs got the same token")

    def test_a_job_not_created_leaves_no_token_behind(self):
        # The token goes to the bucket before the job exists (its replicas
        # read it as they start): when the creation fails, both scripts
        # remove it and exit non-zero.
        with tempfile.TemporaryDirectory() as workdir:
            env, capture = self.fake_gcloud(workdir, 0)
            result = run([path("deploy", "vertex", "submit.sh"), "--region", "r", "--token-bucket", "gs://bucket/t"],
                         env={**env, "FAIL_CREATE": "1"})
            self.assertEqual(result.returncode, 1, result.stderr)
            with open(os.path.join(capture, "object")) as f:
                obj = f.read().strip()
            with open(os.path.join(capture, "removed")) as f:
                self.assertEqual(f.read().split(), [obj])
            self.assertIn("the job was not created", result.stderr)
            result, calls = self.submit_with_sdk(workdir, 1, ("--token-bucket", "gs://bucket/t"), fail_create=True)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertEqual([c["call"] for c in calls], ["upload", "JobServiceClient", "delete"])
            self.assertEqual(calls[2]["data"]["uri"], calls[0]["data"]["uri"])
            self.assertIn("the job was not created: PermissionError", result.stderr)
            # Without a bucket there is nothing to remove; the failure still shows.
            result, calls = self.submit_with_sdk(workdir, 2, fail_create=True)
            self.assertEqual(result.returncode, 1)
            self.assertEqual([c["call"] for c in calls], ["JobServiceClient"])

    def test_submit_py_token_bucket_keeps_the_token_out_of_the_spec(self):
        with tempfile.TemporaryDirectory() as workdir:
            result, calls = self.submit_with_sdk(workdir, 0, ("--token-bucket", "gs://bucket/jobs", "--wait",
                                                              "--poll-seconds", "0"))
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual([c["call"] for c in calls],
                             ["upload", "JobServiceClient", "create_custom_job", "get_custom_job", "get_custom_job"])
            upload = calls[0]["data"]
            self.assertEqual(upload["if_generation_match"], 0, "the token must go to a new object")
            spec = calls[2]["data"]["custom_job"]["job_spec"]
            token_path = self.check_token_file(spec, upload["data"], result.stdout + result.stderr, snake=True)
            self.assertEqual(upload["uri"], "gs://" + token_path[len("/gcs/"):])
            self.assertIn("JOB_STATE_SUCCEEDED", result.stdout)
            result, calls = self.submit_with_sdk(workdir, 1, ("--token-bucket", "bucket"))
            self.assertEqual(result.returncode, 1)
            self.assertIn("is not gs://BUCKET", result.stderr)
            self.assertEqual(calls, [], "nothing is submitted after a bad --token-bucket")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--probe", required=True, help="rs_cluster_spec_probe: what the components read from a token file")
    args, rest = p.parse_known_args()
    specs.ARGS = args
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()
