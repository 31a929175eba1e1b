#!/usr/bin/env python3
"""What the shipped images give the GPU machines, read from docker/Dockerfile
without a container registry:

- The training image uses the reducers with its environment alone: the NCCL
  its default base ships (PyTorch's, by the table of docs/guide/frameworks.md,
  "Which NCCL a framework ships") finds a tuner in the plugin, a table the
  built library exports (`nm -D`), so the tuner sends all-reduces to the
  reducers where they are faster; or, for an NCCL no tuner table serves,
  the image forces them with NCCL_ALGO. Neither the image nor a job spec
  turns the tuner off or overrides it unseen, and the Dockerfile's and the
  deploying guide's words name the NCCL the base really has.
- The plugin image lends rs-launch too (deploy/vertex/job.yaml's GPU pools
  run it), and the guide's bring-your-own recipes put it on PATH.
- Every image a job trains in has the self-check, reducer-doctor: the plugin
  image in /opt/reducer/bin, the training images through the plugin's
  package, which holds it (packages_contents checks the package).

  training_image_test.py [--plugin build/nccl_plugin/libnccl-net-reducer.so]

Without --plugin the exported tables are not checked (that test is skipped).
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
try:
    import yaml
except ImportError as e:
    print(f"SKIPPED: {e} (python3-yaml: scripts/lib/deps.sh's test packages)")
    sys.exit(77)

PLUGIN = None


def path(*parts):
    return os.path.join(ROOT, *parts)


def read(*parts):
    with open(path(*parts)) as f:
        return f.read()


# --- docker/Dockerfile ------------------------------------------------------------

def dockerfile():
    """Global ARGs and, per stage name, (base, [(instruction, arguments)])."""
    text = re.sub(r"\\\n", " ", read("docker", "Dockerfile"))
    args, stages, current = {}, {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            parts = rest.split()
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            current = stages.setdefault(name, (parts[0], []))
        elif current is None:
            if word == "ARG":
                key, _, value = rest.partition("=")
                args[key.strip()] = value.strip()
        else:
            current[1].append((word, rest))
    return args, stages


def stage_env(stages, name):
    """ENV of a stage and the stages it is built FROM, in order."""
    base, instructions = stages[name]
    env = stage_env(stages, base) if base in stages else {}
    for word, rest in instructions:
        if word == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                env[key] = value
    return env


# --- which NCCL, which tuner -----------------------------------------------------------

def version(text):
    return tuple(int(x) for x in text.split("."))


def pytorch_nccl_table():
    """(first, last PyTorch version, CUDA versions or None, NCCL minors)
    for each PyTorch row of frameworks.md's "Which NCCL a framework ships"."""
    rows = []
    for line in read("docs", "guide", "frameworks.md").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"PyTorch (\d+\.\d+)(?: - (\d+\.\d+))?(?: \(CUDA ([0-9., ]+)\))?", cells[0])
        if not m or len(cells) < 2:
            continue
        n = re.fullmatch(r"(2\.\d+)(?:\.[\dx]+)?(?: - (2\.\d+))?", cells[1])
        assert n, f"frameworks.md: cannot read the NCCL of '{cells[0]}': '{cells[1]}'"
        first, last = version(n.group(1)), version(n.group(2) or n.group(1))
        cuda = [c.strip() for c in m.group(3).split(",")] if m.group(3) else None
        rows.append((version(m.group(1)), version(m.group(2) or m.group(1)), cuda,
                     [(2, minor) for minor in range(first[1], last[1] + 1)], cells[1]))
    assert rows, "frameworks.md has no PyTorch row in its NCCL table"
    return rows


def base_image_nccl(image):
    """The NCCL the base image ships: (minors, as the table writes it)."""
    m = re.fullmatch(r"pytorch/pytorch:(\d+\.\d+)\.\d+-cuda(\d+\.\d+)-.*", image)
    assert m, f"BASE_IMAGE {image}: not a pytorch/pytorch image; teach this test which NCCL it ships"
    torch, cuda = version(m.group(1)), m.group(2)
    found = [r for r in pytorch_nccl_table() if r[0] <= torch <= r[1]
             and (r[2] is None or any(cuda == c or cuda.startswith(c + ".") for c in r[2]))]
    assert len(found) == 1, f"frameworks.md has {len(found)} rows for PyTorch {m.group(1)} with CUDA {cuda}"
    return found[0][3], found[0][4]


def tuner_lookup(nccl):
    """The tuner tables NCCL looks for, in its order, and whether it looks in
    the net plugin's library (otherwise only in NCCL_TUNER_PLUGIN's), as
    NCCL's sources have it (src/misc/tuner.cc, later src/plugin/tuner.cc)."""
    minor = nccl[1]
    if minor < 19:
        return [], False  # no tuner interface
    if minor <= 20:
        return ["ncclTunerPlugin_v1"], False
    if minor == 21:
        return ["ncclTunerPlugin_v2"], True
    if minor <= 23:
        return ["ncclTunerPlugin_v3", "ncclTunerPlugin_v2"], True
    if minor <= 27:
        return ["ncclTunerPlugin_v4", "ncclTunerPlugin_v3", "ncclTunerPlugin_v2"], True
    if minor <= 29:
        return [f"ncclTunerPlugin_v{v}" for v in (5, 4, 3, 2)], True
    if minor == 30:
        return [f"ncclTunerPlugin_v{v}" for v in (6, 5, 4, 3, 2)], True
    raise AssertionError(f"NCCL {nccl}: which tuner tables it looks for is not known here yet")


def exported_symbols(library):
    result = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return {line.split()[-1] for line in result.stdout.splitlines() if line.strip()}


def gpu_envs():
    """Every GPU container's environment in the job specs."""
    pools = yaml.safe_load(read("deploy", "vertex", "job.yaml"))["workerPoolSpecs"]
    envs = {f"job.yaml pool {i}": {e["name"]: e.get("value") for e in p["containerSpec"].get("env", [])}
            for i, p in enumerate(pools) if "acceleratorCount" in p["machineSpec"]}
    for doc in yaml.safe_load_all(read("deploy", "kubernetes", "training-jobset.yaml")):
        for rjob in doc["spec"]["replicatedJobs"]:
            for c in rjob["template"]["spec"]["template"]["spec"]["containers"]:
                if "nvidia.com/gpu" in c.get("resources", {}).get("limits", {}):
                    envs[f"training-jobset.yaml {rjob['name']}"] = {e["name"]: e.get("value") for e in c["env"]}
    assert len(envs) >= 3, envs
    return envs


class TrainingImageTest(unittest.TestCase):
    def setUp(self):
        self.args, self.stages = dockerfile()
        self.image = self.args["BASE_IMAGE"]
        self.nccl, self.nccl_text = base_image_nccl(self.image)
        self.env = stage_env(self.stages, "training")

    def test_the_image_loads_the_plugin_with_collnet_on(self):
        self.assertEqual(self.env.get("NCCL_NET_PLUGIN"), "reducer")
        self.assertEqual(self.env.get("NCCL_COLLNET_ENABLE"), "1")
        self.assertEqual(self.env.get("NCCL_NET_PLUGIN_REF_COUNT"), "1")

    def test_the_bases_nccl_uses_the_reducers_with_the_images_environment(self):
        for nccl in self.nccl:
            tables, from_net_plugin = tuner_lookup(nccl)
            where = f"{self.image}: NCCL {nccl[0]}.{nccl[1]}"
            if not tables:
                # No tuner: only NCCL_ALGO sends all-reduces to the reducers.
                self.assertIn("collnet", self.env.get("NCCL_ALGO", "").lower(), f"{where} needs NCCL_ALGO in the image")
            elif not from_net_plugin:
                self.assertEqual(self.env.get("NCCL_TUNER_PLUGIN"), "reducer",
                                 f"{where} takes a tuner only from NCCL_TUNER_PLUGIN")
            else:
                # The tuner decides: NCCL_ALGO would override it for every size.
                self.assertNotIn("NCCL_ALGO", self.env, f"{where}: the tuner chooses; NCCL_ALGO overrides it")
                self.assertNotIn("NCCL_TUNER_PLUGIN", self.env, f"{where}: NCCL finds the tuner in the net plugin")

    def test_the_plugin_exports_the_tuner_the_bases_nccl_looks_for(self):
        if PLUGIN is None:
            self.skipTest("no --plugin: the built library's tables are not checked")
        if shutil.which("nm") is None:
            self.skipTest("nm (binutils) is not installed")
        exported = exported_symbols(PLUGIN)
        for nccl in self.nccl:
            tables, _ = tuner_lookup(nccl)
            if tables:
                self.assertTrue(set(tables) & exported,
                                f"{self.image} ships NCCL {self.nccl_text}, which looks for {', '.join(tables)}; "
                                f"the plugin exports {', '.join(sorted(s for s in exported if 'Tuner' in s))}")

    def test_no_job_spec_turns_the_tuner_off(self):
        for where, env in gpu_envs().items():
            self.assertNotIn("NCCL_ALGO", env, f"{where}: overrides the tuner for every size")
            self.assertNotIn("NCCL_TUNER_PLUGIN", env, f"{where}: another tuner, or none, instead of the plugin's")
            self.assertNotEqual(env.get("NCCL_COLLNET_ENABLE", "1"), "0", where)

    def test_the_words_name_the_bases_nccl(self):
        # "PyTorch 2.10 with NCCL X" in the Dockerfile's comment and the
        # guide's description of the training image.
        torch = re.match(r"pytorch/pytorch:(\d+\.\d+)", self.image).group(1)
        for name, text in (("docker/Dockerfile", read("docker", "Dockerfile")),
                           ("docs/guide/deploying.md", read("docs", "guide", "deploying.md"))):
            text = re.sub(r"\s+", " ", text.replace("#", " "))
            said = re.findall(rf"PyTorch {re.escape(torch)} with NCCL (\d+\.\d+(?:\.\d+)?)", text)
            self.assertTrue(said, f"{name} does not say which NCCL the default base ships")
            for version_said in said:
                self.assertEqual(version_said, self.nccl_text, f"{name} says PyTorch {torch} with NCCL {version_said}")


class PluginImageTest(unittest.TestCase):
    """deploy/vertex/job.yaml's GPU pools run rs-launch: an image built on
    the plugin image must have it."""

    def test_plugin_image_lends_rs_launch(self):
        _, stages = dockerfile()
        for target in ("plugin", "plugin-from-debs"):
            base, instructions = stages[target]
            copies = [rest.split() for word, rest in instructions if word == "COPY"]
            self.assertIn(["/opt/reducer", "/opt/reducer"], [c[-2:] for c in copies], target)
            tree = next(c[0].split("=", 1)[1] for c in copies if c[0].startswith("--from="))
            installs = " ".join(rest for word, rest in stages[tree][1] if word in ("RUN", "COPY"))
            self.assertRegex(installs, r"install -m 0755 \S*rs-launch /opt/reducer/bin/rs-launch",
                             f"{target} ({tree}) does not hold /opt/reducer/bin/rs-launch")

    def test_every_training_image_has_reducer_doctor(self):
        _, stages = dockerfile()
        for target in ("plugin", "plugin-from-debs"):
            copies = [rest.split() for word, rest in stages[target][1] if word == "COPY"]
            tree = next(c[0].split("=", 1)[1] for c in copies if c[0].startswith("--from="))
            installs = " ".join(rest for word, rest in stages[tree][1] if word == "RUN")
            self.assertRegex(installs, r"mv /tmp/plugin/usr/bin/reducer-doctor /opt/reducer/bin/",
                             f"{target} ({tree}) does not hold /opt/reducer/bin/reducer-doctor")
        for target in ("training", "training-from-debs"):
            runs = " ".join(rest for word, rest in stages[target][1] if word == "RUN")
            self.assertRegex(runs, r"apt-get install [^;]*libnccl-net-reducer_\*\.deb",
                             f"{target} does not install the plugin's package (and so reducer-doctor)")

    def test_bring_your_own_recipes_put_rs_launch_on_path(self):
        guide = read("docs", "guide", "deploying.md")
        recipes = [b for b in re.findall(r"```dockerfile\n(.*?)```", guide, re.S) if "reduction-server/plugin" in b]
        self.assertGreaterEqual(len(recipes), 2, "the NGC and Vertex AI recipes")
        for recipe in recipes:
            text = recipe.replace("\\\n", " ")
            self.assertRegex(text, r"COPY --from=\S+ /opt/reducer /opt/reducer")
            env = {}
            for line in text.splitlines():
                if line.startswith("ENV "):
                    env.update(item.partition("=")[::2] for item in shlex.split(line[4:]))
            self.assertTrue(env.get("PATH", "").startswith("/opt/reducer/bin:"), f"no rs-launch on PATH in:\n{recipe}")
            self.assertIn("${PATH}", env["PATH"], "the base image's own PATH must stay")
        pools = yaml.safe_load(read("deploy", "vertex", "job.yaml"))["workerPoolSpecs"]
        self.assertEqual({p["containerSpec"]["command"][0] for p in pools[:2]}, {"rs-launch"})


def main():
    global PLUGIN
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--plugin", help="the built libnccl-net-reducer.so, for its exported tables")
    args, rest = p.parse_known_args()
    PLUGIN = args.plugin
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()
