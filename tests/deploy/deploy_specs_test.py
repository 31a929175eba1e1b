#!/usr/bin/env python3
"""The deployment specs of deploy/ and docker/, checked without a cloud:

- Vertex AI (deploy/vertex/job.yaml): every field against the API's schema
  (vertex_schema.py), the reducer pool sized by `reducerctl plan`, every
  environment variable one of ours, the job restarted whole when a replica
  restarts, and, replica by replica, the CLUSTER_SPEC Vertex AI would set:
  the plugin and rs-train on pools 0 and 1 find exactly pool 2's reducers,
  each reducer listens on its own entry's port, rs-launch gives torchrun
  the nodes of pools 0 and 1. (The submission scripts: vertex_submit_test.py.)
- Kubernetes (deploy/kubernetes): every object against Kubernetes' own
  schemas (k8s_schema.py: Debian's python3-kubernetes models; JobSet and
  PodMonitor by their API types), the references between them (JobSet
  names, Secret, REDUCER_ADDRS, torchrun's node count and master), what the
  platform does with them (a token file the pod's user can read, restarts,
  QoS, the restricted Pod Security Standard, placement, disruption budget),
  the pods' environments as the components read them, the Prometheus
  scrape configuration.
- docker/: compose.yaml valid, reducers given time to drain and workers
  waiting for their health, its and the images' variables ours, the
  Grafana dashboard drawing only documented metrics.

  deploy_specs_test.py --probe P --reducerd-table T --plugin-table T --rs-train B --reducerctl B
"""
import argparse
import copy
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
try:
    import yaml
    import k8s_schema  # python3-kubernetes
except ImportError as e:
    print(f"SKIPPED: {e} (python3-yaml and python3-kubernetes: scripts/lib/deps.sh's test packages)")
    sys.exit(77)
import jobset_pods  # noqa: E402
import vertex_schema  # noqa: E402

ARGS = None
PLACEHOLDER = "generated-at-submission"
TOKEN = re.compile(r"^[0-9a-f]{64}$")
# NCCL's own variables that the plugin's documentation tells users to set
# (docs/reference/settings.md, "NCCL's own variables").
NCCL_VARIABLES = {"NCCL_NET_PLUGIN", "NCCL_NET_PLUGIN_REF_COUNT", "NCCL_COLLNET_ENABLE", "NCCL_DEBUG"}
# Machine facts for sizing (Compute Engine's documentation): an a2-highgpu-8g
# has 8 A100 GPUs and 100 Gbit/s of network; an n1-highcpu-16 32 Gbit/s.
GBPS = {"a2-highgpu-8g": 100, "n1-highcpu-16": 32}


def path(*parts):
    return os.path.join(ROOT, *parts)


def run(cmd, env=None, **kw):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, **kw)


def load_yaml_docs(*parts):
    with open(path(*parts)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


class Registries:
    """The names each component reads, from the components themselves."""

    def __init__(self):
        table = run([ARGS.reducerd_table]).stdout + run([ARGS.reducerd_table, "control"]).stdout
        self.reducerd = set(re.findall(r"^\| [^|]* \| `([A-Z][A-Z0-9_]*)` \|", table, re.M))
        self.plugin = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", run([ARGS.plugin_table]).stdout, re.M))
        help_text = run([ARGS.rs_train, "--help"]).stdout
        # Flags name their variable as "[env NAME]"; the "Environment only:"
        # list has "  NAME: meaning" lines.
        self.trainer = set(re.findall(r"\[env ([A-Z][A-Z0-9_]*)\]", help_text))
        env_only = help_text.split("\nEnvironment only:", 1)[1] if "\nEnvironment only:" in help_text else ""
        self.trainer |= set(re.findall(r"^  ([A-Z][A-Z0-9_]*):", env_only, re.M))
        self.reducerctl = set(re.findall(r"\(Env:([A-Z_]+)\)", run([ARGS.reducerctl, "--help"]).stdout))
        with open(path("docs", "reference", "settings.md")) as f:
            reference = f.read()
        self.nccl = {name for name in NCCL_VARIABLES if f"`{name}" in reference}
        assert self.reducerd and self.plugin and self.trainer and self.reducerctl, "a registry came back empty"
        self.worker = self.plugin | self.trainer | self.nccl


REGISTRIES = None


def registries():
    global REGISTRIES
    if REGISTRIES is None:
        REGISTRIES = Registries()
    return REGISTRIES


def probe(env):
    """What the plugin, reducerd and rs-train conclude from `env` alone."""
    clean = {"PATH": "/usr/bin:/bin"}
    clean.update(env)
    result = run([ARGS.probe], env=clean)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def dockerfile_env(stage):
    """ENV of one stage of docker/Dockerfile, as a dict."""
    with open(path("docker", "Dockerfile")) as f:
        text = f.read().replace("\\\n", " ")
    env, current = {}, None
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "FROM":
            current = words[-1] if "AS" in words else None
        elif words[0] == "ENV" and current == stage:
            for item in shlex.split(line)[1:]:
                key, _, value = item.partition("=")
                env[key] = value
    assert env, f"no ENV in stage {stage}"
    return env


# --- Vertex AI ----------------------------------------------------------------

def vertex_spec():
    with open(path("deploy", "vertex", "job.yaml")) as f:
        return yaml.safe_load(f)


def vertex_cluster_spec(pools, task_type, index, job_id="5d1e9c"):
    """CLUSTER_SPEC as Vertex AI sets it on each replica of this job."""
    cluster = {}
    for i, pool in enumerate(pools):
        if pool:
            cluster[f"workerpool{i}"] = [
                f"cmle-training-workerpool{i}-{job_id}-{k}:2222" for k in range(int(pool["replicaCount"]))]
    return json.dumps({"cluster": cluster, "environment": "cloud",
                       "task": {"type": task_type, "index": index, "trial": ""}, "job": {"workerPoolSpecs": pools}})


def container_env(pool, token="0" * 64):
    return {e["name"]: (token if e["value"] == PLACEHOLDER else e["value"])
            for e in pool["containerSpec"].get("env", [])}


class VertexTest(unittest.TestCase):
    def test_spec_matches_the_api_schema(self):
        errors = []
        vertex_schema.validate_job_spec(vertex_spec(), errors)
        self.assertEqual(errors, [])

    def test_schema_check_catches_mistakes(self):
        # The check must be able to fail: each mistake below is one the API refuses.
        mistakes = {
            "unknown field": lambda s: s["workerPoolSpecs"][2].update(replicaCnt=2),
            "bad accelerator": lambda s: s["workerPoolSpecs"][0]["machineSpec"].update(acceleratorType="A100"),
            "no image": lambda s: s["workerPoolSpecs"][2]["containerSpec"].pop("imageUri"),
            "no machine type": lambda s: s["workerPoolSpecs"][1]["machineSpec"].pop("machineType"),
            "too many variables": lambda s: s["workerPoolSpecs"][2]["containerSpec"]["env"].extend(
                {"name": f"V{i}", "value": "x"} for i in range(100)),
            "two chiefs": lambda s: s["workerPoolSpecs"][0].update(replicaCount=2),
            "snake_case key": lambda s: s["workerPoolSpecs"][2].update(replica_count=2),
            "bad disk": lambda s: s["workerPoolSpecs"][0]["diskSpec"].update(bootDiskType="ssd"),
        }
        for what, mistake in mistakes.items():
            spec = copy.deepcopy(vertex_spec())
            mistake(spec)
            errors = []
            vertex_schema.validate_job_spec(spec, errors)
            self.assertTrue(errors, f"the schema check accepted: {what}")

    def test_reducer_pool_is_sized_by_reducerctl_plan(self):
        pools = vertex_spec()["workerPoolSpecs"]
        workers = int(pools[0]["replicaCount"]) + int(pools[1]["replicaCount"])
        worker_gbps = GBPS[pools[0]["machineSpec"]["machineType"]]
        reducer_gbps = GBPS[pools[2]["machineSpec"]["machineType"]]
        plan = run([ARGS.reducerctl, "plan", "--workers", str(workers), "--worker-gbps", str(worker_gbps),
                    "--reducer-gbps", str(reducer_gbps)]).stdout
        recommended = int(re.search(r"recommended\s+(\d+) reducers", plan).group(1))
        self.assertEqual(int(pools[2]["replicaCount"]), recommended, plan)
        # Named by its machine type, the plan prints pool 2 as job.yaml has it.
        plan = run([ARGS.reducerctl, "plan", "--workers", str(workers), "--worker-gbps", str(worker_gbps),
                    "--reducer-machine", pools[2]["machineSpec"]["machineType"]]).stdout
        self.assertIn(f"workerPoolSpecs[2]: replicaCount {pools[2]['replicaCount']}, "
                      f"machineSpec.machineType {pools[2]['machineSpec']['machineType']}\n", plan)

    def test_every_variable_is_ours(self):
        reg = registries()
        pools = vertex_spec()["workerPoolSpecs"]
        for i in (0, 1):
            self.assertLessEqual(set(container_env(pools[i])), reg.worker, f"pool {i}")
        self.assertLessEqual(set(container_env(pools[2])), reg.reducerd, "pool 2")
        for i, pool in enumerate(pools):
            self.assertIn("REDUCER_JOB_TOKEN", container_env(pool), f"pool {i} gets no job token")
        # The reducers' container takes no command or arguments.
        self.assertNotIn("command", pools[2]["containerSpec"])
        self.assertNotIn("args", pools[2]["containerSpec"])

    def test_every_replica_finds_exactly_pool_2s_reducers(self):
        pools = vertex_spec()["workerPoolSpecs"]
        image_env = dockerfile_env("training-base")
        cluster = json.loads(vertex_cluster_spec(pools, "workerpool0", 0))["cluster"]
        reducers = cluster["workerpool2"]
        world = len(cluster["workerpool0"]) + len(cluster["workerpool1"])
        rank = 0
        for pool in (0, 1):
            for index in range(int(pools[pool]["replicaCount"])):
                env = {**image_env, **container_env(pools[pool]),
                       "CLUSTER_SPEC": vertex_cluster_spec(pools, f"workerpool{pool}", index)}
                got = probe(env)
                where = f"workerpool{pool}[{index}]"
                self.assertEqual(got["plugin"].get("reducers"), reducers, where)
                self.assertEqual(got["plugin"]["source"], "CLUSTER_SPEC workerpool2", where)
                self.assertTrue(got["plugin"]["token"], where)
                self.assertEqual(got["rs-train"].get("reducers"), reducers, where)
                self.assertEqual((got["rs-train"]["rank"], got["rs-train"]["world"]), (rank, world), where)
                self.assertEqual(got["rs-train"]["master"], cluster["workerpool0"][0], where)
                rank += 1
        reducer_env = dockerfile_env("reducer-base")
        for index in range(len(reducers)):
            env = {**reducer_env, **container_env(pools[2]),
                   "CLUSTER_SPEC": vertex_cluster_spec(pools, "workerpool2", index)}
            got = probe(env)["reducerd"]
            self.assertEqual(got.get("listen"), "0.0.0.0:2222", got)
            self.assertTrue(got["origin"].startswith(f"CLUSTER_SPEC workerpool2[{index}]"), got)
            self.assertTrue(got["token"])

    def test_a_restarted_replica_restarts_the_whole_job(self):
        # torchrun's static rendezvous cannot take one replica back.
        self.assertIs(vertex_spec()["scheduling"]["restartJobOnWorkerRestart"], True)

    def test_gpu_pools_start_torchrun_through_rs_launch(self):
        # Vertex AI's own WORLD_SIZE would count the reducers: rs-launch
        # gives torchrun the nodes of pools 0 and 1 only, run here with each
        # replica's CLUSTER_SPEC and the command job.yaml gives it.
        pools = vertex_spec()["workerPoolSpecs"]
        cluster = json.loads(vertex_cluster_spec(pools, "workerpool0", 0))["cluster"]
        nodes = len(cluster["workerpool0"]) + len(cluster["workerpool1"])
        rank = 0
        for pool in (0, 1):
            command = pools[pool]["containerSpec"]["command"]
            self.assertEqual(command[:2], ["rs-launch", "--"], f"pool {pool}")
            self.assertIn(f"--nproc_per_node={pools[pool]['machineSpec']['acceleratorCount']}", command)
            for index in range(int(pools[pool]["replicaCount"])):
                result = run([sys.executable, path("deploy", "vertex", "rs-launch"), "--dry-run"] + command[1:],
                             env={"PATH": "/usr/bin:/bin", "WORLD_SIZE": str(sum(len(v) for v in cluster.values())),
                                  "CLUSTER_SPEC": vertex_cluster_spec(pools, f"workerpool{pool}", index)})
                self.assertEqual(result.returncode, 0, result.stderr)
                got = json.loads(result.stdout)
                master = cluster["workerpool0"][0].rsplit(":", 1)
                self.assertEqual(got["command"][:5], ["torchrun", f"--nnodes={nodes}", f"--node_rank={rank}",
                                                      f"--master_addr={master[0]}", f"--master_port={master[1]}"])
                rank += 1
        # The image that runs it carries it.
        with open(path("docker", "Dockerfile")) as f:
            self.assertIn("COPY deploy/vertex/rs-launch /usr/local/bin/", f.read())
        with open(path(".dockerignore")) as f:
            self.assertIn("!deploy/vertex/rs-launch", f.read().split())

    def test_reducer_logs_are_json_with_a_severity(self):
        # Cloud Logging classifies JSON lines by `severity` (reducerd writes
        # it: tests/server/control/logging_test.cc).
        pools = vertex_spec()["workerPoolSpecs"]
        self.assertEqual(container_env(pools[2]).get("REDUCER_LOG_FORMAT"), "json")


# --- Kubernetes -----------------------------------------------------------------

# Variables the training pods set for the platform rather than for a
# component: a home user 1000 can write (images made for root have none),
# and the JobSet's name, from its label, that the reducers' names are made of.
PLATFORM_VARIABLES = {"HOME", "JOBSET_NAME"}
# Volume types the "restricted" Pod Security Standard allows.
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}


def k8s_objects():
    objects = {}
    for name in ("reducers.yaml", "training-jobset.yaml", os.path.join("prometheus", "podmonitor.yaml")):
        for doc in load_yaml_docs("deploy", "kubernetes", name):
            objects[(doc["kind"], doc["metadata"]["name"])] = doc
    return objects


def replicated_job(objects, name):
    return jobset_pods.replicated_job(objects[("JobSet", "train")], name)


def pod_template(objects, name):
    return replicated_job(objects, name)["template"]["spec"]["template"]


def env_of(objects, rjob):
    """The environment of `rjob`'s container as the kubelet makes it (the
    JobSet's labels through the downward API, then $(VAR) references)."""
    container = pod_template(objects, rjob)["spec"]["containers"][0]
    return jobset_pods.container_env(objects[("JobSet", "train")], rjob, container)


def kustomization():
    with open(path("deploy", "kubernetes", "kustomization.yaml")) as f:
        return yaml.safe_load(f)


class KubernetesTest(unittest.TestCase):
    def test_manifests_match_kubernetes_schemas(self):
        checker = k8s_schema.Checker()
        for (kind, name), doc in k8s_objects().items():
            checker.document(doc, f"{kind}/{name}")
        self.assertEqual(checker.errors, [])

    def test_schema_check_catches_mistakes(self):
        reducers = lambda o: pod_template(o, "reducers")["spec"]  # noqa: E731
        mistakes = {
            "unknown field": lambda o: reducers(o).update(restartPolicyy="Never"),
            "wrong type": lambda o: replicated_job(o, "reducers")["template"]["spec"].update(parallelism="two"),
            "container without a name": lambda o: reducers(o)["containers"][0].pop("name"),
            "typo in a pod template of a JobSet": lambda o: pod_template(o, "workers")["spec"].update(
                restartPolicyy="Never"),
            "bad success operator": lambda o: o[("JobSet", "train")]["spec"]["successPolicy"].update(operator="Every"),
            "bad startup order": lambda o: o[("JobSet", "train")]["spec"]["startupPolicy"].update(
                startupPolicyOrder="Sequential"),
            "podmonitor field": lambda o: o[("PodMonitor", "reducers")]["spec"].update(endpoints=[]),
            "pdb field": lambda o: o[("PodDisruptionBudget", "reducers")]["spec"].update(maxUnavailble=1),
            "seccomp without a type": lambda o: reducers(o)["securityContext"]["seccompProfile"].pop("type"),
        }
        for what, mistake in mistakes.items():
            objects = copy.deepcopy(k8s_objects())
            mistake(objects)
            checker = k8s_schema.Checker()
            for (kind, name), doc in objects.items():
                checker.document(doc, f"{kind}/{name}")
            self.assertTrue(checker.errors, f"the schema check accepted: {what}")

    def test_reducers_belong_to_the_job(self):
        # Per-job reducers and a per-job token, as on Vertex AI: the reducers
        # are a replicated job of the training JobSet, not a standing fleet.
        o = k8s_objects()
        self.assertFalse([k for k in o if k[0] in ("StatefulSet", "Deployment")], "no standing reducer fleet")
        jobset = o[("JobSet", "train")]
        names = [r["name"] for r in jobset["spec"]["replicatedJobs"]]
        self.assertEqual(names, ["reducers", "workers"], "the reducers first")
        # The workers start once every reducer is ready; the JobSet ends
        # (reducers and all) when the workers succeed.
        self.assertEqual(jobset["spec"]["startupPolicy"]["startupPolicyOrder"], "InOrder")
        self.assertEqual(jobset["spec"]["successPolicy"], {"operator": "All", "targetReplicatedJobs": ["workers"]})
        secret = kustomization()["secretGenerator"][0]
        self.assertTrue(secret["name"].startswith(jobset["metadata"]["name"] + "-"), "the token is named after its job")
        self.assertEqual(sorted(kustomization()["resources"]), ["reducers.yaml", "training-jobset.yaml"])

    def test_restarts_recreate_the_job(self):
        # A lost worker fails its Job at once (the rendezvous is static), and
        # the JobSet recreates every pod a bounded number of times.
        o = k8s_objects()
        jobset = o[("JobSet", "train")]
        self.assertGreater(jobset["spec"]["failurePolicy"]["maxRestarts"], 0)
        self.assertLessEqual(jobset["spec"]["failurePolicy"]["maxRestarts"], 10)
        workers = replicated_job(o, "workers")["template"]["spec"]
        self.assertEqual(workers["backoffLimit"], 0)
        self.assertEqual(workers["template"]["spec"]["restartPolicy"], "Never")
        # A reducer restarts in place, under the same name, for the workers'
        # failover to take it back.
        reducers = replicated_job(o, "reducers")["template"]["spec"]
        self.assertEqual(reducers["template"]["spec"]["restartPolicy"], "OnFailure")
        self.assertEqual(reducers["completionMode"], "Indexed")
        self.assertGreater(reducers["backoffLimit"], 0)
        with open(path("docs", "guide", "deploying.md")) as f:
            self.assertTrue("### Restarts and checkpoints" in f.read(), "docs/guide/deploying.md must say how to resume")

    def test_objects_refer_to_each_other_correctly(self):
        o = k8s_objects()
        jobset = o[("JobSet", "train")]
        name = jobset["metadata"]["name"]
        rjob = replicated_job(o, "reducers")
        rspec = rjob["template"]["spec"]
        pod = pod_template(o, "reducers")
        reducer = pod["spec"]["containers"][0]
        data_port = next(p["containerPort"] for p in reducer["ports"] if p["name"] == "data")
        self.assertEqual(env_of(o, "reducers")["REDUCER_LISTEN"], f"0.0.0.0:{data_port}")
        # The image's health check and the probes reach the gRPC control
        # plane inside the pod, which is all it listens on (Drain has no
        # authentication).
        image = dockerfile_env("reducer-base")
        self.assertTrue(image["REDUCER_GRPC_LISTEN"].startswith("127.0.0.1:"))
        self.assertEqual(image["REDUCERCTL_TARGET"], image["REDUCER_GRPC_LISTEN"])
        self.assertNotIn("REDUCER_GRPC_LISTEN", env_of(o, "reducers"))
        self.assertEqual(reducer["readinessProbe"]["exec"]["command"], ["reducerctl", "health"])
        self.assertEqual(pod["spec"]["securityContext"]["runAsUser"], 10001, "the image's user")
        self.assertGreater(pod["spec"]["terminationGracePeriodSeconds"], 30, "above REDUCER_DRAIN_TIMEOUT")

        # JobSet names pod i of job j <jobset>-<replicatedJob>-<j>-<i> under
        # the subdomain <jobset> (enableDNSHostnames).
        self.assertTrue(jobset["spec"]["network"]["enableDNSHostnames"])
        self.assertEqual(rjob["replicas"], 1)
        self.assertEqual((rspec["parallelism"], rspec["completions"]), (rspec["parallelism"],) * 2)
        wjob = replicated_job(o, "workers")
        job = wjob["template"]["spec"]
        trainer = job["template"]["spec"]["containers"][0]
        # REDUCER_ADDRS names every reducer through the range the client
        # expands ({0..N-1}; test_pods_environments_as_the_components_read_them
        # has the components expand it).
        expected = f"{name}-{rjob['name']}-0-{{0..{rspec['parallelism'] - 1}}}.{name}:{data_port}"
        self.assertEqual(env_of(o, "workers")["REDUCER_ADDRS"], expected, "REDUCER_ADDRS must name every reducer")
        # ... as `reducerctl plan` prints it for that many reducers.
        plan = run([ARGS.reducerctl, "plan", "--workers", str(job["parallelism"]), "--worker-gbps", "100",
                    "--reducer-machine", "n1-highcpu-16", "--reducers", str(rspec["parallelism"])]).stdout
        self.assertIn(f"parallelism and completions {rspec['parallelism']}, ", plan)
        self.assertIn(f"REDUCER_ADDRS {expected} ", plan)
        # torchrun's arguments as pod i's shell gives them.
        command = " ".join(jobset_pods.command_argv(jobset, "workers", trainer, {"JOB_COMPLETION_INDEX": "1"}))
        self.assertIn(" --node_rank=1 ", command)
        nodes = int(re.search(r"--nnodes=(\d+)", command).group(1))
        self.assertEqual(nodes, job["parallelism"])
        self.assertEqual(nodes, job["completions"])
        self.assertEqual(job["completionMode"], "Indexed")
        gpus = int(re.search(r"--nproc_per_node=(\d+)", command).group(1))
        self.assertEqual(gpus, trainer["resources"]["limits"]["nvidia.com/gpu"])
        self.assertIn(f"--master_addr={name}-{wjob['name']}-0-0.{name} ", command)
        # Both sides read the token from the Secret kustomization.yaml makes.
        k = kustomization()
        secret = k["secretGenerator"][0]
        self.assertTrue(k["generatorOptions"]["disableNameSuffixHash"])
        key, _, source = secret["files"][0].partition("=")
        for spec, container, rjob_name in ((pod["spec"], reducer, "reducers"),
                                           (job["template"]["spec"], trainer, "workers")):
            volume = next(v for v in spec["volumes"] if v["name"] == "job-token")
            self.assertEqual(volume["secret"]["secretName"], secret["name"])
            mount = next(m for m in container["volumeMounts"] if m["name"] == "job-token")
            self.assertEqual(env_of(o, rjob_name)["REDUCER_JOB_TOKEN_FILE"], f"{mount['mountPath']}/{key}")
        with open(path(".gitignore")) as f:
            self.assertIn(f"/deploy/kubernetes/{source}", f.read().split(), "the token file must not be committed")

    def test_token_file_is_readable_by_the_pods_user(self):
        # Secret files belong to root:fsGroup; without fsGroup a non-root
        # reducer cannot read its token and exits 2.
        o = k8s_objects()
        for rjob in ("reducers", "workers"):
            spec = pod_template(o, rjob)["spec"]
            context = spec["securityContext"]
            volume = next(v for v in spec["volumes"] if v["name"] == "job-token")
            mode = volume["secret"].get("defaultMode", 0o644)
            readable = (context.get("fsGroup") == context.get("runAsGroup") and mode & 0o040) or mode & 0o004
            self.assertTrue(readable, f"{rjob}: user {context.get('runAsUser')} cannot read the token")
            self.assertEqual(mode & 0o007, 0, f"{rjob}: the token must not be world-readable")
            self.assertEqual(context["fsGroup"], context["runAsGroup"], rjob)

    def test_pods_meet_the_restricted_pod_security_standard(self):
        o = k8s_objects()
        for rjob in ("reducers", "workers"):
            spec = pod_template(o, rjob)["spec"]
            context = spec["securityContext"]
            self.assertIs(context.get("runAsNonRoot"), True, rjob)
            self.assertNotEqual(context.get("runAsUser"), 0, rjob)
            self.assertEqual(context.get("seccompProfile"), {"type": "RuntimeDefault"}, rjob)
            for flag in ("hostNetwork", "hostPID", "hostIPC"):
                self.assertFalse(spec.get(flag), f"{rjob}: {flag}")
            for volume in spec["volumes"]:
                self.assertLessEqual(set(volume) - {"name"}, RESTRICTED_VOLUMES, f"{rjob}: {volume['name']}")
            for container in spec["containers"]:
                sc = container["securityContext"]
                self.assertIs(sc.get("allowPrivilegeEscalation"), False, rjob)
                self.assertEqual(sc.get("capabilities"), {"drop": ["ALL"]}, rjob)
                self.assertFalse(sc.get("privileged"), rjob)
                self.assertNotIn("seccompProfile", sc, f"{rjob}: the pod's applies")

    def test_training_pods_are_not_best_effort(self):
        # QoS ignores extended resources (GPUs): without CPU and memory
        # requests a pod is BestEffort, the first evicted.
        o = k8s_objects()
        for rjob in ("reducers", "workers"):
            spec = pod_template(o, rjob)["spec"]
            for container in spec["containers"]:
                requests = container["resources"]["requests"]
                self.assertIn("cpu", requests, rjob)
                self.assertIn("memory", requests, rjob)
                self.assertIn("memory", container["resources"]["limits"], rjob)
        shm = next(v for v in pod_template(o, "workers")["spec"]["volumes"] if v["name"] == "dshm")
        self.assertEqual(shm["emptyDir"]["medium"], "Memory")
        self.assertIn("sizeLimit", shm["emptyDir"], "an unbounded /dev/shm counts against memory unseen")

    def test_reducers_spread_over_cpu_nodes_under_a_disruption_budget(self):
        o = k8s_objects()
        pod = pod_template(o, "reducers")
        labels = pod["metadata"]["labels"]
        affinity = pod["spec"]["affinity"]
        anti = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(anti[0]["topologyKey"], "kubernetes.io/hostname")
        for key, value in anti[0]["labelSelector"]["matchLabels"].items():
            self.assertEqual(labels.get(key), value, "the anti-affinity must select the reducers themselves")
        terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        for term in terms:  # every term keeps GPU nodes out
            gpu_free = {e["key"] for e in term["matchExpressions"] if e["operator"] == "DoesNotExist"}
            self.assertLessEqual({"cloud.google.com/gke-accelerator", "nvidia.com/gpu.present"}, gpu_free)
        self.assertNotIn("nvidia.com/gpu", pod["spec"]["containers"][0]["resources"].get("limits", {}))
        pdb = o[("PodDisruptionBudget", "reducers")]
        running = jobset_pods.pod_labels(o[("JobSet", "train")], "reducers")
        for key, value in pdb["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(running.get(key), value, "the budget must select the reducers")
        # One at a time, as an integer minAvailable: with maxUnavailable (or
        # a percentage) over a Job's pods the disruption controller allows
        # no eviction at all (kubernetes_job_test.py has the details).
        reducers = replicated_job(o, "reducers")["template"]["spec"]["parallelism"]
        self.assertNotIn("maxUnavailable", pdb["spec"])
        self.assertEqual(pdb["spec"]["minAvailable"], reducers - 1)
        # The trainers' own label must not fall under it.
        self.assertNotEqual(pod_template(o, "workers")["metadata"]["labels"].get("app.kubernetes.io/name"),
                            labels["app.kubernetes.io/name"])

    def test_pods_environments_as_the_components_read_them(self):
        o = k8s_objects()
        reg = registries()
        self.assertLessEqual(set(env_of(o, "reducers")), reg.reducerd)
        self.assertLessEqual(set(env_of(o, "workers")), reg.worker | PLATFORM_VARIABLES)
        self.assertEqual(env_of(o, "reducers").get("REDUCER_LOG_FORMAT"), "json")
        with tempfile.NamedTemporaryFile("w", suffix=".token") as token:
            token.write("k8s-test-token\n")
            token.flush()
            env = {**dockerfile_env("training-base"), **env_of(o, "workers"), "REDUCER_JOB_TOKEN_FILE": token.name}
            got = probe(env)
            rspec = replicated_job(o, "reducers")["template"]["spec"]
            reducers = [f"train-reducers-0-{i}.train:7450" for i in range(rspec["parallelism"])]
            self.assertEqual(got["plugin"].get("reducers"), reducers, got)
            self.assertTrue(got["plugin"]["token"])
            self.assertEqual(got["rs-train"].get("reducers"), reducers, got)
            env = {**dockerfile_env("reducer-base"), **env_of(o, "reducers"), "REDUCER_JOB_TOKEN_FILE": token.name}
            got = probe(env)["reducerd"]
            self.assertEqual(got.get("listen"), "0.0.0.0:7450", got)
            self.assertTrue(got["token"])

    def test_podmonitor_carries_the_release_label_and_it_is_documented(self):
        monitor = k8s_objects()[("PodMonitor", "reducers")]
        release = monitor["metadata"]["labels"].get("release")
        self.assertTrue(release, "kube-prometheus-stack selects PodMonitors by `release`")
        with open(path("docs", "guide", "deploying.md")) as f:
            self.assertTrue(f"release: {release}" in f.read(), "docs/guide/deploying.md must explain the release label")

    def test_prometheus_scrape_configuration(self):
        with open(path("deploy", "kubernetes", "prometheus", "scrape-config.yaml")) as f:
            config = yaml.safe_load(f)
        job = config["scrape_configs"][0]
        keep = {r["source_labels"][0]: r["regex"] for r in job["relabel_configs"] if r.get("action") == "keep"}
        pod = pod_template(k8s_objects(), "reducers")
        labels = pod["metadata"]["labels"]
        self.assertEqual(keep["__meta_kubernetes_pod_label_app_kubernetes_io_name"], labels["app.kubernetes.io/name"])
        ports = {p["name"] for p in pod["spec"]["containers"][0]["ports"]}
        self.assertIn(keep["__meta_kubernetes_pod_container_port_name"], ports)
        self.assertEqual(job["kubernetes_sd_configs"], [{"role": "pod"}])
        monitor = k8s_objects()[("PodMonitor", "reducers")]
        self.assertEqual(monitor["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
                         labels["app.kubernetes.io/name"])
        self.assertIn(monitor["spec"]["podMetricsEndpoints"][0]["port"], ports)
        promtool = shutil.which("promtool")
        if promtool is None:
            self.skipTest("promtool (Debian's prometheus) is not installed")
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
            yaml.safe_dump({"global": {"scrape_interval": "15s"}, **config}, f)
            f.flush()
            result = run([promtool, "check", "config", f.name])
        if "kubernetes_sd_configs not found" in result.stdout + result.stderr:
            # Debian builds Prometheus without Kubernetes discovery: the
            # checks above (structure and references) are what remains.
            print("\n  scrape-config.yaml: promtool here has no Kubernetes discovery; checked by structure",
                  file=sys.stderr)
        else:
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


# --- docker/ ----------------------------------------------------------------------

class DockerTest(unittest.TestCase):
    def compose(self):
        with open(path("docker", "compose.yaml")) as f:
            return yaml.safe_load(f)

    def test_compose_file_is_valid(self):
        tool = shutil.which("docker-compose")
        if tool is None:
            self.skipTest("docker-compose is not installed")
        result = run([tool, "-f", path("docker", "compose.yaml"), "config", "-q"])
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_every_variable_is_ours(self):
        reg = registries()
        services = self.compose()["services"]
        for name, service in services.items():
            env = set(service.get("environment", {}))
            if name.startswith("reducer-"):
                self.assertLessEqual(env, reg.reducerd, name)
            elif name.startswith("worker-"):
                # TRAIN_STEPS and TRAIN_ARGS are the entrypoint's own.
                self.assertLessEqual(env - {"TRAIN_STEPS", "TRAIN_ARGS"}, reg.trainer, name)
        self.assertLessEqual(set(dockerfile_env("reducer-base")), reg.reducerd | reg.reducerctl)
        self.assertLessEqual(set(dockerfile_env("training-base")), reg.nccl)
        with open(path("packaging", "debian", "reducerd.default")) as f:
            names = set(re.findall(r"^#?([A-Z][A-Z0-9_]*)=", f.read(), re.M))
        self.assertTrue(names)
        self.assertLessEqual(names, reg.reducerd, "/etc/default/reducerd")

    def test_prometheus_scrapes_every_reducer(self):
        with open(path("docker", "prometheus", "prometheus.yml")) as f:
            targets = yaml.safe_load(f)["scrape_configs"][0]["static_configs"][0]["targets"]
        services = self.compose()["services"]
        reducers = sorted(n for n in services if n.startswith("reducer-"))
        metrics_port = dockerfile_env("reducer-base")["REDUCER_METRICS_LISTEN"].rsplit(":", 1)[1]
        self.assertEqual(sorted(targets), [f"{n}:{metrics_port}" for n in reducers])

    def test_dashboard_draws_documented_metrics(self):
        with open(path("docker", "grafana", "dashboards", "reduction-server.json")) as f:
            dash = json.load(f)
        with open(path("docs", "reference", "metrics.md")) as f:
            documented = set(re.findall(r"^\| `(reducer_[a-z_]+)` \|", f.read(), re.M))
        self.assertTrue(documented)
        used = set()
        for panel in dash["panels"]:
            self.assertTrue(panel["targets"], panel["title"])
            for target in panel["targets"]:
                used |= {re.sub(r"_(bucket|sum|count)$", "", m) for m in re.findall(r"\b(reducer_[a-z_]+)", target["expr"])}
        self.assertTrue(used)
        self.assertLessEqual(used, documented)
        self.assertEqual(len({p["id"] for p in dash["panels"]}), len(dash["panels"]))
        # Provisioned from the folder compose.yaml mounts, with the data source it names.
        grafana = self.compose()["services"]["grafana"]
        self.assertIn("./grafana/dashboards:/var/lib/grafana/dashboards:ro", grafana["volumes"])
        with open(path("docker", "grafana", "provisioning", "dashboards", "reduction-server.yaml")) as f:
            self.assertEqual(yaml.safe_load(f)["providers"][0]["options"]["path"], "/var/lib/grafana/dashboards")
        with open(path("docker", "grafana", "provisioning", "datasources", "prometheus.yaml")) as f:
            source = yaml.safe_load(f)["datasources"][0]
        self.assertEqual((source["type"], source["url"]), ("prometheus", "http://prometheus:9090"))

    def test_reducers_drain_before_they_are_killed(self):
        # Docker kills 10 s after SIGTERM unless told otherwise; reducerd
        # drains for up to REDUCER_DRAIN_TIMEOUT.
        table = run([ARGS.reducerd_table]).stdout
        drain = re.search(r"\| `REDUCER_DRAIN_TIMEOUT` \| `(\d+)s` \|", table)
        self.assertTrue(drain, "REDUCER_DRAIN_TIMEOUT's default is not in reducerd's table")
        for name, service in self.compose()["services"].items():
            if name.startswith("reducer-"):
                grace = re.fullmatch(r"(\d+)s", service.get("stop_grace_period", ""))
                self.assertTrue(grace, f"{name}: no stop_grace_period in seconds")
                self.assertGreater(int(grace.group(1)), int(drain.group(1)), name)

    def test_workers_wait_for_healthy_reducers(self):
        services = self.compose()["services"]
        reducers = sorted(n for n in services if n.startswith("reducer-"))
        for name in reducers:
            self.assertEqual(services[name]["healthcheck"]["test"], ["CMD", "reducerctl", "health"], name)
        for name, service in services.items():
            if name.startswith("worker-"):
                self.assertEqual(service["depends_on"], {r: {"condition": "service_healthy"} for r in reducers}, name)


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("--probe", "--reducerd-table", "--plugin-table", "--rs-train", "--reducerctl"):
        p.add_argument(name, required=True)
    ARGS, rest = p.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()
