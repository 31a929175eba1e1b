#!/usr/bin/env python3
"""The launch lines the README and the guides give users, as the programs
take them:

- Every torchrun line (README.md, docs/) parsed by torchrun's own argument
  parser (torch.distributed.run, Debian's python3-torch) and turned into its
  launch configuration: flags that exist, and on more than one node a
  rendezvous that gives each node its own rank (c10d with an id and an
  endpoint, or static with --node_rank). A static rendezvous without
  --node_rank makes every node rank 0 and the job never starts.
- The job-token examples: each file the docs write a token to gets 32 random
  bytes (`openssl rand -hex 32`), and reducerd's token file is one path
  throughout.

Skips the torchrun part (not the rest) where PyTorch is not installed.
"""
import glob
import os
import re
import shlex
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
TOKEN_PATH = "/etc/reducer/job-token"


def documents():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                                recursive=True))


def shell_lines(doc):
    """The commands of a document's shell code blocks, continuation lines joined."""
    with open(doc) as f:
        text = f.read()
    for block in re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, re.S):
        yield from block.replace("\\\n", " ").splitlines()


def torchrun_lines():
    found = []
    for doc in documents():
        for line in shell_lines(doc):
            words = shlex.split(line, comments=True)
            while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
                words = words[1:]  # VAR=value before the command
            if words[:1] == ["torchrun"] and "..." not in words:
                found.append((os.path.relpath(doc, ROOT), line.strip(), words[1:]))
    return found


def max_nodes(nnodes):
    return int(str(nnodes).split(":")[-1])


class TorchrunLinesTest(unittest.TestCase):
    def setUp(self):
        try:
            import torch.distributed.run  # noqa: F401
        except ImportError as e:
            self.skipTest(f"PyTorch is not installed ({e}): python3-torch")

    def test_there_are_lines_to_check(self):
        docs = {doc for doc, _, _ in torchrun_lines()}
        self.assertIn("README.md", docs)
        self.assertIn(os.path.join("docs", "guide", "frameworks.md"), docs)

    def test_every_node_gets_its_own_rank(self):
        from torch.distributed import run
        for doc, line, argv in torchrun_lines():
            with self.subTest(doc=doc, line=line):
                try:
                    args = run.get_args_parser().parse_args(argv)
                except SystemExit:
                    self.fail(f"{doc}: torchrun refuses `{line}`")
                config, _, _ = run.config_from_args(args)
                if max_nodes(args.nnodes) <= 1:
                    continue
                if config.rdzv_backend == "static":
                    given = any(w.split("=")[0] in ("--node_rank", "--node-rank") for w in argv)
                    self.assertTrue(given, f"{doc}: `{line}`: static rendezvous on {args.nnodes} nodes without "
                                           "--node_rank: every node takes rank 0")
                else:
                    self.assertEqual(config.rdzv_backend, "c10d", f"{doc}: `{line}`")
                    self.assertNotEqual(config.run_id, "none", f"{doc}: `{line}`: no --rdzv_id")
                    self.assertRegex(config.rdzv_endpoint, r"^\S+:\d+$", f"{doc}: `{line}`: no --rdzv_endpoint")

    def test_the_check_can_fail(self):
        # The README's old line: parsed, and refused by the rule above.
        from torch.distributed import run
        argv = shlex.split("--nproc_per_node=8 --nnodes=2 --rdzv_endpoint=HOST:29500 train.py")
        config, _, _ = run.config_from_args(run.get_args_parser().parse_args(argv))
        self.assertEqual(config.rdzv_backend, "static")
        self.assertFalse(any(w.startswith("--node_rank") for w in argv))


class TokenExamplesTest(unittest.TestCase):
    def test_token_files_are_made_random(self):
        written = 0
        for doc in documents():
            for line in shell_lines(doc):
                m = re.search(r">\s*(\S*token\S*)", line.split("#")[0])
                if not m or "/dev/" in m.group(1):
                    continue
                written += 1
                self.assertRegex(line, r"openssl rand -hex 32 >", f"{os.path.relpath(doc, ROOT)}: `{line.strip()}`")
        self.assertGreater(written, 2)

    def test_one_path_for_reducerds_token_file(self):
        paths = set()
        for doc in documents():
            with open(doc) as f:
                paths |= set(re.findall(r"/etc/reducer/[\w.-]+", f.read()))
        self.assertEqual(paths, {TOKEN_PATH})


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[1:])
