#!/usr/bin/env python3
"""deploy/kubernetes as a cluster would take it, without one:

- The reducers' PodDisruptionBudget under the disruption controller's rules
  (pkg/controller/disruption/disruption.go): over pods owned by a Job, whose
  scale the controller cannot read, only an integer minAvailable allows an
  eviction (kubernetes/kubernetes#129625, #121957). So drains, autoscaler
  scale-downs and upgrades take one reducer at a time instead of hanging.
- A second job in the same namespace, made as kustomization.yaml says (a copy
  with `namePrefix: job2-`), rendered by `kubectl kustomize` where kubectl is
  installed and always by this file's own rendering of kustomize's rules
  (namePrefix on every object, nameReference from kustomizeconfig.yaml):
  every reference follows the new names (the token's Secret, the budget's
  selector, REDUCER_ADDRS, torchrun's master as the pods resolve them), and
  neither job's budget counts the other's reducers.

Only the rendering and the rules above are checked here: nothing ran on a
Kubernetes cluster.
"""
import copy
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
KUSTOMIZE_DIR = os.path.join(ROOT, "deploy", "kubernetes")
sys.path.insert(0, HERE)
try:
    import yaml
except ImportError as e:
    print(f"SKIPPED: {e} (python3-yaml: scripts/lib/deps.sh's test packages)")
    sys.exit(77)
import jobset_pods  # noqa: E402

PREFIX = "job2-"


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def kustomization(folder=KUSTOMIZE_DIR):
    return load(os.path.join(folder, "kustomization.yaml"))[0]


def by_kind(objects, kind):
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


# --- the disruption controller ----------------------------------------------------

def disruptions_allowed(pdb_spec, healthy, owner_has_scale):
    """status.disruptionsAllowed as the disruption controller computes it
    (getExpectedPodCount, then currentHealthy - desiredHealthy). maxUnavailable
    and a percentage need the owner's scale; a Job has no scale subresource,
    so the controller fails to sync the budget and allows nothing."""
    if "maxUnavailable" in pdb_spec or isinstance(pdb_spec.get("minAvailable"), str):
        if not owner_has_scale:
            return 0
        raise NotImplementedError("owners with a scale are not what these budgets cover")
    desired = int(pdb_spec.get("minAvailable", 0))
    return max(0, healthy - desired)


class DisruptionBudgetTest(unittest.TestCase):
    def objects(self):
        return load(os.path.join(KUSTOMIZE_DIR, "reducers.yaml")) + load(
            os.path.join(KUSTOMIZE_DIR, "training-jobset.yaml"))

    def test_the_model_refuses_what_the_controller_refuses(self):
        # The bug this guards against: a budget that looks like "one at a
        # time" but over a Job's pods allows no eviction at all.
        self.assertEqual(disruptions_allowed({"maxUnavailable": 1}, 4, owner_has_scale=False), 0)
        self.assertEqual(disruptions_allowed({"minAvailable": "75%"}, 4, owner_has_scale=False), 0)
        self.assertEqual(disruptions_allowed({"minAvailable": 3}, 4, owner_has_scale=False), 1)

    def test_drains_take_one_reducer_at_a_time(self):
        objects = self.objects()
        pdb = by_kind(objects, "PodDisruptionBudget")["spec"]
        reducers = jobset_pods.replicated_job(by_kind(objects, "JobSet"), "reducers")["template"]["spec"]
        n = reducers["parallelism"]
        self.assertIsInstance(pdb.get("minAvailable"), int, "an integer minAvailable: the pods belong to a Job")
        # All serving: one may go. One already away: none more until it is back.
        self.assertEqual(disruptions_allowed(pdb, n, owner_has_scale=False), 1)
        self.assertEqual(disruptions_allowed(pdb, n - 1, owner_has_scale=False), 0)

    def test_budget_covers_exactly_this_jobs_reducers(self):
        objects = self.objects()
        selector = by_kind(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"]
        jobset = by_kind(objects, "JobSet")
        matches = lambda labels: all(labels.get(k) == v for k, v in selector.items())  # noqa: E731
        self.assertTrue(matches(jobset_pods.pod_labels(jobset, "reducers")))
        self.assertFalse(matches(jobset_pods.pod_labels(jobset, "workers")))
        other = copy.deepcopy(jobset)
        other["metadata"]["name"] = "another-job"
        self.assertFalse(matches(jobset_pods.pod_labels(other, "reducers")), "another job's reducers")


# --- a second job: namePrefix ------------------------------------------------------

def prefixed_copy(workdir):
    """A second job, made as kustomization.yaml says: a copy of the folder with
    a namePrefix and a token of its own."""
    folder = os.path.join(workdir, "job2")
    shutil.copytree(KUSTOMIZE_DIR, folder, ignore=shutil.ignore_patterns("job-token"))
    with open(os.path.join(folder, "kustomization.yaml"), "a") as f:
        f.write(f"namePrefix: {PREFIX}\n")
    with open(os.path.join(folder, "job-token"), "w") as f:
        f.write("0" * 64 + "\n")
    return folder


def render_with_kubectl(folder):
    result = subprocess.run(["kubectl", "kustomize", folder], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise AssertionError(f"kubectl kustomize {folder} failed: {result.stderr}")
    return [d for d in yaml.safe_load_all(result.stdout) if d is not None]


def _walk(node, keys, rename):
    """kustomize's field paths: keys separated by '/', '\\/' a '/' inside a
    key; lists are walked through."""
    if isinstance(node, list):
        for item in node:
            _walk(item, keys, rename)
        return
    if not isinstance(node, dict) or keys[0] not in node:
        return
    if len(keys) == 1:
        if isinstance(node[keys[0]], str):
            node[keys[0]] = rename(node[keys[0]])
        return
    _walk(node[keys[0]], keys[1:], rename)


def render_by_rules(folder):
    """kustomize's rules for this kustomization, written out: resources,
    the secretGenerator (no hash suffix), namePrefix on every object's name,
    and nameReference from the configurations: a field naming an object
    renamed by the prefix is renamed with it. Anything else in the
    kustomization fails the rendering, so that a change is not missed."""
    k = kustomization(folder)
    known = {"apiVersion", "kind", "resources", "secretGenerator", "generatorOptions", "configurations", "namePrefix"}
    unknown = set(k) - known
    if unknown:
        raise AssertionError(f"render_by_rules does not know {sorted(unknown)}: teach it, or use kubectl kustomize")
    objects = []
    for name in k["resources"]:
        objects += load(os.path.join(folder, name))
    assert k["generatorOptions"]["disableNameSuffixHash"] is True
    for secret in k.get("secretGenerator", []):
        objects.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": secret["name"]},
                        "data": {f.partition("=")[0]: "..." for f in secret["files"]}})
    prefix = k.get("namePrefix", "")
    renamed = {}
    for o in objects:
        renamed[(o["kind"], o["metadata"]["name"])] = prefix + o["metadata"]["name"]
        o["metadata"]["name"] = prefix + o["metadata"]["name"]
    for config in k.get("configurations", []):
        for ref in load(os.path.join(folder, config))[0]["nameReference"]:
            def rename(value, kind=ref["kind"]):
                return renamed.get((kind, value), value)
            for spec in ref["fieldSpecs"]:
                keys = [key.replace("\0", "/") for key in spec["path"].replace("\\/", "\0").split("/")]
                for o in objects:
                    if o["kind"] == spec["kind"]:
                        _walk(o, keys, rename)
    return objects


class SecondJobTest(unittest.TestCase):
    def check_rendering(self, objects, how):
        jobset = by_kind(objects, "JobSet")
        name = jobset["metadata"]["name"]
        self.assertEqual(name, PREFIX + "train", how)
        # The token: the Secret both pod templates mount exists under its new name.
        secrets = {o["metadata"]["name"] for o in objects if o["kind"] == "Secret"}
        for rjob in ("reducers", "workers"):
            volumes = jobset_pods.pod_template(jobset, rjob)["spec"]["volumes"]
            token = next(v for v in volumes if v["name"] == "job-token")["secret"]["secretName"]
            self.assertIn(token, secrets, f"{how}: {rjob} mount a Secret that does not exist")
            self.assertTrue(token.startswith(PREFIX), f"{how}: {rjob} mount the first job's token")
        # The budget counts this job's reducers and not the first job's.
        selector = by_kind(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"]
        matches = lambda labels: all(labels.get(k) == v for k, v in selector.items())  # noqa: E731
        self.assertTrue(matches(jobset_pods.pod_labels(jobset, "reducers")), f"{how}: the budget misses its reducers")
        first = copy.deepcopy(jobset)
        first["metadata"]["name"] = "train"
        self.assertFalse(matches(jobset_pods.pod_labels(first, "reducers")), f"{how}: the budget counts job 1's")
        # The workers find this job's reducers and master, by the names the
        # JobSet gives its pods (<jobset>-<replicatedJob>-<job>-<pod>.<jobset>).
        trainer = jobset_pods.pod_template(jobset, "workers")["spec"]["containers"][0]
        env = jobset_pods.container_env(jobset, "workers", trainer)
        n = jobset_pods.replicated_job(jobset, "reducers")["template"]["spec"]["parallelism"]
        self.assertEqual(env["REDUCER_ADDRS"], f"{name}-reducers-0-{{0..{n - 1}}}.{name}:7450", how)
        argv = jobset_pods.command_argv(jobset, "workers", trainer, {"JOB_COMPLETION_INDEX": "1"})
        self.assertIn(f"--master_addr={name}-workers-0-0.{name}", argv, how)
        self.assertIn("--node_rank=1", argv, how)

    def test_rendered_by_kustomizes_rules(self):
        with tempfile.TemporaryDirectory() as workdir:
            self.check_rendering(render_by_rules(prefixed_copy(workdir)), "by kustomize's rules")

    def test_rendered_by_kubectl_kustomize(self):
        if shutil.which("kubectl") is None:
            self.skipTest("kubectl is not installed (Debian has no kustomize): checked by kustomize's rules only")
        with tempfile.TemporaryDirectory() as workdir:
            self.check_rendering(render_with_kubectl(prefixed_copy(workdir)), "by kubectl kustomize")

    def test_the_rules_agree_with_kubectl(self):
        # The rendering by rules is what runs where kubectl is missing: where
        # it is here, both must give the same names and references.
        if shutil.which("kubectl") is None:
            self.skipTest("kubectl is not installed")
        with tempfile.TemporaryDirectory() as workdir:
            folder = prefixed_copy(workdir)
            ours, theirs = render_by_rules(folder), render_with_kubectl(folder)
        for kind in ("JobSet", "PodDisruptionBudget"):
            self.assertEqual(by_kind(ours, kind), by_kind(theirs, kind), kind)
        self.assertEqual(sorted((o["kind"], o["metadata"]["name"]) for o in ours),
                         sorted((o["kind"], o["metadata"]["name"]) for o in theirs))

    def test_first_job_keeps_its_names(self):
        with tempfile.TemporaryDirectory() as workdir:
            folder = os.path.join(workdir, "job1")
            shutil.copytree(KUSTOMIZE_DIR, folder, ignore=shutil.ignore_patterns("job-token"))
            with open(os.path.join(folder, "job-token"), "w") as f:
                f.write("1" * 64 + "\n")
            objects = render_by_rules(folder)
        jobset = by_kind(objects, "JobSet")
        env = jobset_pods.container_env(jobset, "workers", jobset_pods.pod_template(jobset, "workers")["spec"]["containers"][0])
        self.assertEqual(env["REDUCER_ADDRS"], "train-reducers-0-{0..1}.train:7450")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[1:])
