#!/usr/bin/env python3
"""PyTorch DDP (unmodified, Debian's python3-torch on CPU) with reduction_server's comm hook,
against real reducerd processes: 4 ranks over a gloo process group, 2 reducers, a small model.

Scenarios (each with fresh reducers and ranks):
  train         50 steps with uneven buckets (a small bucket_cap_mb) and a parameter unused
                on some ranks in some steps and on all ranks in others
                (find_unused_parameters=True). The parameters are the same bits on every
                rank; they equal a single-process reference bit for bit (the 4 ranks'
                gradients, divided by 4, summed in rank order, as the reducers do); they match
                a twin trained with DDP's own gloo all-reduce to float32 rounding. Then bad
                input, each a clear exception that leaves the training session and the
                reducers working: a non-contiguous tensor, ranks passing different sizes, then
                different dtypes (each in a session of its own), a wrong job token, no
                REDUCER_ADDRS. Then the job ends without close(), rank after rank (at exit,
                at destroy_process_group): no rank prints a failure, and both reducers log
                the training session as ended.
  failover      a reducer killed (SIGKILL) mid-run, failover on: training goes on with the
                other and ends with the same bits as the reference.
  failover_off  the same with REDUCER_FAILOVER=0 and REDUCER_LIVENESS_TIMEOUT=1s: every
                rank raises, naming the killed reducer, within the bound; none hangs.
  frozen_off    the same with the reducer frozen (SIGSTOP), which no TCP reset reports: only
                the liveness timeout finds it, and every rank must raise within it.

Every wait is bounded. Exit 0 when every check passed, 1 otherwise, 77 (skip) without torch.

  ddp_hook_test.py --reducerd build/server/reducerd [--pythonpath build/python] [--python PY]
"""
import argparse
import hashlib
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORLD = 4
STEPS = 50
KILL_AT_STEP = 20
LIVENESS_S = 1.0


# ---------------------------------------------------------------- the ranks

def worker(args):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import reduction_server as rs
    from reduction_server.torch import ReducerState, allreduce_hook

    torch.set_num_threads(1)  # the same kernels (and bits) in every rank and in the reference
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", init_method="file://" + args.store, rank=rank, world_size=WORLD)

    def make_model():
        torch.manual_seed(7)
        return Net()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(
                torch.nn.Linear(16, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 8))
            self.extra = torch.nn.Linear(8, 8)

        def forward(self, x, use_extra):
            y = self.body(x)
            return y + self.extra(y) if use_extra else y

    def use_extra(step, r):
        # unused by every rank every 5th step; by rank 1 every other step
        return step % 5 != 4 and not (r == 1 and step % 2 == 0)

    def batch(step, r):
        g = torch.Generator().manual_seed(1000 * step + r)
        return torch.rand(8, 16, generator=g) * 2 - 1, torch.rand(8, 8, generator=g) * 2 - 1

    def sgd(model):
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def train_step(model, opt, step):
        x, y = batch(step, rank)
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(x, use_extra(step, rank)), y).backward()
        opt.step()

    def params_hash(model):
        h = hashlib.sha256()
        for p in model.parameters():
            h.update(p.detach().numpy().tobytes())
        return h.hexdigest()

    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)
            print("rank %d FAIL: %s" % (rank, what), flush=True)

    kwargs = dict(bucket_cap_mb=0.05, find_unused_parameters=True)
    model = DDP(make_model(), **kwargs)
    state = ReducerState()
    sizes = []

    def counting_hook(s, bucket):
        sizes.append((bucket.index(), bucket.buffer().numel()))
        return allreduce_hook(s, bucket)

    model.register_comm_hook(state, counting_hook)
    opt = sgd(model)
    twin = opt_twin = None
    if args.scenario == "train":
        twin = DDP(make_model(), **kwargs)
        opt_twin = sgd(twin)

    start = time.monotonic()
    raised = None
    for step in range(STEPS):
        if step == KILL_AT_STEP and args.scenario != "train":
            dist.barrier()  # every rank has its step-19 results: the kill falls between steps
            if rank == 0:
                print("KILL-NOW", flush=True)
                assert sys.stdin.readline().strip() == "go"
            dist.barrier()
            killed_at = time.monotonic()
        try:
            train_step(model, opt, step)
        except Exception as e:  # failover_off: expected once the reducer is gone
            raised = (e, time.monotonic() - killed_at if step >= KILL_AT_STEP else None, step)
            break
        if twin is not None:
            train_step(twin, opt_twin, step)
    done = raised[2] if raised else STEPS
    print("rank %d: %d steps in %.1fs, buckets (index, elements) %s" % (rank, done, time.monotonic() - start,
                                                                        sorted(set(sizes))), flush=True)

    if args.scenario in ("failover_off", "frozen_off"):
        killed = os.environ["KILLED_ADDR"]
        check(raised is not None, "no exception after the reducer was killed with failover off")
        if raised:
            e, after, step = raised
            print("rank %d raised at step %d, %.2fs after the kill: %s: %s"
                  % (rank, step, after or -1, type(e).__name__, e), flush=True)
            # The client's bound is the liveness timeout plus a tenth; the slack is
            # for the step's own work and a loaded 2-core machine.
            check(after is not None and after < LIVENESS_S * 1.1 + 2,
                  "raised %s s after the kill, bound %.1fs + 2s" % (after, LIVENESS_S * 1.1))
            check(killed in str(e) and "ReducerError" in str(e),
                  "backward's exception does not name ReducerError and the reducer %s: %s" % (killed, e))
            try:
                state.check()
                check(False, "state.check() did not raise after the session failed")
            except rs.ReducerError as err:
                check(killed in str(err), "ReducerError does not name %s: %s" % (killed, err))
                print("rank %d: state.check(): ReducerError(%s): %s" % (rank, err.code, err), flush=True)
        state.close()
        return finish(failures, rank)

    # Same bits on every rank.
    hashes = [None] * WORLD
    dist.all_gather_object(hashes, params_hash(model))
    check(len(set(hashes)) == 1, "parameters differ across ranks: %s" % hashes)
    check(len({n for _, n in sizes}) >= 3, "not 3 buckets of different sizes: %s" % sorted(set(sizes)))
    stats = state.client.stats()
    if args.scenario == "failover":
        check(stats["live_reducers"] == 1 and stats["epochs_installed"] >= 1,
              "no failover happened: %s" % stats)

    if rank == 0:
        ref = reference(torch, make_model, sgd, batch, use_extra)
        same = all(torch.equal(a, b) for a, b in zip(model.module.parameters(), ref.parameters()))
        check(same, "parameters differ from the single-process reference (max diff %g)"
              % max((a - b).abs().max().item() for a, b in zip(model.module.parameters(), ref.parameters())))
        if twin is not None:
            diff = max((a - b).abs().max().item() for a, b in zip(model.module.parameters(), twin.module.parameters()))
            close = all(torch.allclose(a, b, rtol=1e-4, atol=1e-5)
                        for a, b in zip(model.module.parameters(), twin.module.parameters()))
            check(close, "parameters differ from the gloo twin beyond float32 rounding: max diff %g" % diff)
            print("rank 0: bit-identical to the reference: %s; gloo twin max diff %.3g" % (same, diff), flush=True)

    if args.scenario == "train":
        bad_input(torch, dist, rs, state, rank, check)
        end_as_jobs_do(dist, state, rank, check)
    state.close()
    return finish(failures, rank)


def end_as_jobs_do(dist, state, rank, check):
    """An unmodified job never calls state.close(): the package closes it at interpreter
    exit and at destroy_process_group. One rank after the other, while the others are
    still connected (and idle): ranks 0-2 at exit (its atexit hooks, run here since the
    worker leaves with os._exit), rank 3 at destroy_process_group(). None may see a
    failure (the driver reads their stderr), and the reducers log the session as ended."""
    import atexit
    for r in range(WORLD):
        if rank == r:
            if r < WORLD - 1:
                atexit._run_exitfuncs()
            else:
                dist.destroy_process_group()
            check(state._closed, "the state was not closed by %s"
                  % ("the atexit hook" if r < WORLD - 1 else "destroy_process_group()"))
        if r < WORLD - 1:
            dist.barrier()


def reference(torch, make_model, sgd, batch, use_extra):
    """One process: each rank's gradients, divided by 4, summed in rank order in float32
    (the hook divides first; the reducers add rank 0's, then 1's, ...), then SGD."""
    model = make_model()
    opt = sgd(model)
    params = list(model.parameters())
    for step in range(STEPS):
        grads = []
        for r in range(WORLD):
            x, y = batch(step, r)
            model.zero_grad(set_to_none=True)
            torch.nn.functional.mse_loss(model(x, use_extra(step, r)), y).backward()
            grads.append([None if p.grad is None else p.grad.clone() for p in params])
        for i, p in enumerate(params):
            mine = [g[i] for g in grads]
            if all(g is None for g in mine):
                p.grad = None  # unused everywhere: DDP leaves the gradient alone
                continue
            acc = None
            for g in mine:
                g = torch.zeros_like(p) if g is None else g / WORLD
                acc = g if acc is None else acc + g
            p.grad = acc
        opt.step()
    return model


def bad_input(torch, dist, rs, state, rank, check):
    """Each mistake raises a clear exception; the training session and the reducers go on."""
    def expect(exc_type, fn, words, what):
        try:
            fn()
            check(False, "%s: no exception" % what)
        except exc_type as e:
            text = str(e)
            check(all(w in text for w in words), "%s: message lacks %s: %s" % (what, words, text))
            print("rank %d: %s -> %s(%s): %s" % (rank, what, type(e).__name__, getattr(e, "code", ""), text),
                  flush=True)

    expect(rs.SettingsError, lambda: state.client.all_reduce(torch.zeros(8, 8)[:, 0]), ["contiguous"],
           "non-contiguous tensor")
    # The session names come from the process group, as ReducerState's do.
    tag = [secrets.token_hex(4) if rank == 0 else None]
    dist.broadcast_object_list(tag, src=0)

    def mismatched(kind):
        with rs.Client(session="bad-%s-%s" % (kind, tag[0]), op_timeout="20s") as c:
            if kind == "size":
                t = torch.ones(1000 if rank < 2 else 3000)
            else:
                t = torch.ones(1000, dtype=torch.float32 if rank < 2 else torch.float64)
            h = c.all_reduce(t)
            if not h.wait(timeout=30):
                check(False, "%s mismatch: no answer within 30 s" % kind)
                return
    # Every rank learns what differed, also one that a reducer stopped because of another rank.
    expect(rs.ReducerError, lambda: mismatched("size"), ["1000 elements", "3000 elements"],
           "ranks passing different sizes")
    expect(rs.ReducerError, lambda: mismatched("dtype"), ["float32", "float64"], "ranks passing different dtypes")
    if rank == 0:
        expect(rs.ReducerError, lambda: rs.Client(session="bad-token-" + tag[0], rank=0, world_size=1,
                                                  job_token="not-the-token", connect_timeout=20),
               ["token"], "a wrong job token")
        saved = os.environ.pop("REDUCER_ADDRS")
        expect(rs.SettingsError, lambda: rs.Client(session="x", rank=0, world_size=1), ["REDUCER_ADDRS"],
               "no REDUCER_ADDRS")
        os.environ["REDUCER_ADDRS"] = saved
    # The training session still works, with every rank.
    t = torch.full((4096,), float(rank + 1))
    ok = state.client.all_reduce(t).wait(timeout=30)
    check(ok and torch.equal(t, torch.full((4096,), 10.0)), "the training session no longer reduces: %s" % t[:4])


def finish(failures, rank):
    print("rank %d: %s" % (rank, "PASS" if not failures else "%d check(s) failed" % len(failures)), flush=True)
    return 0 if not failures else 1


# ---------------------------------------------------------------- the driver

def run_scenario(args, name, logdir):
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    sys.path.insert(0, HERE)
    from reducers import Reducers
    token = secrets.token_hex(16)
    scen_dir = os.path.join(logdir, name)
    os.makedirs(scen_dir, exist_ok=True)
    extra = {"REDUCER_LIVENESS_TIMEOUT": "%dms" % (LIVENESS_S * 1000)}
    if name in ("failover_off", "frozen_off"):
        extra["REDUCER_FAILOVER"] = "0"
    with Reducers(args.reducerd, 2, scen_dir, token, args=["--op-timeout", "15s"]) as reducers:
        env = dict(os.environ, WORLD_SIZE=str(WORLD), REDUCER_ADDRS=reducers.addr_list, REDUCER_JOB_TOKEN=token,
                   OMP_NUM_THREADS="1", KILLED_ADDR=reducers.addrs[1], **extra)
        if args.pythonpath:
            env["PYTHONPATH"] = args.pythonpath + os.pathsep + env.get("PYTHONPATH", "")
        store = os.path.join(scen_dir, "store")
        if os.path.exists(store):
            os.remove(store)
        procs, logs = [], []
        for r in range(WORLD):
            log = open(os.path.join(scen_dir, "rank%d.log" % r), "w")
            logs.append(log)
            procs.append(subprocess.Popen(
                [args.python, os.path.abspath(__file__), "--worker", name, "--store", store],
                env=dict(env, RANK=str(r)), stdout=subprocess.PIPE if r == 0 and name != "train" else log,
                stderr=log, stdin=subprocess.PIPE if r == 0 else subprocess.DEVNULL, text=True))
        deadline = time.monotonic() + args.timeout
        problems = []
        if name != "train":
            # Rank 0 stops at KILL_AT_STEP and says so; every rank then waits at a barrier.
            p0 = procs[0]
            out0 = open(os.path.join(scen_dir, "rank0.out"), "w")
            logs.append(out0)
            at_step = threading.Event()

            def copy_rank0():
                for line in iter(p0.stdout.readline, ""):
                    out0.write(line)
                    if "KILL-NOW" in line:
                        at_step.set()
                at_step.set()  # ended: the driver finds out below

            copier = threading.Thread(target=copy_rank0, daemon=True)
            copier.start()
            if at_step.wait(timeout=max(deadline - time.monotonic(), 1)) and p0.poll() is None:
                reducers.kill(1, freeze=name == "frozen_off")
                print("  [%s] driver: reducer 1 (%s) %s at step %d" % (
                    name, reducers.addrs[1], "frozen" if name == "frozen_off" else "killed", KILL_AT_STEP))
                try:
                    p0.stdin.write("go\n")
                    p0.stdin.flush()
                except BrokenPipeError:
                    pass  # rank 0 ended meanwhile: its exit status says why
            else:
                problems.append("rank 0 did not reach step %d" % KILL_AT_STEP)
        for r, p in enumerate(procs):
            try:
                rc = p.wait(timeout=max(deadline - time.monotonic(), 1))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                rc = "hung (killed after %ds)" % args.timeout
            if rc != 0:
                problems.append("rank %d exited %s" % (r, rc))
        if name != "train":
            copier.join(timeout=10)
        if not reducers.alive(0):
            problems.append("reducer 0 died (log %s)" % reducers.logs[0])
        if name == "train" and not reducers.alive(1):
            problems.append("reducer 1 died (log %s)" % reducers.logs[1])
    for log in logs:
        log.close()
        with open(log.name) as f:
            for line in f.read().splitlines():
                if line.startswith("rank") or "Error" in line or "FAIL" in line:
                    print("  [%s] %s" % (name, line))
                if name == "train" and "peer failed" in line:
                    problems.append("%s: %s" % (os.path.basename(log.name), line))
    if name == "train":
        problems += training_session_ended(reducers.logs)
    return problems


def training_session_ended(reducer_logs):
    """Each reducer logged the training session (the only one that can end well: the
    bad-input ones fail by design) as ended at INFO, with no rank lost or left."""
    import re
    problems = []
    for path in reducer_logs:
        with open(path) as f:
            text = f.read()
        if not re.search(r"info reducerd: session [0-9a-f]+ ended: [1-9][0-9]* operations", text):
            problems.append("%s: the training session was not logged as ended" % path)
        for words in ("disconnected from the reducer", "left the session", "without goodbye"):
            if words in text:
                problems.append("%s: %s" % (path, [l for l in text.splitlines() if words in l]))
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--store", help=argparse.SUPPRESS)
    p.add_argument("--reducerd")
    p.add_argument("--python", default=sys.executable, help="the interpreter the ranks run (with torch)")
    p.add_argument("--pythonpath", default="", help="where reduction_server is (a build's python/ folder)")
    p.add_argument("--scenarios", default="train,failover,failover_off,frozen_off")
    p.add_argument("--timeout", type=float, default=90, help="bound on one scenario's ranks, seconds")
    p.add_argument("--logdir", default="")
    args = p.parse_args()
    if args.worker:
        args.scenario = args.worker
        rc = worker(args)
        # Leave without tearing the interpreter down: with torch 1.13 and gloo,
        # freeing a DDP model at exit can deadlock (trainer/torch_ddp.py says how).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    probe = subprocess.run([args.python, "-c", "import torch.distributed, numpy"], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=args.pythonpath))
    if probe.returncode != 0:
        print("SKIPPED: %s cannot import torch.distributed: %s" % (args.python, probe.stderr.strip()[-300:]))
        return 77
    logdir = args.logdir or tempfile.mkdtemp(prefix="rs-ddp-hook-")
    failed = False
    for name in args.scenarios.split(","):
        t0 = time.monotonic()
        problems = run_scenario(args, name, logdir)
        print("%s: %s in %.1fs" % (name, "PASS" if not problems else "FAIL: " + "; ".join(problems),
                                   time.monotonic() - t0), flush=True)
        failed |= bool(problems)
    print("logs in %s" % logdir)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
