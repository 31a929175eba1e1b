"""One rank of the GPU model checks, run by run_torch_model.sh, one process
per rank, all ranks on one GPU (each its own NCCL node through NCCL_HOSTID).

  torch_model.py ddp|fsdp

One training step of a real model, unmodified: torchvision's ResNet-18 with
random weights (weights=None: nothing is downloaded), wrapped in PyTorch's
DistributedDataParallel (ddp) or FullyShardedDataParallel (fsdp: FSDP1, one
unit per BasicBlock and one for the rest, full sharding), plain SGD (no
momentum, no weight decay), cross-entropy on random images and labels, then
the loss all-reduced as training loops do for their logs. The transport is
whatever the environment chose (run_torch_model.sh: NCCL's own sockets, or
the plugin through LD_PRELOAD); nothing here knows which.

Every rank starts from the same weights (seed 0) and takes its own batch
(seed 1000 + rank), so the gradients differ between ranks and their mean is
a real reduction. Before the step, each rank also runs the same batch
through an unwrapped copy of the model: its own gradients and loss, before
any communication, which model_compare.py needs to bound the rounding of
the sum. Local compute is made deterministic (cuDNN deterministic, no TF32,
deterministic algorithms where PyTorch has them), so that two runs through
the same transport can be compared bit for bit.

Writes to MODEL_OUT (a folder):
  rank<R>.pt  every rank: {"local": {name: its own gradient}, "loss": its
              own loss}
  result.pt   rank 0: {"reduced": {name: the mean gradient after the step,
              "loss": the all-reduced mean loss}, "params": {name: the
              parameter after the step}, "lr", "world", "wrap"}
and prints one line per rank that run_torch_model.sh compares across ranks
(DDP and FSDP leave every rank with the same parameters):
  RS_MODEL rank=0 wrap=ddp loss=<its loss, hex> mean_loss=<hex> params=<sha256 prefix> grads=<sha256 prefix>
With FSDP, the full parameters and gradients come from summon_full_params
(all-gathers, exact copies).
"""
import copy
import hashlib
import os
import sys

# Before CUDA starts: cuBLAS is deterministic only with a fixed workspace.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

LR = 0.1


def digest(tensors):
    """sha256 prefix over the tensors' names and bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        h.update(name.encode())
        h.update(tensors[name].detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def clean(name):
    return name.replace("_fsdp_wrapped_module.", "")


def main():
    wrap = sys.argv[1] if len(sys.argv) > 1 else ""
    if wrap not in ("ddp", "fsdp"):
        print("usage: torch_model.py ddp|fsdp", file=sys.stderr)
        sys.exit(64)
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    out = os.environ["MODEL_OUT"]
    batch = int(os.environ.get("BATCH", 8))
    size = int(os.environ.get("IMAGE", 112))

    import torchvision

    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    # warn_only: an op without a deterministic kernel warns instead of
    # failing; the bit-for-bit comparison of two runs is what decides.
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.cuda.set_device(0)
    device = torch.device("cuda", 0)

    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).to(device)
    gen = torch.Generator().manual_seed(1000 + rank)
    images = torch.randn(batch, 3, size, size, generator=gen).to(device)
    labels = torch.randint(0, 1000, (batch,), generator=gen).to(device)

    # This rank's own gradients, before any communication.
    alone = copy.deepcopy(model)
    own_loss = F.cross_entropy(alone(images), labels)
    own_loss.backward()
    local = {n: p.grad.detach().cpu().clone() for n, p in alone.named_parameters()}
    own_loss = own_loss.detach().cpu().reshape(1)
    del alone
    torch.save({"local": local, "loss": own_loss}, os.path.join(out, f"rank{rank}.pt"))

    dist.init_process_group("nccl", init_method=f"tcp://{addr}:{port}", rank=rank, world_size=world,
                            device_id=device)
    if wrap == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        net = DDP(model, device_ids=[0])
    else:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        from torchvision.models.resnet import BasicBlock

        net = FSDP(model, device_id=device, use_orig_params=True,
                   auto_wrap_policy=ModuleWrapPolicy({BasicBlock}))
    opt = torch.optim.SGD(net.parameters(), lr=LR)

    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(net(images), labels)
    loss.backward()
    opt.step()
    mean_loss = loss.detach().clone().reshape(1)
    dist.all_reduce(mean_loss)  # what a training loop logs
    mean_loss /= world
    torch.cuda.synchronize()

    if wrap == "ddp":
        named = list(net.module.named_parameters())
        params = {n: p.detach().cpu().clone() for n, p in named}
        grads = {n: p.grad.detach().cpu().clone() for n, p in named}
    else:
        with FSDP.summon_full_params(net, with_grads=True):
            named = [(clean(n), p) for n, p in net.named_parameters()]
            params = {n: p.detach().cpu().clone() for n, p in named}
            grads = {n: p.grad.detach().cpu().clone() for n, p in named}
    missing = sorted(set(local) ^ set(grads))
    if missing:
        print(f"rank {rank}: the wrapped model's parameters are not the model's: {missing[:5]}", file=sys.stderr)
        sys.exit(1)
    if rank == 0:
        reduced = dict(grads)
        reduced["loss"] = mean_loss.cpu()
        # lr and world as tensors: the loader takes tensors and containers only.
        torch.save({"reduced": reduced, "params": params, "lr": torch.tensor(LR, dtype=torch.float64),
                    "world": torch.tensor(world), "wrap": wrap},
                   os.path.join(out, "result.pt"))
    print(f"RS_MODEL rank={rank} wrap={wrap} loss={float(loss.item()).hex()} "
          f"mean_loss={float(mean_loss.item()).hex()} params={digest(params)} grads={digest(grads)}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
