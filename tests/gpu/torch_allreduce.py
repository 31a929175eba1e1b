"""One rank of the GPU check, run by run_torch_allreduce.sh, one process per
rank, all ranks on one GPU (each its own NCCL "node" through NCCL_HOSTID).

1. broadcast and all_gather: NCCL's rings, so the plugin's point-to-point
   transport under real NCCL (rings connect lazily: an all-reduce through
   CollNet alone would never use it);
2. all-reduces from MIN_BYTES (4 KiB) to MAX_BYTES (64 MiB) in float32 and
   bfloat16, every element checked; NCCL picks the algorithm itself (no
   NCCL_ALGO: the plugin's tuner decides between the reducers and NCCL's own);
3. destroy_process_group(), a new process group, all-reduces again: the
   plugin must still be in use (NCCL_NET_PLUGIN_REF_COUNT=1).

Every rank prints one machine-readable line per check, which run_all.sh's
summary adds up over the ranks:
  RS_CHECK rank=0 group=1 op=all_reduce dtype=float32 bytes=4096 wrong=0
Rank 0 also prints a readable line per check as it goes (the last one shows
where a run that timed out was). Ranks time-sliced on one GPU give no
meaningful timings: none are printed.
"""
import os
import sys

import torch
import torch.distributed as dist


def pattern(n, device):
    return (torch.arange(n, device=device) % 7 + 1).to(torch.float32)


def report(rank, group, op, dtype, nbytes, wrong):
    name = str(dtype).replace("torch.", "")
    print(f"RS_CHECK rank={rank} group={group} op={op} dtype={name} bytes={nbytes} wrong={wrong}", flush=True)
    if rank == 0:
        print(f"group {group}: {op:<10} {nbytes:>11} B {name:>9}  wrong {wrong}", flush=True)


def check_p2p(rank, world, device):
    """broadcast from every root and an all_gather; returns wrong elements."""
    n = (1 << 20) + 3  # odd size, several chunks
    wrong_bcast = 0
    for root in range(world):
        x = pattern(n, device) * (root + 1) if rank == root else torch.zeros(n, device=device)
        dist.broadcast(x, src=root)
        wrong_bcast += int((x != pattern(n, device) * (root + 1)).sum().item())
    report(rank, 1, "broadcast", torch.float32, n * 4, wrong_bcast)
    mine = pattern(4099, device) * (rank + 1)
    parts = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(parts, mine)
    wrong_gather = sum(int((part != pattern(4099, device) * (r + 1)).sum().item()) for r, part in enumerate(parts))
    report(rank, 1, "all_gather", torch.float32, 4099 * 4, wrong_gather)
    return wrong_bcast + wrong_gather


def check_allreduce(rank, world, device, sizes, group):
    """all-reduces of every size in float32 and bfloat16; returns wrong elements."""
    wrong_total = 0
    for dtype in (torch.float32, torch.bfloat16):
        for size in sizes:
            n = size // torch.tensor([], dtype=dtype).element_size()
            # Rank r contributes (r + 1) * (i % 7 + 1): small integers, so the
            # sum is exact in bfloat16 too and any wrong element shows.
            want = (pattern(n, device) * (world * (world + 1) / 2)).to(dtype)
            wrong = 0
            for _ in range(3):
                x = (pattern(n, device) * (rank + 1)).to(dtype)
                dist.all_reduce(x)
                wrong += int((x != want).sum().item())
            torch.cuda.synchronize()
            wrong_total += wrong
            report(rank, group, "all_reduce", dtype, size, wrong)
    return wrong_total


def sizes_between(lo, hi):
    out = []
    size = lo
    while size <= hi:
        out.append(size)
        size *= 4
    return out


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    addr = os.environ["MASTER_ADDR"]
    ports = (int(os.environ["MASTER_PORT"]), int(os.environ["MASTER_PORT2"]))
    sizes = sizes_between(int(os.environ.get("MIN_BYTES", 4096)), int(os.environ.get("MAX_BYTES", 64 << 20)))
    torch.cuda.set_device(0)
    device = torch.device("cuda", 0)

    failures = 0
    dist.init_process_group("nccl", init_method=f"tcp://{addr}:{ports[0]}", rank=rank, world_size=world)
    failures += check_p2p(rank, world, device)
    failures += check_allreduce(rank, world, device, sizes, 1)
    dist.barrier()
    dist.destroy_process_group()

    # A new process group in the same process: NCCL creates its communicator
    # after the first one was destroyed (the case NCCL 2.28.9 loses the
    # plugin in without NCCL_NET_PLUGIN_REF_COUNT=1).
    dist.init_process_group("nccl", init_method=f"tcp://{addr}:{ports[1]}", rank=rank, world_size=world)
    failures += check_allreduce(rank, world, device, [s for s in (4096, 1 << 20, 64 << 20) if s <= sizes[-1]], 2)
    dist.barrier()
    dist.destroy_process_group()

    if failures:
        print(f"rank {rank}: {failures} wrong elements", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
