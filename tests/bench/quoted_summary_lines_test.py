#!/usr/bin/env python3
"""reducer-bench's summary lines as the docs quote them: `# Transport      :`,
`# Failover       :` and the others, with the padding the program prints, so
that a user who greps a log for what the docs show finds it.

The labels and their padding come from the program itself (its format
strings, read from the binary given with --reducer-bench) and from bench/'s
sources, which must agree.

  quoted_summary_lines_test.py [--reducer-bench build/bench/reducer-bench]
"""
import argparse
import glob
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BINARY = None
# "# Transport      : ": a label, its padding, the colon.
LINE = r"# ([A-Z][A-Za-z]*(?: [a-z][A-Za-z]*)*) +: "


def printed_prefixes(text):
    return {m.group(1): m.group(0) for m in re.finditer(LINE, text)}


def from_sources():
    prefixes = {}
    for source in glob.glob(os.path.join(ROOT, "bench", "*.cc")):
        with open(source) as f:
            # Only inside string literals: the format strings.
            for literal in re.findall(r'"((?:[^"\\\n]|\\.)*)"', f.read()):
                prefixes.update(printed_prefixes(literal.replace("\\n", "\n")))
    return prefixes


def from_binary(binary):
    with open(binary, "rb") as f:
        return printed_prefixes(f.read().decode("latin-1"))


def quotes(label):
    """Every place README.md or docs/ quotes the label with a colon."""
    found = []
    for doc in [os.path.join(ROOT, "README.md")] + glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True):
        with open(doc) as f:
            for n, line in enumerate(f, 1):
                for m in re.finditer(rf"(?<!#)# {re.escape(label)} *:", line):  # not "## Failover:"
                    found.append((f"{os.path.relpath(doc, ROOT)}:{n}", m.group(0) + " "))
    return found


class QuotedSummaryLinesTest(unittest.TestCase):
    def test_sources_name_the_summary_lines(self):
        prefixes = from_sources()
        for label in ("Transport", "Failover", "TCP waits", "Input bytes", "Avg algbw", "Wrong elements"):
            self.assertIn(label, prefixes)

    def test_the_program_prints_what_the_sources_say(self):
        if BINARY is None:
            self.skipTest("no --reducer-bench: checked against bench/'s sources only")
        printed = from_binary(BINARY)
        for label, prefix in from_sources().items():
            self.assertEqual(printed.get(label), prefix, label)

    def test_docs_quote_the_lines_as_printed(self):
        quoted = 0
        for label, prefix in from_sources().items():
            for where, text in quotes(label):
                quoted += 1
                self.assertEqual(text, prefix, f"{where} quotes `{text.strip()}`; reducer-bench prints `{prefix.strip()}`")
        self.assertGreater(quoted, 3, "the docs quote the summary lines: the check must see them")


def main():
    global BINARY
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reducer-bench", help="the built program, for its format strings")
    args, rest = p.parse_known_args()
    BINARY = args.reducer_bench
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()
