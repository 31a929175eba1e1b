"""One rank of the GPU transport comparison, run by run_torch_perf.sh, one
process per rank, all ranks on one GPU (each its own NCCL node through
NCCL_HOSTID), so every byte between ranks crosses the network transport
under test (over loopback).

For each size in SIZES (bytes), WARMUP untimed then ITERS timed float32
all-reduces, each followed by a synchronisation (as a training step waits
for its gradients); rank 0 prints
  RS_PERF config=collnet bytes=16777216 ms=12.3 algbw=1.36
(ms per all-reduce, algbw in GB/s counted in float32 bytes). The last
result of every size is checked; a wrong element fails the rank.
The ranks share one GPU: the figures compare transports on this machine's
loopback, nothing more.
"""
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    config = os.environ.get("PERF_CONFIG", "?")
    sizes = [int(s) for s in os.environ.get("SIZES", "1048576 16777216 67108864").split()]
    iters, warmup = int(os.environ.get("ITERS", 20)), int(os.environ.get("WARMUP", 5))
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    torch.cuda.set_device(0)
    device = torch.device("cuda", 0)
    dist.init_process_group("nccl", init_method=f"tcp://{addr}:{port}", rank=rank, world_size=world,
                            device_id=device)
    wrong = 0
    for nbytes in sizes:
        n = nbytes // 4
        base = (torch.arange(n, device=device) % 7 + 1).to(torch.float32)
        x = base * (rank + 1)
        for _ in range(warmup):
            x.copy_(base * (rank + 1))
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        total = 0.0
        for _ in range(iters):
            x.copy_(base * (rank + 1))
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            dist.all_reduce(x)
            torch.cuda.synchronize()
            total += time.perf_counter() - t0
        wrong += int((x != base * (world * (world + 1) / 2)).sum().item())
        ms = total / iters * 1e3
        if rank == 0:
            print(f"RS_PERF config={config} bytes={nbytes} ms={ms:.3f} algbw={nbytes / (ms * 1e-3) / 1e9:.3f}",
                  flush=True)
    dist.barrier()
    dist.destroy_process_group()
    if wrong:
        print(f"rank {rank}: {wrong} wrong elements", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
