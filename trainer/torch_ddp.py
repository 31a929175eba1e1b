#!/usr/bin/env python3
"""PyTorch DDP training as users write it, with the Reduction Server under it.

The same synthetic task as rs-train (an MLP learning a fixed random teacher
network from data made from the seed and the rank), trained with
DistributedDataParallel. Nothing in the training code knows about the
reducers: on GPUs, NCCL hands the all-reduces to them through the reducer
NCCL plugin when these variables are set on every rank:

  NCCL_NET_PLUGIN=/path/to/libnccl-net-reducer.so   (or "reducer" with the
                                                     library on LD_LIBRARY_PATH)
  NCCL_COLLNET_ENABLE=1                             let NCCL use CollNet
  NCCL_ALGO=allreduce:collnetchain                  optional: force it
  REDUCER_ADDRS=10.0.0.5:7450,10.0.0.6:7450          the reducers (on Vertex AI,
                                                     CLUSTER_SPEC's workerpool2)
  REDUCER_JOB_TOKEN_FILE=/secrets/job-token          if the reducers want a token
  NCCL_DEBUG=INFO                                   to see "NET/Reducer" lines

With --comm hook, DDP's gradient buckets go to the reducers through
reduction_server's comm hook instead (the Python package, python/): no NCCL
plugin, the job keeps its own NCCL (and the platform's network plugin) or gloo
for everything else. The same REDUCER_* variables configure it; on CPU:

  for r in 0 1; do MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=2 RANK=$r \
    REDUCER_ADDRS=127.0.0.1:7450 python3 trainer/torch_ddp.py --comm hook --steps 50 & done; wait

Reducers work best with large messages, so DDP's buckets are 64 MiB here
(--bucket-mb) instead of DDP's default 25: each all-reduce then spreads over
every reducer in large pieces.

Launch with torchrun (or on Vertex AI, which sets RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT):

  torchrun --nproc_per_node=8 --nnodes=2 --rdzv_endpoint=HOST:29500 trainer/torch_ddp.py

It also runs on CPU with gloo, for a smoke run on any machine (Debian's
python3-torch is enough; its torchrun 1.13 fails under Python 3.11, so start
the ranks with the variables torchrun would set):

  for r in 0 1; do MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=2 RANK=$r \
    python3 trainer/torch_ddp.py --backend gloo --steps 50 & done; wait

Rank 0 prints the loss and the step time every --log-every steps; at the end
every rank's parameters are compared (a hash, gathered on rank 0) and the
script exits non-zero if they differ or the loss did not fall.
"""
import argparse
import hashlib
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=["nccl", "gloo"], default=None,
                   help="process group backend (default: nccl with a GPU, else gloo)")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch", type=int, default=32, help="examples per rank and step")
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--input-dim", type=int, default=64)
    p.add_argument("--output-dim", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--bucket-mb", type=float, default=64, help="DDP bucket_cap_mb")
    p.add_argument("--comm", choices=["backend", "hook"], default="backend",
                   help="backend: DDP all-reduces through the process group (NCCL, and so the reducer "
                        "NCCL plugin when it is loaded; or gloo); hook: through the reducers with "
                        "reduction_server's DDP comm hook (REDUCER_ADDRS, ...), everything else on the backend")
    p.add_argument("--bf16-grads", action="store_true",
                   help="all-reduce gradients as bfloat16 (DDP's bf16_compress_hook)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log-every", type=int, default=10)
    return p.parse_args()


def mlp(dims):
    layers = []
    for i in range(len(dims) - 1):
        layers.append(torch.nn.Linear(dims[i], dims[i + 1]))
        if i + 2 < len(dims):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


class Teacher:
    """A fixed random network; targets are its outputs plus a little noise."""

    def __init__(self, args, device):
        g = torch.Generator().manual_seed(args.seed)
        self.w1 = (torch.rand(args.input_dim, 32, generator=g) * 2 - 1) * 3 / args.input_dim ** 0.5
        self.w2 = (torch.rand(32, args.output_dim, generator=g) * 2 - 1) * 3 / 32 ** 0.5
        self.w1, self.w2 = self.w1.to(device), self.w2.to(device)

    def batch(self, args, rank, step, device):
        g = torch.Generator().manual_seed(args.seed * 1_000_003 + rank * 7919 + step)
        x = (torch.rand(args.batch, args.input_dim, generator=g) * 2 - 1).to(device)
        noise = ((torch.rand(args.batch, args.output_dim, generator=g) * 2 - 1) * 0.02).to(device)
        return x, torch.relu(x @ self.w1) @ self.w2 + noise


def parameter_hash(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def main():
    args = parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    backend = args.backend or ("nccl" if torch.cuda.is_available() else "gloo")
    if backend == "nccl":
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend, rank=rank, world_size=world)

    torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
    dims = [args.input_dim] + [args.width] * (args.depth - 1) + [args.output_dim]
    model = DDP(mlp(dims).to(device), device_ids=[device.index] if backend == "nccl" else None,
                bucket_cap_mb=args.bucket_mb, gradient_as_bucket_view=True)
    hook_state = None
    if args.comm == "hook":
        if args.bf16_grads:
            sys.exit("torch_ddp: --bf16-grads and --comm hook: the hook sends the gradients' own dtype")
        from reduction_server.torch import ReducerState, allreduce_hook
        hook_state = ReducerState()
        model.register_comm_hook(hook_state, allreduce_hook)
    elif args.bf16_grads:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        model.register_comm_hook(None, default_hooks.bf16_compress_hook)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    teacher = Teacher(args, device)
    params = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print(f"torch_ddp: {world} ranks, {backend} on {device}, torch {torch.__version__}, "
              f"{params / 1e6:.2f} M parameters ({params * 4 / 2**20:.1f} MiB of gradients), "
              f"bucket_cap_mb {args.bucket_mb:g}, gradients through "
              f"{hook_state.client if hook_state else 'the ' + backend + ' backend'}", flush=True)

    first = last = None
    start = time.perf_counter()
    mark = start
    for step in range(args.steps):
        x, y = teacher.batch(args, rank, step, device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=False)
        loss.backward()  # DDP all-reduces each bucket as soon as backward has filled it
        opt.step()
        if step == 0 or (step + 1) % args.log_every == 0 or step + 1 == args.steps:
            mean = loss.detach().clone()
            dist.all_reduce(mean)
            mean = mean.item() / world
            first = mean if first is None else first
            last = mean
            now = time.perf_counter()
            done_since = 1 if step == 0 else min(args.log_every, step + 1)
            if rank == 0:
                print(f"step {step + 1:6d}/{args.steps}  loss {mean:.6f}  "
                      f"step {(now - mark) / done_since * 1e3:.1f} ms", flush=True)
            mark = now

    hashes = [None] * world
    dist.all_gather_object(hashes, parameter_hash(model.module))
    ok = len(set(hashes)) == 1
    if rank == 0:
        print(f"done: {args.steps} steps in {time.perf_counter() - start:.2f} s; loss {first:.6f} -> {last:.6f}; "
              f"parameters {'identical on every rank' if ok else 'DIFFER: ' + ', '.join(hashes)}", flush=True)
    if hook_state is not None:
        hook_state.close()
    dist.destroy_process_group()
    # Leave without tearing the interpreter down. With torch 1.13 (Debian 12's)
    # and gloo, freeing the DDP model at exit can deadlock: the main thread
    # holds the GIL while ~ProcessGroupGloo joins a gloo worker thread that
    # waits for the GIL to free a tensor (seen with gdb on rank 1 of
    # torch_ddp_smoke, which then hung until its timeout).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if ok and last < first else 1)


if __name__ == "__main__":
    main()
