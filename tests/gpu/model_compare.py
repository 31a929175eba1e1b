"""Compares two runs of torch_model.py (run_torch_model.sh), on the CPU.

  model_compare.py REF RUN           within the tolerance below
  model_compare.py --exact REF RUN   bit for bit

REF and RUN are the MODEL_OUT folders of two runs of the same model and
step: result.pt (rank 0's mean gradients and all-reduced loss, the
parameters after the step) and rank<R>.pt (each rank's own gradients and
loss, before any communication). Prints what it compared and a last line
"verdict: ..."; exits 0 when the runs agree, 1 when not, 2 when a file is
missing or unreadable.

The tolerance. The two runs differ only in the transport: the same weights,
batches and deterministic kernels give every rank the same own gradients
g_r in both (this script says whether they were bit for bit). What differs
is how the W ranks' float32 values are summed. NCCL's ring (or tree) adds
them in an order that depends on the chunk's position in the ring, the
reducers add them in rank order, both in float32; neither is wrong, and the
results need not be equal bit for bit. For any order, a float32 sum of W
terms x_r is off the exact sum by at most gamma(W-1) * sum(|x_r|), where
gamma(k) = k*u / (1 - k*u) and u = 2^-24 (Higham, "Accuracy and Stability of
Numerical Algorithms", 2nd ed., section 4.2), so two orders differ by at most
twice that. Here each reduced value is a mean: DDP divides each gradient by
W before the sum, FSDP by factors of W before and after, the loss is divided
after; a division that rounds adds at most u * |mean| to each run. So, per
element, with A = sum over ranks of |own value| / W:

  |ref - run| <= 2 * (2 * gamma(W-1) * A) + 2 * u * |ref|

the reordering bound doubled, as margin for one or two ulps of local
difference should a kernel not be bit-for-bit repeatable (the script then
says so), and the rounding of the division for both runs. For W = 4 that is
about 7.2e-7 * A: an element that cancels (A large, the mean small) may
differ in most of its digits and still be right, while one rank's value
missing, doubled, stale or put in the wrong place changes the element by
about |x_r| ~ A, a million times the tolerance.

Parameters after the step, p = p0 - lr * mean gradient (plain SGD): the
gradient's bound times lr, plus the update's own rounding in each run (the
product and the sum, at most u each, relative to |lr * g| and |p|):

  |ref - run| <= lr * (gradient bound) + 4 * u * (|p_ref| + lr * |g_ref|)

Non-finite values fail either way.
"""
import math
import os
import sys

import torch

U = 2.0 ** -24  # float32's unit roundoff


def gamma(k):
    return k * U / (1 - k * U)


def load(folder, name):
    path = os.path.join(folder, name)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # missing, truncated, not ours
        print(f"verdict: cannot read {path}: {type(e).__name__}: {e}")
        sys.exit(2)


def load_run(folder):
    result = load(folder, "result.pt")
    world = int(result["world"])
    ranks = [load(folder, f"rank{r}.pt") for r in range(world)]
    return result, ranks


def own_values(ranks, name):
    """Every rank's own value of a reduced entry, before communication."""
    return [rank["loss"] if name == "loss" else rank["local"][name] for rank in ranks]


def same_names(a, b, what):
    if set(a) != set(b):
        only = sorted(set(a) ^ set(b))
        print(f"verdict: the runs' {what} differ in their names: {only[:5]}")
        sys.exit(1)


def exact(ref_dir, run_dir):
    ref, ref_ranks = load_run(ref_dir)
    run, run_ranks = load_run(run_dir)
    if len(ref_ranks) != len(run_ranks):
        print(f"verdict: {len(ref_ranks)} ranks against {len(run_ranks)}")
        return 1
    pairs = [("mean gradients and loss", ref["reduced"], run["reduced"]), ("parameters", ref["params"], run["params"])]
    for r, (a, b) in enumerate(zip(ref_ranks, run_ranks)):
        pairs.append((f"rank {r}'s own gradients and loss", {**a["local"], "loss": a["loss"]},
                      {**b["local"], "loss": b["loss"]}))
    bad = []
    for what, a, b in pairs:
        same_names(a, b, what)
        differ = []
        for n in sorted(a):
            if a[n].dtype != b[n].dtype or a[n].shape != b[n].shape:
                differ.append(f"{n} (dtype or shape)")
            elif not torch.equal(a[n], b[n]):
                differ.append(f"{n} ({int((a[n] != b[n]).sum().item())} of {a[n].numel()} elements)")
        elements = sum(t.numel() for t in a.values())
        if differ:
            listed = ", ".join(differ[:3])
            print(f"{what}: {len(differ)} of {len(a)} tensors differ: {listed}")
            bad.append(what)
        else:
            print(f"{what}: {len(a)} tensors, {elements} elements, bit for bit the same")
    if bad:
        print(f"verdict: not bit for bit the same: {'; '.join(bad)}")
        return 1
    print("verdict: bit for bit the same")
    return 0


def within(ref_dir, run_dir):
    ref, ref_ranks = load_run(ref_dir)
    run, run_ranks = load_run(run_dir)
    world = len(ref_ranks)
    if world != len(run_ranks) or world < 1:
        print(f"verdict: {world} ranks against {len(run_ranks)}")
        return 1
    same_names(ref["reduced"], run["reduced"], "mean gradients")
    same_names(ref["params"], run["params"], "parameters")
    lr = float(ref["lr"])
    g_factor = 2 * 2 * gamma(world - 1)

    # Did the ranks compute the same own values in both runs?
    local_same = all(torch.equal(a["loss"], b["loss"]) and
                     all(torch.equal(a["local"][n], b["local"][n]) for n in a["local"])
                     for a, b in zip(ref_ranks, run_ranks))

    failures = []
    grad_bounds = {}

    def check(what, name, a, b, bound):
        """One tensor; returns (elements, differing, max |diff|, max ratio)."""
        a64, b64 = a.double(), b.double()
        if not (torch.isfinite(a64).all() and torch.isfinite(b64).all()):
            failures.append(f"{what} {name}: not finite")
            return a.numel(), a.numel(), math.inf, math.inf
        diff = (a64 - b64).abs()
        over = diff > bound
        ratio = diff / bound.clamp_min(1e-300)
        ratio[(bound == 0) & (diff == 0)] = 0.0
        ratio[(bound == 0) & (diff > 0)] = math.inf
        if over.any():
            i = int(torch.argmax(ratio.flatten()).item())
            failures.append(f"{what} {name}: {int(over.sum().item())} of {a.numel()} elements beyond the tolerance, "
                            f"the worst [{i}]: {a64.flatten()[i].item():.9g} against {b64.flatten()[i].item():.9g}, "
                            f"tolerance {bound.flatten()[i].item():.3g}")
        return a.numel(), int((diff > 0).sum().item()), float(diff.max().item()), float(ratio.max().item())

    stats = {}
    for what, names in (("gradients", sorted(n for n in ref["reduced"] if n != "loss")), ("loss", ["loss"])):
        total = differ = 0
        worst_diff = worst_ratio = 0.0
        worst_name = "-"
        for n in names:
            a = ref["reduced"][n].double()
            own = own_values(ref_ranks, n)
            spread = sum(o.double().abs() for o in own) / world
            bound = g_factor * spread + 2 * U * a.abs()
            grad_bounds[n] = bound
            k, d, m, q = check(what, n, ref["reduced"][n], run["reduced"][n], bound)
            total, differ, worst_diff = total + k, differ + d, max(worst_diff, m)
            if q > worst_ratio:
                worst_ratio, worst_name = q, n
        stats[what] = (len(names), total, differ, worst_diff, worst_ratio, worst_name)

    total = differ = 0
    worst_diff = worst_ratio = 0.0
    worst_name = "-"
    for n in sorted(ref["params"]):
        p = ref["params"][n].double()
        g = ref["reduced"][n].double()
        bound = lr * grad_bounds[n] + 4 * U * (p.abs() + lr * g.abs())
        k, d, m, q = check("parameters", n, ref["params"][n], run["params"][n], bound)
        total, differ, worst_diff = total + k, differ + d, max(worst_diff, m)
        if q > worst_ratio:
            worst_ratio, worst_name = q, n
    stats["parameters"] = (len(ref["params"]), total, differ, worst_diff, worst_ratio, worst_name)

    print(f"{world} ranks; tolerance per element 4*gamma({world - 1})*A + 2u*|ref| = "
          f"{g_factor:.3g}*A + {2 * U:.3g}*|ref| (A: mean |own value| over the ranks), parameters lr*that + "
          f"4u*(|p| + lr*|g|), lr {lr}")
    for what, (tensors, total, differ, worst_diff, worst_ratio, worst_name) in stats.items():
        print(f"{what}: {tensors} tensor(s), {total} elements, {differ} differ, largest |difference| "
              f"{worst_diff:.3g}, largest difference/tolerance {worst_ratio:.3g} ({worst_name})")
    print("own gradients and losses (before communication) bit for bit the same in both runs: "
          + ("yes" if local_same else "NO: local compute is not repeatable here; the tolerance's margin covers "
             "an ulp or two of it"))
    if failures:
        for f in failures[:5]:
            print(f"beyond tolerance: {f}")
        print(f"verdict: {len(failures)} tensor(s) beyond the tolerance")
        return 1
    print("verdict: within the tolerance")
    return 0


def main():
    args = sys.argv[1:]
    mode_exact = bool(args) and args[0] == "--exact"
    if mode_exact:
        args = args[1:]
    if len(args) != 2:
        print("usage: model_compare.py [--exact] REF RUN", file=sys.stderr)
        sys.exit(64)
    sys.exit(exact(*args) if mode_exact else within(*args))


if __name__ == "__main__":
    main()
