#!/usr/bin/env python3
"""bench/collnet_trace.py on a trace whose figures are known: the share of the
span with no call out (NCCL's side idle), the calls out on average, each
stage's median, and what it says for a directory without a trace."""
import contextlib
import io
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import collnet_trace  # noqa: E402

HEADER = "call_us,issued_us,first_result_us,done_us,seen_us,bytes,in_flight,pool_full_before,polls,ok\n"
# Two calls out together over [0, 1000] us, then nothing until 3000, then one
# call alone over [3000, 4000]: 1 MiB each.
ROWS = [
    "0.0,10.0,400.0,900.0,1000.0,1048576,1,0,5,1\n",
    "0.0,20.0,500.0,950.0,1000.0,1048576,2,0,6,1\n",
    "3000.0,3010.0,3400.0,3900.0,4000.0,1048576,1,3,7,1\n",
]


def run(paths):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = collnet_trace.main(paths)
    return status, out.getvalue(), err.getvalue()


class CollNetTraceTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        with open(os.path.join(self.dir, "collnet-host-1-0.csv"), "w") as f:
            f.write("# reduction server CollNet trace: node 0 of 2, session abc\n")
            f.write("# times in microseconds since the communicator connected; 3 calls, 0 left out\n")
            f.write(HEADER + "".join(ROWS))

    def test_idle_share_calls_out_and_stages(self):
        status, out, _ = run([self.dir])
        self.assertEqual(status, 0)
        self.assertIn("collnet-host-1-0.csv: node 0 of 2, session abc", out)
        self.assertIn("calls           3 (0 failed), 3.0 MiB, 4.0 ms from the first call to the last seen", out)
        # Out 2000 of 4000 us: none 50 %; 2 calls for 1000 us and 1 for 1000 us.
        self.assertIn("calls out       1.5 on average while any, at most 2; none 50 % of the span", out)
        self.assertIn("NCCL retried 3 calls with every request out", out)
        # complete, from the call: 900, 950, 900 us; seen: 100, 50, 100 us.
        self.assertRegex(out, r"complete\s+0\.900    0\.950    0\.950 ")
        self.assertRegex(out, r"seen by test\(\)\s+0\.100 ")
        self.assertIn("test() calls    6 per call (median), 7 at most", out)

    def test_brief_is_one_line_per_call_size(self):
        status, out, _ = run(["--brief", self.dir])
        self.assertEqual(status, 0)
        lines = out.strip().split("\n")
        self.assertEqual(len(lines), 2, out)
        self.assertEqual(lines[1], "  calls of 1024 KiB: 3 calls, 1.5 out on average (at most 2), none out 50 % of "
                                   "the time; median ms: issue 0.010, first result 0.400, complete 0.900, "
                                   "seen by test() 0.100 later")

    def test_directory_without_a_trace_says_why(self):
        empty = tempfile.mkdtemp()
        status, _, err = run([empty])
        self.assertEqual(status, 1)
        self.assertIn("no collnet-*.csv in " + empty, err)
        self.assertIn("written when NCCL closes the communicator", err)


if __name__ == "__main__":
    unittest.main()
