#!/usr/bin/env python3
"""reduction_server.Client's settings, without reducers: the plugin's variable names and
checks, keyword arguments over the environment (one of a pair hiding the other), and a
clear SettingsError (a ValueError) before any connection for each mistake. A setting
that parses is shown by the next failure being the connection's, to a closed port.

  PYTHONPATH=build/python settings_test.py
"""
import datetime
import os
import socket
import sys
import unittest

import reduction_server as rs


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "127.0.0.1:%d" % port


class SettingsTest(unittest.TestCase):
    def setUp(self):
        self.saved = dict(os.environ)
        for name, _, _ in rs.variables():
            os.environ.pop(name, None)
        for name in ("REDUCER_PIECE_BYTES", "REDUCER_OP_TIMEOUT_MS", "REDUCER_CONNECT_TIMEOUT_MS"):
            os.environ.pop(name, None)
        self.addr = closed_port()
        self.base = dict(rank=0, world_size=1, session="settings-test", connect_timeout="300ms")

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved)

    def settings_error(self, words, **kwargs):
        with self.assertRaises(rs.SettingsError) as cm:
            rs.Client(**kwargs)
        for w in words:
            self.assertIn(w, str(cm.exception))
        self.assertIsInstance(cm.exception, ValueError)
        return cm.exception

    def connect_error(self, **kwargs):
        """The settings were accepted: the failure is the connection's, naming the reducer."""
        with self.assertRaises(rs.ReducerError) as cm:
            rs.Client(**kwargs)
        self.assertNotIsInstance(cm.exception, rs.SettingsError, str(cm.exception))
        self.assertIn(self.addr, str(cm.exception))

    def test_send_window_and_write_slice_are_settings(self):
        # The client's shared settings (client/client_settings.h) all reach Python.
        names = [n for n, _, _ in rs.variables()]
        for n in ("REDUCER_SEND_WINDOW", "REDUCER_WRITE_SLICE"):
            self.assertIn(n, names)
        self.settings_error(["REDUCER_SEND_WINDOW", "'lots'"], addrs=self.addr, send_window="lots", **self.base)
        self.settings_error(["REDUCER_WRITE_SLICE", "'1x'"], addrs=self.addr, write_slice="1x", **self.base)
        self.connect_error(addrs=self.addr, send_window="1MiB", write_slice="0", **self.base)

    def test_tcp_congestion_and_rto_floor_are_settings(self):
        names = [n for n, _, _ in rs.variables()]
        for n in ("REDUCER_TCP_CONGESTION", "REDUCER_TCP_RTO_MIN", "REDUCER_TCP_PACING"):
            self.assertIn(n, names)
        self.settings_error(["REDUCER_TCP_PACING", "'yes'", "auto, 1, 0"], addrs=self.addr, tcp_pacing="yes",
                            **self.base)
        self.settings_error(["REDUCER_TCP_CONGESTION", "'cubic reno'"], addrs=self.addr,
                            tcp_congestion="cubic reno", **self.base)
        self.settings_error(["REDUCER_TCP_RTO_MIN", "200ms"], addrs=self.addr, tcp_rto_min="1s", **self.base)
        self.connect_error(addrs=self.addr, tcp_congestion="reno", tcp_rto_min="0", tcp_pacing="1", **self.base)

    def test_variables_are_the_plugins_plus_rank_world_session(self):
        names = [n for n, _, _ in rs.variables()]
        for n in ("REDUCER_ADDRS", "CLUSTER_SPEC", "REDUCER_JOB_TOKEN", "REDUCER_JOB_TOKEN_FILE",
                  "REDUCER_LIVENESS_TIMEOUT", "REDUCER_FAILOVER", "REDUCER_MAX_PIECE", "RANK", "WORLD_SIZE",
                  "REDUCER_SESSION"):
            self.assertIn(n, names)
        self.assertNotIn("REDUCER_SOCKET_IFNAME", names)  # the plugin's point-to-point, not the client's

    def test_unknown_keyword(self):
        with self.assertRaises(TypeError) as cm:
            rs.Client(adress="x", **self.base)
        self.assertIn("liveness_timeout", str(cm.exception))

    def test_no_reducers(self):
        self.settings_error(["REDUCER_ADDRS", "CLUSTER_SPEC"], **self.base)

    def test_bad_values_name_the_variable(self):
        self.settings_error(["REDUCER_LIVENESS_TIMEOUT", "100ms"], addrs=self.addr, liveness_timeout="50ms",
                            **self.base)
        self.settings_error(["REDUCER_LIVENESS_TIMEOUT", "100ms"], addrs=self.addr, liveness_timeout=0.05,
                            **self.base)
        self.settings_error(["REDUCER_OP_TIMEOUT"], addrs=self.addr, op_timeout="soon", **self.base)
        self.settings_error(["REDUCER_ADDRS"], addrs="no-port", **self.base)
        self.settings_error(["REDUCER_MIN_REDUCERS"], addrs=self.addr, min_reducers=2, **self.base)
        os.environ["REDUCER_FAILOVER"] = "maybe"
        self.settings_error(["REDUCER_FAILOVER"], addrs=self.addr, **self.base)

    def test_rank_world_session(self):
        base = dict(addrs=self.addr)
        self.settings_error(["RANK is not set"], world_size=2, session="s", **base)
        self.settings_error(["RANK=2", "WORLD_SIZE=2"], rank=2, world_size=2, session="s", **base)
        self.settings_error(["REDUCER_SESSION"], rank=0, world_size=1, **base)

    def test_values_in_seconds_and_booleans_are_accepted(self):
        self.connect_error(addrs=self.addr, liveness_timeout=datetime.timedelta(seconds=2), failover=False,
                           op_timeout=30, **dict(self.base, connect_timeout=0.3))

    def test_environment_alone(self):
        os.environ.update(REDUCER_ADDRS=self.addr, RANK="0", WORLD_SIZE="1", REDUCER_SESSION="env",
                          REDUCER_CONNECT_TIMEOUT="300ms")
        self.connect_error()

    def test_argument_wins_over_environment(self):
        os.environ["REDUCER_ADDRS"] = "not an address"
        self.connect_error(addrs=self.addr, **self.base)

    def test_argument_hides_the_other_of_its_pair(self):
        os.environ["REDUCER_ADDRS"] = self.addr
        # cluster_spec given: REDUCER_ADDRS from the environment must not override it.
        self.settings_error(["CLUSTER_SPEC", "workerpool2"], cluster_spec='{"cluster": {"workerpool0": ["a:1"]}}',
                            **self.base)
        os.environ["REDUCER_JOB_TOKEN"] = "from-the-environment"
        self.settings_error(["REDUCER_JOB_TOKEN_FILE", "/nonexistent/token"], job_token_file="/nonexistent/token",
                            **self.base)


if __name__ == "__main__":
    unittest.main(verbosity=2)
