#!/usr/bin/env python3
"""Side by side: the runs run.sh made under each TCP congestion control.

run.sh with NS_TCP_CC=both (or a list such as 'cubic bbr') and RUNS=N leaves
OUT/<cc>/run<k>/ for every algorithm and repetition. This writes
OUT/results.md: per phase and size, the algbw of ours and of the ring peer
under each algorithm as min - max over the runs, and the two ratios the
targets are stated in (ours under an algorithm against ours under cubic,
and against gloo under the same algorithm), also as min - max over the runs
(run k against run k).

Usage: compare_cc.py OUT
"""
import csv
import os
import sys

from report import human, line_rate_gbps, read_meta  # bench/netns/report.py, beside this file

# (title, our phase, its key column, the peer's phase, the peer's key column)
PAIRS = [
    ("Size sweep (reducer-bench; gloo's ring)", "ours", "bytes", "gloo", "bytes"),
    ("NCCL's CollNet pattern (reducer-bench --pattern collnet; gloo's ring)", "collnet", "bytes", "gloo", "bytes"),
    ("DDP step (reducer-bench --pattern ddp; gloo async per bucket)", "ddp", "bucket_bytes", "gloo_ddp",
     "bucket_bytes"),
    ("PyTorch DDP step (comm hook; DDP's own gloo)", "torch_hook", "bucket_cap_mb", "torch_gloo", "bucket_cap_mb"),
]


def read_rows(path, key):
    try:
        with open(path, newline="") as f:
            return {r[key]: float(r["algbw_GBps"]) for r in csv.DictReader(f)}
    except (OSError, KeyError, ValueError):
        return {}


def runs_of(out, cc):
    folder = os.path.join(out, cc)
    names = sorted((d for d in os.listdir(folder) if d.startswith("run")), key=lambda d: int(d[3:] or 0))
    return [os.path.join(folder, d) for d in names]


def span(values, digits=3):
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    lo, hi = min(values), max(values)
    return f"{lo:.{digits}f}" if f"{lo:.{digits}f}" == f"{hi:.{digits}f}" else f"{lo:.{digits}f} - {hi:.{digits}f}"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    ccs = [d for d in ("cubic", "bbr", "reno") if os.path.isdir(os.path.join(out, d))]
    ccs += sorted(d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d)) and d not in ccs and d != "logs")
    runs = {cc: runs_of(out, cc) for cc in ccs}
    base = ccs[0]
    first = runs[base][0]
    meta = read_meta(first)
    md = [f"# All-reduce under {', '.join(ccs)}: {meta['WORKERS']} workers, {meta['REDUCERS']} reducers, links "
          f"{meta['RATE']}{' + ' + meta['DELAY'] + ' delay' if meta.get('DELAY') else ''}"
          f"{', ' + meta['LOSS'] + ' % random loss at every host' if meta.get('LOSS', '0') not in ('', '0') else ''}",
          "",
          f"Runs: {', '.join(f'{cc} {len(runs[cc])}' for cc in ccs)}, taken in turn (run 1 of each algorithm, then "
          "run 2, ...). Each figure is algbw in GB/s, min - max over the runs; each ratio is run k against run k, "
          "min - max. Each run's own report: `<algorithm>/run<k>/results.md`.", "",
          f"Command of {base} run 1: `{meta.get('COMMAND', '')}`", ""]
    rates = {cc: [line_rate_gbps(r) for r in runs[cc]] for cc in ccs}
    if any(v for vs in rates.values() for v in vs if v):
        md += ["Line rate (iperf3, one stream): " +
               "; ".join(f"{cc} {span(rates[cc])} GB/s" for cc in ccs), ""]
    for title, ours, key, peer, peer_key in PAIRS:
        mine = {cc: [read_rows(os.path.join(r, ours + ".csv"), key) for r in runs[cc]] for cc in ccs}
        theirs = {cc: [read_rows(os.path.join(r, peer + ".csv"), peer_key) for r in runs[cc]] for cc in ccs}
        keys = sorted({k for cc in ccs for rows in mine[cc] for k in rows}, key=float)
        if not keys:
            continue
        has_peer = any(rows for cc in ccs for rows in theirs[cc])  # the peer's phase was run
        head = ["size"] + [f"ours {cc}" for cc in ccs] + ([f"{peer} {cc}" for cc in ccs] if has_peer else [])
        head += [f"ours {cc} / ours {base}" for cc in ccs[1:]]
        head += [f"ours / {peer} ({cc})" for cc in ccs] if has_peer else []
        md += [f"## {title}", "", "| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
        for k in keys:
            size = f"bucket_cap_mb {k}" if key == "bucket_cap_mb" else human(int(float(k)))
            cells = [size]
            cells += [span([rows.get(k) for rows in mine[cc]]) for cc in ccs]
            if has_peer:
                cells += [span([rows.get(k) for rows in theirs[cc]]) for cc in ccs]
            for cc in ccs[1:]:
                pairs = zip(mine[cc], mine[base])
                cells.append(span([a.get(k) / b[k] if a.get(k) and b.get(k) else None for a, b in pairs], 2))
            for cc in ccs if has_peer else []:
                pairs = zip(mine[cc], theirs[cc])
                cells.append(span([a.get(k) / b[k] if a.get(k) and b.get(k) else None for a, b in pairs], 2))
            md.append("| " + " | ".join(cells) + " |")
        md.append("")
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
