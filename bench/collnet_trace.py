#!/usr/bin/env python3
"""Where a CollNet communicator's time went, from the plugin's trace.

With REDUCER_COLLNET_TRACE=<dir>, each node head's CollNet communicator writes
<dir>/collnet-<host>-<pid>-<n>.csv when NCCL closes it: one line per iallreduce
call NCCL made, with when NCCL entered iallreduce, when the client had issued
the call, when its first result came back, when it completed and when NCCL's
proxy thread saw it done (test()). This prints, per file:

  - how busy NCCL kept the reducers: the share of the span with no call out
    (NCCL's side was not handing over data: its kernels filling the staging
    buffer, its proxy thread), and how many calls were out on average;
  - each call's stages, median / 90th percentile / max: issuing (the client's
    AllReduce, which NCCL's proxy thread waits for; with failover it copies
    the input, and results may come back before it returns), the wait for
    the first result (every node's first bytes through the reducers) and for
    completion (the whole call through the reducers), both from the call's
    start, and how late test() saw it (NCCL's proxy polling);
  - the bytes per second over the span and while calls were out;
  - the same for each call size apart, where there are several: NCCL's
    chunking gives each user all-reduce size its own (bench/workload_flags.cc,
    --pattern collnet), so a run of several sizes is told apart.

  collnet_trace.py [--brief] DIR_OR_FILE [...]     --brief: one line per call size

Standard library only; exit status 1 when no trace file is found or one
cannot be read.
"""
import argparse
import csv
import glob
import os
import sys

STAGES = (
    ("issue", "call_us", "issued_us", "iallreduce entered -> the client had issued it"),
    ("first result", "call_us", "first_result_us", "iallreduce entered -> its first result bytes in"),
    ("complete", "call_us", "done_us", "iallreduce entered -> every result in"),
    ("seen by test()", "done_us", "seen_us", "complete -> NCCL's test() reported it"),
)


def read_trace(path):
    """(comment lines, rows as dicts of floats / ints; a missing time is None)."""
    comments, lines = [], []
    with open(path, newline="") as f:
        for line in f:
            (comments if line.startswith("#") else lines).append(line)
    rows = []
    for row in csv.DictReader(lines):
        parsed = {}
        for key, value in row.items():
            if key.endswith("_us"):
                parsed[key] = float(value) if value else None
            else:
                parsed[key] = int(value)
        rows.append(parsed)
    return [c[1:].strip() for c in comments], rows


def quantile(values, q):
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def busy(rows):
    """(microseconds with at least one call out, time-weighted mean of calls out
    while any) over [call, seen] of every row."""
    events = []
    for r in rows:
        if r["call_us"] is not None and r["seen_us"] is not None:
            events += [(r["call_us"], 1), (r["seen_us"], -1)]
    events.sort()
    covered = weighted = 0.0
    out, last = 0, None
    for t, delta in events:
        if last is not None and out > 0:
            covered += t - last
            weighted += (t - last) * out
        out += delta
        last = t
    return covered, (weighted / covered if covered > 0 else 0.0)


def figures(rows, indent):
    """The block of figures over `rows` (one comm's calls, or those of one size)."""
    pad = " " * indent
    failed = sum(1 for r in rows if not r["ok"])
    total = sum(r["bytes"] for r in rows)
    start = min(r["call_us"] for r in rows)
    end = max(r["seen_us"] for r in rows)
    span = max(end - start, 1e-9)
    covered, mean_out = busy(rows)
    retried = sum(r["pool_full_before"] for r in rows)
    lines = [f"{pad}calls           {len(rows)} ({failed} failed), {total / 2**20:.1f} MiB, "
             f"{span / 1000:.1f} ms from the first call to the last seen",
             f"{pad}calls out       {mean_out:.1f} on average while any, at most "
             f"{max(r['in_flight'] for r in rows)}; none {100 * (1 - covered / span):.0f} % of the span"
             + (f"; NCCL retried {retried} calls with every request out" if retried else ""),
             f"{pad}bytes           {total / span / 1000:.3f} GB/s over the span, "
             f"{total / max(covered, 1e-9) / 1000:.3f} GB/s while calls were out",
             f"{pad}per call (ms)   median      p90      max"]
    for name, a, b, what in STAGES:
        d = [(r[b] - r[a]) / 1000 for r in rows if r[a] is not None and r[b] is not None]
        if not d:
            lines.append(f"{pad}  {name:<14}  none ({what})")
            continue
        lines.append(f"{pad}  {name:<14}{quantile(d, 0.5):8.3f} {quantile(d, 0.9):8.3f} {max(d):8.3f}   ({what})")
    polls = [r["polls"] for r in rows]
    lines.append(f"{pad}test() calls    {quantile(polls, 0.5)} per call (median), {max(polls)} at most")
    return lines


def brief(rows, label):
    """One line over `rows`: calls out, the idle share, the stages' medians."""
    start = min(r["call_us"] for r in rows)
    span = max(max(r["seen_us"] for r in rows) - start, 1e-9)
    covered, mean_out = busy(rows)

    def median(a, b):
        d = [(r[b] - r[a]) / 1000 for r in rows if r[a] is not None and r[b] is not None]
        return f"{quantile(d, 0.5):.3f}" if d else "-"

    return (f"  {label}: {len(rows)} calls, {mean_out:.1f} out on average (at most "
            f"{max(r['in_flight'] for r in rows)}), none out {100 * (1 - covered / span):.0f} % of the time; "
            f"median ms: issue {median('call_us', 'issued_us')}, first result {median('call_us', 'first_result_us')}, "
            f"complete {median('call_us', 'done_us')}, seen by test() {median('done_us', 'seen_us')} later")


def summarize_brief(path):
    comments, rows = read_trace(path)
    lines = [os.path.basename(path) + (": " + comments[0].split(": ", 1)[-1] if comments else "")]
    if not rows:
        return lines + ["  no calls"]
    for size in sorted({r["bytes"] for r in rows}):
        lines.append(brief([r for r in rows if r["bytes"] == size], f"calls of {size / 1024:g} KiB"))
    return lines


def summarize(path):
    """The file's lines: all its calls, then each call size apart where there
    are several (NCCL's chunking gives each user all-reduce size its own)."""
    comments, rows = read_trace(path)
    lines = [os.path.basename(path) + (": " + comments[0].split(": ", 1)[-1] if comments else "")]
    if not rows:
        return lines + ["  no calls"]
    lines += figures(rows, 2)
    sizes = sorted({r["bytes"] for r in rows})
    if len(sizes) > 1:
        for size in sizes:
            lines.append(f"  calls of {size / 1024:g} KiB:")
            lines += figures([r for r in rows if r["bytes"] == size], 4)
    return lines


def trace_files(targets):
    files = []
    for t in targets:
        files += sorted(glob.glob(os.path.join(t, "collnet-*.csv"))) if os.path.isdir(t) else [t]
    return files


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("paths", nargs="+", help="REDUCER_COLLNET_TRACE directories or trace files")
    ap.add_argument("--brief", action="store_true", help="one line per call size")
    args = ap.parse_args(argv)
    files = trace_files(args.paths)
    if not files:
        print("collnet_trace: no collnet-*.csv in " + ", ".join(args.paths) +
              " (the trace is written when NCCL closes the communicator; a killed process writes none)",
              file=sys.stderr)
        return 1
    status = 0
    for path in files:
        try:
            lines = summarize_brief(path) if args.brief else summarize(path)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"collnet_trace: {path}: cannot read it ({e})", file=sys.stderr)
            status = 1
            continue
        try:
            print("\n".join(lines), flush=True)
        except BrokenPipeError:  # e.g. piped into head
            return status
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
