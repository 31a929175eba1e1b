"""One rank of the GPU transport comparison, run by run_torch_perf.sh, one
process per rank, all ranks on one GPU (each its own NCCL node through
NCCL_HOSTID), so every byte between ranks crosses the network transport
under test (over loopback).

First PREWARM_BYTES (default 512 MiB, twice the client's failover ring)
of untimed all-reduces of the largest size, so that every configuration is
timed past its buffers' first pass: where a page's first access is dear (a
paravirtualised guest), the ring's first pass slowed an all-reduce several
times over (docs/performance.md, "The spread at 64 MiB").

For each size in SIZES (bytes), WARMUP untimed then ITERS timed float32
all-reduces, each followed by a synchronisation (as a training step waits
for its gradients); rank 0 prints
  RS_PERF config=collnet bytes=16777216 ms=12.3 algbw=1.36 busy=9.8 reducers=2.1 cores=16
(ms per all-reduce, algbw in GB/s counted in float32 bytes; over the timed
all-reduces, the CPUs the whole machine kept busy and those the reducers
used, RS_REDUCER_PIDS, out of `cores`: whether the machine was the bound).
The last result of every size is checked; a wrong element fails the rank.
The ranks share one GPU: the figures compare transports on this machine's
loopback, nothing more.
"""
import os
import sys
import time

import torch
import torch.distributed as dist

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids):
    """(machine busy, the pids' user + system) CPU-seconds so far."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:9]]
    busy = sum(ticks) - ticks[3] - ticks[4]  # all but idle and iowait, as scripts/lib/cpu_time.sh counts
    own = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                after_name = f.read().rsplit(")", 1)[1].split()
            own += int(after_name[11]) + int(after_name[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass  # gone: it counts no more
    return busy / TICKS, own / TICKS


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
    reducer_pids = os.environ.get("RS_REDUCER_PIDS", "").split()
    prewarm = int(os.environ.get("PREWARM_BYTES", 512 << 20))
    largest = max(sizes)
    x = torch.ones(largest // 4, device=device)
    for _ in range(-(-prewarm // largest)):
        dist.all_reduce(x)
    torch.cuda.synchronize()
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
        busy0, reducers0 = cpu_seconds(reducer_pids)
        start = time.perf_counter()
        for _ in range(iters):
            x.copy_(base * (rank + 1))
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            dist.all_reduce(x)
            torch.cuda.synchronize()
            total += time.perf_counter() - t0
        busy1, reducers1 = cpu_seconds(reducer_pids)
        wall = time.perf_counter() - start  # the timed calls and the copies between them
        wrong += int((x != base * (world * (world + 1) / 2)).sum().item())
        ms = total / iters * 1e3
        if rank == 0:
            print(f"RS_PERF config={config} bytes={nbytes} ms={ms:.3f} algbw={nbytes / (ms * 1e-3) / 1e9:.3f}"
                  f" busy={(busy1 - busy0) / wall:.1f} reducers={(reducers1 - reducers0) / wall:.1f}"
                  f" cores={os.cpu_count()}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    if wrong:
        print(f"rank {rank}: {wrong} wrong elements", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
