#!/usr/bin/env python3
"""Ring all-reduce peer: torch.distributed with the gloo backend.

One process per rank, like reducer-bench. Times float32 sum all-reduces over
a size sweep and has rank 0 write a CSV with the same columns reducer-bench
uses (bytes,time_us,algbw_GBps,...). The time of a size is the slowest rank's
average, as in reducer-bench. Every result is checked against the exact sum.
"""
import argparse
import csv
import datetime
import sys
import time


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B").rstrip("I")
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


def sizes(lo, hi, factor):
    out, size = [], lo
    while size <= hi:
        out.append(size)
        size *= factor
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--master", required=True, help="HOST:PORT of rank 0's rendezvous store")
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("-b", "--min-bytes", default="4K")
    p.add_argument("-e", "--max-bytes", default="64M")
    p.add_argument("-f", "--step-factor", type=int, default=2)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup", type=int, default=5)
    p.add_argument("--timeout", type=float, default=120, help="seconds for joining and for each collective")
    p.add_argument("--csv", default="")
    a = p.parse_args()

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://" + a.master, world_size=a.world, rank=a.rank,
                            timeout=datetime.timedelta(seconds=a.timeout))
    out = None
    if a.rank == 0 and a.csv:
        out = open(a.csv, "w", newline="")
        w = csv.writer(out)
        w.writerow(["bytes", "count", "dtype", "op", "ranks", "time_us", "algbw_GBps", "busbw_GBps", "wrong"])
    wrong_total = 0
    expected_sum = a.world * (a.world + 1) / 2  # rank r contributes r + 1: exact in float32
    for size in sizes(parse_size(a.min_bytes), parse_size(a.max_bytes), a.step_factor):
        count = size // 4
        if count == 0:
            continue
        t = torch.full((count,), float(a.rank + 1), dtype=torch.float32)
        for _ in range(max(a.warmup, 1)):
            t.fill_(float(a.rank + 1))
            dist.all_reduce(t)
        wrong = int((t != expected_sum).sum().item())
        dist.barrier()
        start = time.perf_counter()
        for _ in range(a.iters):
            dist.all_reduce(t)  # values grow, which does not change the time
        elapsed = torch.tensor([(time.perf_counter() - start) / a.iters * 1e6], dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        counts = torch.tensor([wrong], dtype=torch.int64)
        dist.all_reduce(counts)
        wrong_total += int(counts.item())
        time_us = float(elapsed.item())
        algbw = count * 4 / time_us / 1e3
        busbw = algbw * 2 * (a.world - 1) / a.world
        if a.rank == 0:
            print(f"{count * 4:>14} {count:>12} float32 sum {time_us:>11.1f} {algbw:>10.3f} {busbw:>10.3f} {counts.item():>6}",
                  flush=True)
            if out:
                w.writerow([count * 4, count, "float32", "sum", a.world, f"{time_us:.1f}", f"{algbw:.6f}",
                            f"{busbw:.6f}", int(counts.item())])
                out.flush()
    dist.destroy_process_group()
    if out:
        out.close()
    return 0 if wrong_total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
