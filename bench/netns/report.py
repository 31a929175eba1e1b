#!/usr/bin/env python3
"""Turns one harness run's raw files into results.md and algbw.png.

Reads, from the results folder: meta.env (KEY=VALUE), iperf.json (iperf3 -J),
ours.csv (reducer-bench --csv), gloo.csv (gloo_allreduce.py --csv) and
cpu.csv (phase,process,cpu_s,wall_s). Any of the last four may be missing;
what is missing shows as "n/a".
"""
import csv
import json
import os
import sys


def read_meta(folder):
    meta = {}
    with open(os.path.join(folder, "meta.env")) as f:
        for line in f:
            if "=" in line:
                k, v = line.strip().split("=", 1)
                meta[k] = v
    return meta


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def line_rate_gbps(folder):
    """iperf3's receiver rate in GB/s (bytes), or None."""
    try:
        with open(os.path.join(folder, "iperf.json")) as f:
            data = json.load(f)
        return data["end"]["sum_received"]["bits_per_second"] / 8e9
    except (OSError, KeyError, ValueError):
        return None


def human(nbytes):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= div and nbytes % div == 0:
            return f"{nbytes // div} {unit}"
    return f"{nbytes} B"


def fmt(x, digits=3):
    return "n/a" if x is None else f"{x:.{digits}f}"


def by_size(rows):
    return {int(r["bytes"]): r for r in rows}


def bandwidth_table(meta, ours, gloo, line):
    w = int(meta["WORKERS"])
    ring = line * w / (2 * (w - 1)) if line and w > 1 else None
    out = ["| size | ours time (us) | ours algbw (GB/s) | gloo time (us) | gloo algbw (GB/s) | ours/gloo"
           " | ours/line rate | ring bound (GB/s) | reducer bound (GB/s) |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for size in sorted(set(ours) | set(gloo)):
        o, g = ours.get(size), gloo.get(size)
        oa = float(o["algbw_GBps"]) if o else None
        ga = float(g["algbw_GBps"]) if g else None
        ot = float(o["time_us"]) if o else None
        gt = float(g["time_us"]) if g else None
        ratio = oa / ga if oa and ga else None
        of_line = oa / line if oa and line else None
        out.append(f"| {human(size)} | {fmt(ot, 1)} | {fmt(oa)} | {fmt(gt, 1)} | {fmt(ga)} | {fmt(ratio, 2)}"
                   f" | {fmt(of_line, 2)} | {fmt(ring)} | {fmt(line)} |")
    return out


def cpu_table(rows):
    out = ["| phase | process | CPU s | wall s | CPU % of one core |", "|---|---|---:|---:|---:|"]
    reducer_cpu = 0.0
    for r in rows:
        cpu, wall = float(r["cpu_s"]), float(r["wall_s"])
        pct = 100 * cpu / wall if wall > 0 else 0
        out.append(f"| {r['phase']} | {r['process']} | {cpu:.2f} | {wall:.2f} | {pct:.0f} |")
        if r["phase"] == "ours" and r["process"].startswith("reducerd") and "waiting" not in r["process"]:
            reducer_cpu += cpu
    return out, reducer_cpu


def plot(folder, meta, ours, gloo, line):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib is not installed (apt-get install python3-matplotlib); no plot", file=sys.stderr)
        return False
    w = int(meta["WORKERS"])
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, rows, style in (("reducers (ours)", ours, "o-"), ("ring (torch gloo)", gloo, "s-")):
        sizes = sorted(rows)
        if sizes:
            ax.plot(sizes, [float(rows[s]["algbw_GBps"]) for s in sizes], style, label=name)
    if line:
        ax.axhline(line, color="green", linestyle="--", label=f"reducer bound B = {line:.3f} GB/s (iperf3)")
        if w > 1:
            ring = line * w / (2 * (w - 1))
            ax.axhline(ring, color="red", linestyle=":", label=f"ring bound B n/(2(n-1)) = {ring:.3f} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("algbw = size / time (GB/s)")
    ax.set_title(f"all-reduce, {w} workers, {meta['REDUCERS']} reducers, links {meta['RATE']}"
                 f"{', delay ' + meta['DELAY'] if meta.get('DELAY') else ''}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "algbw.png"), dpi=100)
    return True


def main():
    folder = sys.argv[1]
    meta = read_meta(folder)
    ours = by_size(read_csv(os.path.join(folder, "ours.csv")))
    gloo = by_size(read_csv(os.path.join(folder, "gloo.csv")))
    line = line_rate_gbps(folder)
    ours_bytes = int(meta.get("OURS_INPUT_BYTES", "0"))
    cpu_lines, reducer_cpu = cpu_table(read_csv(os.path.join(folder, "cpu.csv")))
    md = [f"# All-reduce: {meta['WORKERS']} workers, {meta['REDUCERS']} reducers, links {meta['RATE']}"
          f"{' + ' + meta['DELAY'] + ' delay' if meta.get('DELAY') else ''}", "",
          f"Command: `{meta.get('COMMAND', '')}`", "",
          f"Measured line rate (iperf3, 1 TCP stream, {meta.get('IPERF_SECONDS', '?')} s): "
          f"{fmt(line)} GB/s = {fmt(line * 8 if line else None, 2)} Gbit/s", "",
          f"Ours: reducer-bench, float32 sum, {meta.get('OURS_FLAGS', '')}. Peer: torch {meta.get('TORCH', '?')} "
          "gloo all_reduce (ring), float32 sum. Time per size: the slowest rank's average over the timed iterations.",
          "algbw = size / time. Bounds use the measured line rate B.", ""]
    md += bandwidth_table(meta, ours, gloo, line)
    md += ["", "CPU per process (utime + stime from /proc, over the phase; the machine has "
           f"{meta.get('CORES', '?')} cores; machine-wide busy share in the `all` rows):", ""]
    md += cpu_lines
    if reducer_cpu > 0 and ours_bytes:
        md += ["", f"Reducer cost: {ours_bytes / 1e9:.2f} GB of worker contributions reduced in {reducer_cpu:.2f} "
               f"CPU-seconds of reducerd = {ours_bytes / reducer_cpu / 1e9:.3f} GB reduced per CPU-second "
               "(each byte received over TCP, summed in rank order, the result sent back to every worker)."]
    if plot(folder, meta, ours, gloo, line):
        md += ["", "![algbw](algbw.png)"]
    with open(os.path.join(folder, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
