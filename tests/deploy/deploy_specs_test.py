#!/usr/bin/env python3
"""The deployment specs of deploy/ and docker/, checked without a cloud:

- Vertex AI (deploy/vertex/job.yaml): every field against the API's schema
  (vertex_schema.py), the reducer pool sized by `reducerctl plan`, every
  environment variable one of ours, and, replica by replica, the CLUSTER_SPEC
  Vertex AI would set: the plugin and rs-train on pools 0 and 1 find exactly
  pool 2's reducers, and each reducer listens on its own entry's port. Both
  submission scripts run against stand-ins for gcloud and the Python SDK:
  one fresh token, in every pool, never printed or left on disk.
- Kubernetes (deploy/kubernetes): every object against Kubernetes' own
  schemas (k8s_schema.py: Debian's python3-kubernetes models; JobSet and
  PodMonitor by their API types), the references between them (Service,
  StatefulSet, Secret, REDUCER_ADDRS, torchrun's node count and master), the
  pods' environments as the components read them, the Prometheus scrape
  configuration.
- docker/: compose.yaml valid, its and the images' variables ours, the
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
import vertex_schema  # noqa: E402

ARGS = None
PLACEHOLDER = "generated-at-submission"
TOKEN = re.compile(r"^[0-9a-f]{64}$")
# NCCL's own variables that the plugin's documentation tells users to set.
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
        with open(path("README.md")) as f:
            readme = f.read()
        self.nccl = {name for name in NCCL_VARIABLES if f"`{name}" in readme}
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

    def submit_with_gcloud(self, workdir, n):
        fake = os.path.join(workdir, "bin")
        capture = os.path.join(workdir, f"capture{n}")
        os.makedirs(fake, exist_ok=True)
        os.makedirs(capture)
        with open(os.path.join(fake, "gcloud"), "w") as f:
            f.write('#!/bin/sh\nprintf "%s\\n" "$@" > "$CAPTURE/args"\n'
                    'for a in "$@"; do case $a in --config=*) cp "${a#--config=}" "$CAPTURE/config.yaml";'
                    ' echo "${a#--config=}" > "$CAPTURE/config-path";; esac; done\n')
        os.chmod(os.path.join(fake, "gcloud"), 0o755)
        env = {"PATH": f"{fake}:/usr/bin:/bin", "CAPTURE": capture, "TMPDIR": workdir}
        result = run([path("deploy", "vertex", "submit.sh"), "--region", "us-central1", "--project", "p",
                      "--display-name", "t"], env=env)
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
                # Nothing but the token changed.
                for pool in config["workerPoolSpecs"]:
                    for e in pool["containerSpec"]["env"]:
                        if e["value"] == tokens[-1]:
                            e["value"] = PLACEHOLDER
                self.assertEqual(config, vertex_spec())
            self.assertNotEqual(tokens[0], tokens[1], "two jobs got the same token")

    def test_submit_py_gives_every_pool_one_fresh_token(self):
        stub = '''
import json, os
def _record(call, data):
    with open(os.environ["CAPTURE"], "a") as f:
        f.write(json.dumps({"call": call, "data": data}) + "\\n")
def init(**kw):
    _record("init", kw)
class CustomJob:
    def __init__(self, display_name, worker_pool_specs, **kw):
        _record("CustomJob", {"display_name": display_name, "worker_pool_specs": worker_pool_specs})
    def submit(self, **kw):
        _record("submit", kw)
    def run(self, **kw):
        _record("run", kw)
'''
        with tempfile.TemporaryDirectory() as workdir:
            pkg = os.path.join(workdir, "google", "cloud", "aiplatform")
            os.makedirs(pkg)
            for d in (os.path.join(workdir, "google"), os.path.join(workdir, "google", "cloud")):
                open(os.path.join(d, "__init__.py"), "w").close()
            with open(os.path.join(pkg, "__init__.py"), "w") as f:
                f.write(stub)
            tokens = []
            for n in range(2):
                capture = os.path.join(workdir, f"calls{n}.jsonl")
                # -S: no site .pth files, whose google namespace (Debian's
                # google-auth) would hide the stand-in; Debian's packages
                # (yaml) stay reachable through PYTHONPATH.
                env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{workdir}:/usr/lib/python3/dist-packages",
                       "CAPTURE": capture}
                result = run([sys.executable, "-S", path("deploy", "vertex", "submit.py"), "--project", "p",
                              "--region", "us-central1", "--display-name", "t"], env=env)
                self.assertEqual(result.returncode, 0, result.stderr)
                with open(capture) as f:
                    calls = [json.loads(line) for line in f]
                self.assertEqual([c["call"] for c in calls], ["init", "CustomJob", "submit"])
                self.assertEqual((calls[0]["data"]["project"], calls[0]["data"]["location"]), ("p", "us-central1"))
                pools = calls[1]["data"]["worker_pool_specs"]
                errors = []
                vertex_schema.validate_job_spec({"worker_pool_specs": pools}, errors, snake=True)
                self.assertEqual(errors, [])
                tokens.append(self.check_tokens(pools, result.stdout + result.stderr))
            self.assertNotEqual(tokens[0], tokens[1], "two jobs got the same token")


# --- Kubernetes -----------------------------------------------------------------

def k8s_objects():
    objects = {}
    for name in ("reducers.yaml", "training-jobset.yaml", os.path.join("prometheus", "podmonitor.yaml")):
        for doc in load_yaml_docs("deploy", "kubernetes", name):
            objects[(doc["kind"], doc["metadata"]["name"])] = doc
    return objects


def env_of(container):
    return {e["name"]: e["value"] for e in container.get("env", [])}


class KubernetesTest(unittest.TestCase):
    def test_manifests_match_kubernetes_schemas(self):
        checker = k8s_schema.Checker()
        for (kind, name), doc in k8s_objects().items():
            checker.document(doc, f"{kind}/{name}")
        self.assertEqual(checker.errors, [])

    def test_schema_check_catches_mistakes(self):
        mistakes = {
            "unknown field": lambda o: o[("StatefulSet", "reducer")]["spec"].update(replica=2),
            "wrong type": lambda o: o[("StatefulSet", "reducer")]["spec"].update(replicas="two"),
            "container without image name": lambda o: o[("StatefulSet", "reducer")]["spec"]["template"]["spec"][
                "containers"][0].pop("name"),
            "typo in a pod template of a JobSet": lambda o: o[("JobSet", "train")]["spec"]["replicatedJobs"][0][
                "template"]["spec"]["template"]["spec"].update(restartPolicyy="Never"),
            "bad success operator": lambda o: o[("JobSet", "train")]["spec"]["successPolicy"].update(operator="Every"),
            "podmonitor field": lambda o: o[("PodMonitor", "reducers")]["spec"].update(endpoints=[]),
        }
        for what, mistake in mistakes.items():
            objects = copy.deepcopy(k8s_objects())
            mistake(objects)
            checker = k8s_schema.Checker()
            for (kind, name), doc in objects.items():
                checker.document(doc, f"{kind}/{name}")
            self.assertTrue(checker.errors, f"the schema check accepted: {what}")

    def test_objects_refer_to_each_other_correctly(self):
        o = k8s_objects()
        service, sts, jobset = o[("Service", "reducers")], o[("StatefulSet", "reducer")], o[("JobSet", "train")]
        self.assertEqual(service["spec"]["clusterIP"], "None", "the reducers' Service must be headless")
        self.assertEqual(sts["spec"]["serviceName"], "reducers")
        pod = sts["spec"]["template"]
        for key, value in service["spec"]["selector"].items():
            self.assertEqual(pod["metadata"]["labels"].get(key), value)
        self.assertEqual(sts["spec"]["selector"]["matchLabels"], service["spec"]["selector"])
        reducer = pod["spec"]["containers"][0]
        data_port = next(p["containerPort"] for p in reducer["ports"] if p["name"] == "data")
        self.assertEqual(env_of(reducer)["REDUCER_LISTEN"], f"0.0.0.0:{data_port}")
        # The image's health check and the probes reach the gRPC control
        # plane inside the pod, which is all it listens on (Drain has no
        # authentication).
        image = dockerfile_env("reducer-base")
        self.assertTrue(image["REDUCER_GRPC_LISTEN"].startswith("127.0.0.1:"))
        self.assertEqual(image["REDUCERCTL_TARGET"], image["REDUCER_GRPC_LISTEN"])
        self.assertNotIn("REDUCER_GRPC_LISTEN", env_of(reducer))
        self.assertEqual(reducer["readinessProbe"]["exec"]["command"], ["reducerctl", "health"])
        self.assertEqual(pod["spec"]["securityContext"]["runAsUser"], 10001, "the image's user")

        rjob = jobset["spec"]["replicatedJobs"][0]
        job = rjob["template"]["spec"]
        trainer = job["template"]["spec"]["containers"][0]
        expected = ",".join(f"{sts['metadata']['name']}-{i}.{service['metadata']['name']}:{data_port}"
                            for i in range(sts["spec"]["replicas"]))
        self.assertEqual(env_of(trainer)["REDUCER_ADDRS"], expected, "REDUCER_ADDRS must list every reducer")
        command = " ".join(trainer["command"])
        nodes = int(re.search(r"--nnodes=(\d+)", command).group(1))
        self.assertEqual(nodes, job["parallelism"])
        self.assertEqual(nodes, job["completions"])
        self.assertEqual(job["completionMode"], "Indexed")
        gpus = int(re.search(r"--nproc_per_node=(\d+)", command).group(1))
        self.assertEqual(gpus, trainer["resources"]["limits"]["nvidia.com/gpu"])
        # JobSet names pod 0 <jobset>-<replicatedJob>-0-0 under the subdomain <jobset>.
        name = jobset["metadata"]["name"]
        self.assertIn(f"--master_addr={name}-{rjob['name']}-0-0.{name} ", command)
        self.assertTrue(jobset["spec"]["network"]["enableDNSHostnames"])
        # Both sides read the token from the Secret kustomization.yaml makes.
        with open(path("deploy", "kubernetes", "kustomization.yaml")) as f:
            kustomization = yaml.safe_load(f)
        secret = kustomization["secretGenerator"][0]
        self.assertTrue(kustomization["generatorOptions"]["disableNameSuffixHash"])
        key, _, source = secret["files"][0].partition("=")
        for spec, container in ((pod["spec"], reducer), (job["template"]["spec"], trainer)):
            volume = next(v for v in spec["volumes"] if v["name"] == "job-token")
            self.assertEqual(volume["secret"]["secretName"], secret["name"])
            mount = next(m for m in container["volumeMounts"] if m["name"] == "job-token")
            self.assertEqual(env_of(container)["REDUCER_JOB_TOKEN_FILE"], f"{mount['mountPath']}/{key}")
        self.assertEqual(sorted(kustomization["resources"]), ["reducers.yaml", "training-jobset.yaml"])
        with open(path(".gitignore")) as f:
            self.assertIn(f"/deploy/kubernetes/{source}", f.read().split(), "the token file must not be committed")

    def test_pods_environments_as_the_components_read_them(self):
        o = k8s_objects()
        reducer = o[("StatefulSet", "reducer")]["spec"]["template"]["spec"]["containers"][0]
        trainer = o[("JobSet", "train")]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
            "containers"][0]
        reg = registries()
        self.assertLessEqual(set(env_of(reducer)), reg.reducerd)
        self.assertLessEqual(set(env_of(trainer)), reg.worker)
        with tempfile.NamedTemporaryFile("w", suffix=".token") as token:
            token.write("k8s-test-token\n")
            token.flush()
            env = {**dockerfile_env("training-base"), **env_of(trainer), "REDUCER_JOB_TOKEN_FILE": token.name}
            got = probe(env)
            reducers = env_of(trainer)["REDUCER_ADDRS"].split(",")
            self.assertEqual(got["plugin"].get("reducers"), reducers, got)
            self.assertTrue(got["plugin"]["token"])
            self.assertEqual(got["rs-train"].get("reducers"), reducers, got)
            env = {**dockerfile_env("reducer-base"), **env_of(reducer), "REDUCER_JOB_TOKEN_FILE": token.name}
            got = probe(env)["reducerd"]
            self.assertEqual(got.get("listen"), "0.0.0.0:7450", got)
            self.assertTrue(got["token"])

    def test_prometheus_scrape_configuration(self):
        with open(path("deploy", "kubernetes", "prometheus", "scrape-config.yaml")) as f:
            config = yaml.safe_load(f)
        job = config["scrape_configs"][0]
        keep = {r["source_labels"][0]: r["regex"] for r in job["relabel_configs"] if r.get("action") == "keep"}
        sts = k8s_objects()[("StatefulSet", "reducer")]
        labels = sts["spec"]["template"]["metadata"]["labels"]
        self.assertEqual(keep["__meta_kubernetes_pod_label_app_kubernetes_io_name"], labels["app.kubernetes.io/name"])
        ports = {p["name"] for p in sts["spec"]["template"]["spec"]["containers"][0]["ports"]}
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
        with open(path("docs", "control-plane.md")) as f:
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


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("--probe", "--reducerd-table", "--plugin-table", "--rs-train", "--reducerctl"):
        p.add_argument(name, required=True)
    ARGS, rest = p.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()
