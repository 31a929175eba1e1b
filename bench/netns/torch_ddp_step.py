#!/usr/bin/env python3
"""A real PyTorch DDP training step on CPU, with the reducers' comm hook or DDP's own gloo all-reduce.

One process per rank, like gloo_allreduce.py. The model is a stack of torch.nn.Linear layers
(--width wide) holding --model-bytes of float32 parameters, so each step all-reduces that many
bytes of gradients. --comm hook registers reduction_server.torch's allreduce_hook (settings from
the environment: REDUCER_ADDRS, REDUCER_JOB_TOKEN_FILE, ...); --comm gloo leaves DDP's default
all-reduce on the gloo process group. Both use the gloo group for DDP's start-up broadcast.

Per bucket cap (--bucket-cap-mb, a comma list gives one line each): --warmup untimed steps, then
--iters timed steps (forward, backward, SGD), then --iters backward passes under no_sync() (the
same backward with nothing on the wire). Rank 0 writes one CSV line with the slowest rank's
averages:
  step_us            forward + backward + optimizer step
  backward_us        loss.backward(), which returns when every bucket is all-reduced
  backward_nosync_us the same backward without communication (compute alone)
  allreduce_us       from the first gradient's arrival to backward's return: the window in which
                     the buckets are all-reduced (backward compute after the first gradient overlaps it)
  algbw_GBps         gradient bytes / allreduce_us
  wrong              ranks whose parameters differ from rank 0's bits after the timed steps
"""
import argparse
import csv
import datetime
import sys
import time

from gloo_allreduce import parse_size  # beside this script: the harness's size syntax


def make_model(torch, model_bytes, width):
    """Linear(width, width) layers, then one narrower Linear for the rest: model_bytes of float32
    parameters (to within a row of the last layer)."""
    per_layer = width * width + width
    target = model_bytes // 4
    layers = [torch.nn.Linear(width, width) for _ in range(max(target // per_layer, 1))]
    rest = target - per_layer * len(layers)
    if rest >= width + 1:  # the last layer's rows: width weights and a bias each
        layers.append(torch.nn.Linear(width, rest // (width + 1)))
    body = []
    for layer in layers[:-1]:
        body += [layer, torch.nn.ReLU()]
    return torch.nn.Sequential(*body, layers[-1])


def bucket_count(ddp):
    """DDP's buckets after its rebuild (first step): from its own logging data."""
    data = ddp._get_ddp_logging_data()
    sizes = data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes") or ""
    return len([s for s in str(sizes).split(",") if s.strip()])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--comm", choices=("hook", "gloo"), required=True)
    p.add_argument("--master", required=True, help="HOST:PORT of rank 0's rendezvous store")
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--model-bytes", default="100M", help="float32 parameter (= gradient) bytes")
    p.add_argument("--width", type=int, default=2048, help="the Linear layers' width")
    p.add_argument("--batch", type=int, default=8, help="samples per rank per step")
    p.add_argument("--bucket-cap-mb", default="25", help="DDP's bucket_cap_mb; a comma list gives one line each")
    p.add_argument("-n", "--iters", type=int, default=5)
    p.add_argument("-w", "--warmup", type=int, default=2)
    p.add_argument("--timeout", type=float, default=120, help="seconds for joining and for each collective")
    p.add_argument("--csv", default="")
    a = p.parse_args()

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://" + a.master, world_size=a.world, rank=a.rank,
                            timeout=datetime.timedelta(seconds=a.timeout))
    state = None
    if a.comm == "hook":
        from reduction_server.torch import ReducerState
        state = ReducerState()  # REDUCER_ADDRS, REDUCER_JOB_TOKEN_FILE from the environment
    out = w = None
    if a.rank == 0 and a.csv:
        out = open(a.csv, "w", newline="")
        w = csv.writer(out)
        w.writerow(["comm", "bucket_cap_mb", "grad_bytes", "params", "buckets", "batch", "ranks", "steps",
                    "step_us", "backward_us", "backward_nosync_us", "allreduce_us", "algbw_GBps", "wrong"])
    wrong_total = input_bytes = 0
    for cap in [float(x) for x in a.bucket_cap_mb.split(",")]:
        torch.manual_seed(0)  # the same model on every rank (DDP broadcasts rank 0's anyway)
        model = make_model(torch, parse_size(a.model_bytes), a.width)
        params = list(model.parameters())
        grad_bytes = sum(p.numel() for p in params) * 4
        ddp = DDP(model, bucket_cap_mb=cap)
        if state is not None:
            from reduction_server.torch import allreduce_hook
            ddp.register_comm_hook(state, allreduce_hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
        g = torch.Generator().manual_seed(a.rank)
        x = torch.rand(a.batch, a.width, generator=g)
        first_grad = [None]

        def on_grad(grad):
            if first_grad[0] is None:
                first_grad[0] = time.perf_counter()
            return grad

        for param in params:
            param.register_hook(on_grad)

        def step():
            first_grad[0] = None
            t0 = time.perf_counter()
            loss = ddp(x).square().mean()
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return time.perf_counter() - t0, t2 - t1, t2 - first_grad[0]

        for _ in range(a.warmup):
            step()
        dist.barrier()
        sums = [0.0, 0.0, 0.0]
        for _ in range(a.iters):
            sums = [s + t for s, t in zip(sums, step())]
        # Parameters: every rank's bits must be rank 0's (the same averaged gradients everywhere).
        flat = torch.cat([q.detach().reshape(-1) for q in params])
        check = torch.tensor([int(flat.view(torch.int32).to(torch.int64).sum())], dtype=torch.int64)
        mine = check.clone()
        dist.broadcast(check, src=0)
        differ = torch.tensor([int(not torch.equal(check, mine))], dtype=torch.int64)
        dist.all_reduce(differ)
        # The same backward with nothing on the wire: what compute alone costs.
        nosync = 0.0
        dist.barrier()
        for _ in range(a.iters):
            with ddp.no_sync():
                loss = ddp(x).square().mean()
                t1 = time.perf_counter()
                loss.backward()
                nosync += time.perf_counter() - t1
            opt.zero_grad(set_to_none=True)
        times = torch.tensor([s / a.iters * 1e6 for s in sums] + [nosync / a.iters * 1e6], dtype=torch.float64)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        step_us, backward_us, window_us, nosync_us = (float(t) for t in times)
        wrong = int(differ.item())
        wrong_total += wrong
        input_bytes += grad_bytes * (a.warmup + a.iters)
        algbw = grad_bytes / window_us / 1e3
        buckets = bucket_count(ddp)
        if a.rank == 0:
            print(f"# {a.comm}: {grad_bytes} gradient bytes, bucket_cap_mb {cap:g} ({buckets} buckets), "
                  f"batch {a.batch}: step {step_us / 1e3:.1f} ms, backward {backward_us / 1e3:.1f} ms "
                  f"(without communication {nosync_us / 1e3:.1f} ms), all-reduce window {window_us / 1e3:.1f} ms, "
                  f"algbw {algbw:.3f} GB/s, ranks differing {wrong}", flush=True)
            if w:
                w.writerow([a.comm, f"{cap:g}", grad_bytes, grad_bytes // 4, buckets, a.batch, a.world, a.iters,
                            f"{step_us:.1f}", f"{backward_us:.1f}", f"{nosync_us:.1f}", f"{window_us:.1f}",
                            f"{algbw:.6f}", wrong])
                out.flush()
        del ddp, opt
    if state is not None:
        state.close()
    dist.destroy_process_group()
    if out:
        out.close()
    if a.rank == 0:  # gloo_allreduce.py's closing lines, which the harness reads
        print(f"#\n# Wrong elements : {wrong_total} {'OK' if wrong_total == 0 else 'FAILED'}")
        print(f"# Input bytes    : {input_bytes} per rank (all operations, warm-up included)", flush=True)
    return 0 if wrong_total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
