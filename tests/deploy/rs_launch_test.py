#!/usr/bin/env python3
"""deploy/vertex/rs-launch against CLUSTER_SPEC as Vertex AI sets it: the node
count, node rank and master come from pools 0 and 1 only (never the reducers
of pool 2 or the evaluators of pool 3), torchrun gets them as flags and any
other command in its environment, a replica outside pools 0 and 1 is refused,
and a missing or malformed spec is an error that names the problem without
printing the spec (it may hold the job token).

  rs_launch_test.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.abspath(os.path.join(HERE, "..", "..", "deploy", "vertex", "rs-launch"))
SECRET = "f" * 64


def cluster_spec(counts, task_type, index, job_id="5d1e9c"):
    """CLUSTER_SPEC as Vertex AI sets it: every pool's replicas as host:2222,
    this replica's task, and the job's spec (with a token in it)."""
    cluster = {f"workerpool{i}": [f"cmle-training-workerpool{i}-{job_id}-{k}:2222" for k in range(n)]
               for i, n in enumerate(counts) if n}
    pools = [{"replicaCount": str(n), "containerSpec": {
        "imageUri": "x", "env": [{"name": "REDUCER_JOB_TOKEN", "value": SECRET}]}} if n else {} for n in counts]
    return json.dumps({"cluster": cluster, "environment": "cloud",
                       "task": {"type": task_type, "index": index, "trial": ""}, "job": {"workerPoolSpecs": pools}})


def launch(args, spec=None, extra_env=None):
    env = {"PATH": "/usr/bin:/bin"}
    if spec is not None:
        env["CLUSTER_SPEC"] = spec
    env.update(extra_env or {})
    return subprocess.run([sys.executable, LAUNCHER] + args, env=env, capture_output=True, text=True, timeout=30)


def dry_run(args, spec, extra_env=None):
    result = launch(["--dry-run"] + args, spec, extra_env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def replicas(counts):
    """(task type, index) of every replica of pools 0 and 1, in rank order."""
    return [(f"workerpool{p}", i) for p in (0, 1) for i in range(counts[p] if p < len(counts) else 0)]


class LauncherTest(unittest.TestCase):
    # Chief + 3 GPU workers, 13 reducers (job.yaml); the same with 2 evaluators
    # in pool 3; a chief alone with reducers; chief, an empty pool 1, evaluators.
    SHAPES = [(1, 3, 13), (1, 3, 13, 2), (1, 0, 4), (1, 0, 0, 1)]

    def test_torchrun_gets_nodes_rank_and_master_from_pools_0_and_1(self):
        for counts in self.SHAPES:
            nodes = counts[0] + counts[1]
            ranks = []
            for task_type, index in replicas(counts):
                spec = cluster_spec(counts, task_type, index)
                got = dry_run(["--", "torchrun", "--nproc_per_node=8", "train.py", "--lr", "0.1"], spec,
                              {"WORLD_SIZE": str(sum(counts)), "RANK": "7"})
                where = f"{counts} {task_type}[{index}]"
                self.assertEqual(got["nodes"], nodes, where)
                self.assertEqual(got["command"][:5], [
                    "torchrun", f"--nnodes={nodes}", f"--node_rank={got['node_rank']}",
                    "--master_addr=cmle-training-workerpool0-5d1e9c-0", "--master_port=2222"], where)
                self.assertEqual(got["command"][5:], ["--nproc_per_node=8", "train.py", "--lr", "0.1"], where)
                # Vertex AI's WORLD_SIZE and RANK (every pool counted) must not reach torchrun.
                self.assertNotIn("WORLD_SIZE", got["env"], where)
                self.assertNotIn("RANK", got["env"], where)
                ranks.append(got["node_rank"])
            self.assertEqual(ranks, list(range(nodes)), f"{counts}: every node rank once, the chief first")

    def test_python_m_torch_distributed_run_is_torchrun(self):
        spec = cluster_spec((1, 1, 2), "workerpool1", 0)
        got = dry_run(["--master-port", "29400", "--", "python3", "-m", "torch.distributed.run", "t.py"], spec)
        self.assertEqual(got["command"], ["python3", "-m", "torch.distributed.run", "--nnodes=2", "--node_rank=1",
                                          "--master_addr=cmle-training-workerpool0-5d1e9c-0", "--master_port=29400",
                                          "t.py"])

    def test_other_commands_get_the_environment(self):
        counts = (1, 3, 13, 2)
        for task_type, index in replicas(counts):
            got = dry_run(["--", "rs-train", "--steps", "10"], cluster_spec(counts, task_type, index),
                          {"WORLD_SIZE": "19"})
            rank = 0 if task_type == "workerpool0" else 1 + index
            self.assertEqual(got["command"], ["rs-train", "--steps", "10"])
            self.assertEqual(got["env"], {"NNODES": "4", "NODE_RANK": str(rank),
                                          "MASTER_ADDR": "cmle-training-workerpool0-5d1e9c-0",
                                          "MASTER_PORT": "2222", "WORLD_SIZE": "4", "RANK": str(rank)})
        got = dry_run(["--nproc-per-node=8", "--", "my-launcher"], cluster_spec(counts, "workerpool1", 2))
        self.assertEqual((got["env"]["WORLD_SIZE"], got["env"]["NODE_RANK"]), ("32", "3"))
        self.assertNotIn("RANK", got["env"], "a node's rank is no process rank with 8 processes per node")

    def test_the_command_really_runs_with_that_environment(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "env")
            spec = cluster_spec((1, 2, 3, 1), "workerpool1", 1)
            result = launch(["--", "sh", "-c", f'echo "$NNODES $NODE_RANK $MASTER_ADDR:$MASTER_PORT" > {out}; exit 7'],
                            spec)
            self.assertEqual(result.returncode, 7, "the command's exit status")
            with open(out) as f:
                self.assertEqual(f.read().strip(), "3 2 cmle-training-workerpool0-5d1e9c-0:2222")
            self.assertNotIn(SECRET, result.stdout + result.stderr)
            result = launch(["--", "no-such-command-here"], spec)
            self.assertEqual(result.returncode, 127)
            self.assertIn("cannot run 'no-such-command-here'", result.stderr)

    def test_replicas_outside_pools_0_and_1_are_refused(self):
        counts = (1, 3, 13, 2)
        for task_type, index, says in (("workerpool2", 5, "a reducer"), ("workerpool3", 1, "not a training node")):
            result = launch(["--", "torchrun", "t.py"], cluster_spec(counts, task_type, index))
            self.assertEqual(result.returncode, 2, task_type)
            self.assertIn(f"{task_type}[{index}]", result.stderr)
            self.assertIn(says, result.stderr)
            self.assertEqual(result.stdout, "")

    def test_bad_specs_are_errors_that_never_print_the_spec(self):
        good = json.loads(cluster_spec((1, 3, 13), "workerpool1", 0))
        cases = {
            "CLUSTER_SPEC is not set": None,
            "CLUSTER_SPEC is not JSON (": cluster_spec((1, 3, 13), "workerpool1", 0)[:-3],
            "has no 'cluster' object": json.dumps({**good, "cluster": None}),
            "has no cluster.workerpool0": json.dumps({**good, "cluster": {"workerpool2": ["r:2222"]}}),
            "workerpool0 has 2 entries": json.dumps({**good, "cluster": {**good["cluster"],
                                                                         "workerpool0": ["a:1", "b:1"]}}),
            "has no task.type": json.dumps({**good, "task": {}}),
            "task.index is -1": json.dumps({**good, "task": {"type": "workerpool1", "index": -1}}),
            "workerpool1[3] is outside": json.dumps({**good, "task": {"type": "workerpool1", "index": 3}}),
            "is not HOST:PORT": json.dumps({**good, "cluster": {**good["cluster"], "workerpool0": ["chief"]}}),
            "is not a list of HOST:PORT": json.dumps({**good, "cluster": {**good["cluster"], "workerpool1": "b:1"}}),
        }
        for says, spec in cases.items():
            result = launch(["--", "torchrun", "t.py"], spec)
            self.assertEqual(result.returncode, 2, says)
            self.assertIn(says, result.stderr)
            self.assertNotIn(SECRET, result.stderr, f"{says}: the spec (and its token) was printed")

    def test_usage_errors(self):
        spec = cluster_spec((1, 1), "workerpool0", 0)
        for args, says in ((["--dry-run"], "no command"), (["--bogus", "--", "x"], "unknown option '--bogus'"),
                           (["--master-port", "0", "--", "x"], "is not a port"),
                           (["--", "torchrun", "--nnodes=4", "t.py"], "torchrun already has --nnodes")):
            result = launch(args, spec)
            self.assertEqual(result.returncode, 2, args)
            self.assertIn(says, result.stderr, args)
        result = launch(["--help"])
        self.assertEqual(result.returncode, 0)
        self.assertIn("workerpool0", result.stdout)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[1:])
