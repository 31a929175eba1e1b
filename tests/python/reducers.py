"""Real reducerd processes on 127.0.0.1 for the Python tests.

Each reducer listens on port 0; its "listening on" line (the last it prints at start,
reducerd's main.cc) gives the port, read from its stdout with a deadline. Logs go to
LOGDIR/reducerI.log. Every process started here is stopped on exit.
"""
import os
import select
import signal
import subprocess
import threading
import time


class Reducers:
    def __init__(self, reducerd, count, logdir, token, args=(), start_timeout=30.0):
        self.procs = []
        self.copiers = []
        self.frozen = set()
        self.addrs = []
        self.logs = []
        for i in range(count):
            log_path = os.path.join(logdir, "reducer%d.log" % i)
            # Unbuffered: what reducerd printed is in the file as soon as the
            # copier below has read it, not when a buffer fills or the file
            # object goes (a log read right after stop() was found empty).
            log = open(log_path, "wb", buffering=0)
            env = dict(os.environ, REDUCER_JOB_TOKEN=token)
            p = subprocess.Popen([reducerd, "--listen", "127.0.0.1:0", "--io-threads", "1", *args],
                                 stdout=subprocess.PIPE, stderr=log, env=env)
            self.procs.append(p)
            self.logs.append(log_path)
            self.addrs.append("127.0.0.1:%d" % self._port(p, log, start_timeout, log_path))

    def _port(self, p, log, timeout, log_path):
        deadline = time.monotonic() + timeout
        buf = b""
        while b"listening on" not in buf:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([p.stdout], [], [], max(left, 0))
            chunk = os.read(p.stdout.fileno(), 4096) if ready else b""
            if not chunk:
                raise RuntimeError("reducerd did not start within %gs (exit %s); log %s: %s"
                                   % (timeout, p.poll(), log_path, open(log_path).read()[-500:]))
            buf += chunk
        line = [l for l in buf.decode().splitlines() if "listening on" in l][0]
        log.write(buf)
        # Whatever else it prints goes to its log, so a full pipe never blocks it.
        copier = threading.Thread(target=lambda: [log.write(c) for c in iter(lambda: p.stdout.read1(4096), b"")],
                                  daemon=True)
        copier.start()
        self.copiers.append(copier)
        return int(line.rsplit(":", 1)[1])

    @property
    def addr_list(self):
        return ",".join(self.addrs)

    def kill(self, i, freeze=False):
        """SIGKILL (the kernel closes its connections) or SIGSTOP (silence: only
        liveness timeouts notice)."""
        if freeze:
            self.procs[i].send_signal(signal.SIGSTOP)
            self.frozen.add(i)
            return
        self.procs[i].send_signal(signal.SIGKILL)
        self.procs[i].wait(timeout=10)

    def alive(self, i):
        return self.procs[i].poll() is None and i not in self.frozen

    def stop(self):
        for i in self.frozen:
            self.procs[i].kill()
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        # The copiers end at the pipes' end: then every line is in the logs.
        for copier in self.copiers:
            copier.join(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False
