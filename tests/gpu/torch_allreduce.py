"""One rank of the GPU check: all-reduces tensors from 4 KiB to 256 MiB in
float32 and bfloat16 through NCCL (and so through the reducer plugin's
CollNet when NCCL picks it), checks every element and prints one line per
size. Run by run_torch_allreduce.sh, one process per rank, all on one GPU.
"""
import os
import sys
import time

import torch
import torch.distributed as dist


def expected(n, world, dtype, device):
    # Rank r contributes (r + 1) * (i % 7 + 1): small integers, so the sum is
    # exact in bfloat16 too and any wrong element shows.
    pattern = (torch.arange(n, device=device) % 7 + 1).to(torch.float32)
    return (pattern * (world * (world + 1) / 2)).to(dtype)


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    device = torch.device("cuda", 0)
    min_bytes = int(os.environ.get("MIN_BYTES", 4096))
    max_bytes = int(os.environ.get("MAX_BYTES", 256 << 20))
    iters = int(os.environ.get("ITERS", 5))
    failures = 0
    for dtype in (torch.float32, torch.bfloat16):
        size = min_bytes
        while size <= max_bytes:
            n = size // torch.tensor([], dtype=dtype).element_size()
            pattern = (torch.arange(n, device=device) % 7 + 1).to(torch.float32)
            want = expected(n, world, dtype, device)
            x = (pattern * (rank + 1)).to(dtype)
            dist.all_reduce(x)  # warm-up and check
            torch.cuda.synchronize()
            wrong = int((x != want).sum().item())
            start = time.perf_counter()
            for _ in range(iters):
                x = (pattern * (rank + 1)).to(dtype)
                dist.all_reduce(x)
            torch.cuda.synchronize()
            elapsed = (time.perf_counter() - start) / iters
            wrong += int((x != want).sum().item())
            failures += wrong
            if rank == 0:
                print(f"{size:>12} B {str(dtype):>15} {elapsed * 1e6:>10.1f} us "
                      f"algbw {size / elapsed / 1e9:7.3f} GB/s  wrong {wrong}", flush=True)
            size *= 2
    dist.barrier()
    dist.destroy_process_group()
    if failures:
        print(f"rank {rank}: {failures} wrong elements", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
