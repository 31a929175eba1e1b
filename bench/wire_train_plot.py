#!/usr/bin/env python3
"""Draws the loss curves of bench/wire_train.sh's runs (rank 0's JSON lines,
one file per wire type) into one PNG, and prints each run's final loss and
how far the curves drift apart. Needs matplotlib (Debian: python3-matplotlib)."""
import argparse
import json
import os
import sys


def load(path):
    steps, losses, summary = [], [], None
    with open(path) as f:
        for line in f:
            ev = json.loads(line)
            if ev.get("event") == "step":
                steps.append(ev["step"])
                losses.append(ev["loss"])
            elif ev.get("event") == "summary":
                summary = ev
    return steps, losses, summary


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dir", default=os.path.join(here, "results", "wire-bf16-numerics-training"),
                    help="folder with train-<wire>.jsonl (default: %(default)s)")
    ap.add_argument("--wires", default="off,bfloat16", help="comma list, the first is the reference")
    ap.add_argument("--out", default=None, help="PNG to write (default: DIR/loss.png)")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("wire_train_plot.py: needs matplotlib (apt-get install python3-matplotlib, "
                 "then run it with /usr/bin/python3)")

    runs = {w: load(os.path.join(args.dir, f"train-{w}.jsonl")) for w in args.wires.split(",")}
    ref_wire = args.wires.split(",")[0]
    ref = dict(zip(runs[ref_wire][0], runs[ref_wire][1]))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1.3]})
    for wire, (steps, losses, summary) in runs.items():
        label = "float32 (wire off)" if wire == "off" else f"wire {wire}"
        top.plot(steps, losses, label=label, linewidth=1.2, alpha=0.85)
        drift = [(l - ref[s]) / ref[s] for s, l in zip(steps, losses) if s in ref]
        if wire != ref_wire:
            bottom.plot(steps, drift, label=f"{wire} vs {ref_wire}", linewidth=1.0)
        print(f"{wire}: final loss {losses[-1]:.6f} (step {steps[-1]}), first {losses[0]:.6f}, "
              f"verified {summary.get('verified') if summary else 'n/a'}, "
              f"largest relative gap to {ref_wire} {max(map(abs, drift)):.2e}")
    top.set_yscale("log")
    top.set_ylabel("training loss (rank 0)")
    top.legend()
    top.grid(True, which="both", alpha=0.3)
    top.set_title("rs-train, 4 ranks x 2 reducers, seed 1: float32 gradients on the wire vs bfloat16")
    bottom.set_xlabel("step")
    bottom.set_ylabel("relative loss gap")
    bottom.axhline(0, color="grey", linewidth=0.6)
    bottom.legend()
    bottom.grid(True, alpha=0.3)
    fig.tight_layout()
    out = args.out or os.path.join(args.dir, "loss.png")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
