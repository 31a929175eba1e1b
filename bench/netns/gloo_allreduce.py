#!/usr/bin/env python3
"""Ring all-reduce peer: torch.distributed with the gloo backend.

One process per rank, like reducer-bench. Times float32 sum all-reduces over
a size sweep and has rank 0 write a CSV with the same columns reducer-bench
uses (bytes,time_us,algbw_GBps,...). The time of a size is the slowest rank's
average, as in reducer-bench. Every result is checked against the exact sum.

--pattern ddp replays reducer-bench's DDP step with the same buckets: the
first bucket --ddp-first-bucket, then --ddp-bucket each, one async all_reduce
per bucket issued after --ddp-gap of (simulated) backward compute, all waited
for at the end of the step, with --ddp-forward of (simulated) forward compute
before it; one CSV line per bucket cap, reducer-bench's columns.
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


def parse_duration_us(text):
    """reducer-bench's durations: 500ms, 2s, 1m; a bare number is seconds."""
    text = text.strip().lower()
    for suffix, scale in (("ms", 1e3), ("us", 1), ("s", 1e6), ("m", 60e6)):
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * scale
    return float(text) * 1e6


def ddp_buckets(model, cap, first, elem):
    """reducer-bench's DdpBuckets: element counts of each bucket."""
    left, out, limit = model // elem, [], max(first // elem, 1)
    while left > 0:
        take = min(left, limit)
        out.append(take)
        left -= take
        limit = max(cap // elem, 1)
    return out


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
    p.add_argument("--pattern", choices=("sweep", "ddp"), default="sweep")
    p.add_argument("--ddp-model", default="100M", help="ddp: gradient bytes per step")
    p.add_argument("--ddp-bucket", default="25M", help="ddp: bucket cap; a comma list gives one line each")
    p.add_argument("--ddp-first-bucket", default="1M", help="ddp: cap of the first bucket")
    p.add_argument("--ddp-gap", default="0", help="ddp: compute before each bucket, e.g. 5ms")
    p.add_argument("--ddp-forward", default="0", help="ddp: forward compute before the first bucket's gap, e.g. 1s")
    a = p.parse_args()

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://" + a.master, world_size=a.world, rank=a.rank,
                            timeout=datetime.timedelta(seconds=a.timeout))
    if a.pattern == "ddp":
        wrong_total, input_bytes = run_ddp(a, torch, dist)
        dist.destroy_process_group()
        summary(a, wrong_total, input_bytes)
        return 0 if wrong_total == 0 else 1
    out = None
    if a.rank == 0 and a.csv:
        out = open(a.csv, "w", newline="")
        w = csv.writer(out)
        w.writerow(["bytes", "count", "dtype", "op", "ranks", "time_us", "algbw_GBps", "busbw_GBps", "wrong"])
    wrong_total = input_bytes = 0
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
        input_bytes += count * 4 * (max(a.warmup, 1) + a.iters)
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
    summary(a, wrong_total, input_bytes)
    return 0 if wrong_total == 0 else 1


def summary(a, wrong_total, input_bytes):
    """reducer-bench's closing lines, which the harness reads."""
    if a.rank == 0:
        print(f"#\n# Wrong elements : {wrong_total} {'OK' if wrong_total == 0 else 'FAILED'}")
        print(f"# Input bytes    : {input_bytes} per rank (all operations, warm-up included)", flush=True)


def run_ddp(a, torch, dist):
    """One DDP step per iteration; returns the wrong elements of all ranks and this rank's input bytes."""
    model, first = parse_size(a.ddp_model), parse_size(a.ddp_first_bucket)
    gap_s = parse_duration_us(a.ddp_gap) / 1e6
    forward_s = parse_duration_us(a.ddp_forward) / 1e6
    flat = torch.empty(model // 4, dtype=torch.float32)
    expected = a.world * (a.world + 1) / 2  # rank r contributes r + 1: exact in float32
    out = w = None
    if a.rank == 0 and a.csv:
        out = open(a.csv, "w", newline="")
        w = csv.writer(out)
        w.writerow(["model_bytes", "bucket_bytes", "first_bucket_bytes", "buckets", "gap_us", "dtype", "op", "ranks",
                    "step_us", "compute_us", "exposed_us", "algbw_GBps", "wrong", "forward_us"])
    if a.rank == 0:
        print(f"# ddp: {model} bytes per step, first bucket {first}, gap {gap_s * 1e6:.0f} us,"
              f" forward {forward_s * 1e6:.0f} us", flush=True)
        print(f"#{'model':>14} {'bucket':>12} {'buckets':>8} {'step(us)':>12} {'compute':>12} {'exposed':>12}"
              f" {'algbw':>10} {'wrong':>6}", flush=True)
    wrong_total = input_bytes = 0
    for cap in [parse_size(x) for x in a.ddp_bucket.split(",")]:
        counts = ddp_buckets(model, cap, first, 4)
        views, offset = [], 0
        for n in counts:
            views.append(flat[offset:offset + n])
            offset += n

        def step():
            start = time.perf_counter() + forward_s
            if forward_s > 0:
                time.sleep(forward_s)  # the forward pass: nothing on the wire
            works = []
            for b, view in enumerate(views):
                if gap_s > 0:
                    delay = start + gap_s * (b + 1) - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
                works.append(dist.all_reduce(view, async_op=True))
            for work in works:
                work.wait()

        flat.fill_(float(a.rank + 1))
        step()  # the first warm-up step is the checked one
        wrong = int((flat != expected).sum().item())
        # Zeros from here on: the sums stay exact (and finite) however many steps run.
        flat.zero_()
        for _ in range(a.warmup - 1):
            step()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(a.iters):
            step()
        elapsed = torch.tensor([(time.perf_counter() - start) / a.iters * 1e6], dtype=torch.float64)
        wrong += int((flat != 0).sum().item())
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        total = torch.tensor([wrong], dtype=torch.int64)
        dist.all_reduce(total)
        wrong_total += int(total.item())
        input_bytes += offset * 4 * (max(a.warmup, 1) + a.iters)
        step_us = float(elapsed.item())
        compute_us = (forward_s + gap_s * len(counts)) * 1e6
        exposed_us = max(0.0, step_us - compute_us)
        algbw = offset * 4 / step_us / 1e3
        if a.rank == 0:
            print(f" {offset * 4:>14} {cap:>12} {len(counts):>8} {step_us:>12.1f} {compute_us:>12.1f} {exposed_us:>12.1f}"
                  f" {algbw:>10.3f} {int(total.item()):>6}", flush=True)
            if w:
                w.writerow([offset * 4, cap, counts[0] * 4, len(counts), f"{gap_s * 1e6:.0f}", "float32", "sum",
                            a.world, f"{step_us:.1f}", f"{compute_us:.1f}", f"{exposed_us:.1f}", f"{algbw:.6f}",
                            int(total.item()), f"{forward_s * 1e6:.0f}"])
                out.flush()
    if out:
        out.close()
    return wrong_total, input_bytes


if __name__ == "__main__":
    sys.exit(main())
