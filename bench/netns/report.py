#!/usr/bin/env python3
"""Turns one harness run's raw files into results.md and algbw.png.

Reads, from the results folder: meta.env (KEY=VALUE), iperf.json (iperf3 -J),
the phases' CSVs (ours.csv, collnet.csv, ddp.csv from reducer-bench --csv;
gloo.csv, gloo_ddp.csv from gloo_allreduce.py --csv; torch_hook.csv,
torch_gloo.csv from torch_ddp_step.py --csv) and cpu.csv
(phase,process,cpu_s,wall_s[,user_s,sys_s]). Any of them may be missing;
what is missing shows as "n/a" or leaves its section out.
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


def ratio(a, b):
    return a / b if a and b else None


def by_key(rows, key):
    return {int(r[key]): r for r in rows}


def num(row, key):
    return float(row[key]) if row and row.get(key) not in (None, "") else None


def bandwidth_table(meta, ours, gloo, line):
    w = int(meta["WORKERS"])
    ring = line * w / (2 * (w - 1)) if line and w > 1 else None
    out = ["| size | ours time (us) | ours algbw (GB/s) | gloo time (us) | gloo algbw (GB/s) | ours/gloo"
           " | ours/line rate | ring bound (GB/s) | reducer bound (GB/s) |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for size in sorted(set(ours) | set(gloo)):
        o, g = ours.get(size), gloo.get(size)
        oa, ga = num(o, "algbw_GBps"), num(g, "algbw_GBps")
        out.append(f"| {human(size)} | {fmt(num(o, 'time_us'), 1)} | {fmt(oa)} | {fmt(num(g, 'time_us'), 1)}"
                   f" | {fmt(ga)} | {fmt(ratio(oa, ga), 2)} | {fmt(ratio(oa, line), 2)} | {fmt(ring)} | {fmt(line)} |")
    return out


def collnet_table(collnet, ours, gloo, line):
    out = ["| user size | calls x bytes | in flight | collnet time (us) | collnet algbw (GB/s) | sweep algbw (GB/s)"
           " | gloo algbw (GB/s) | collnet/gloo | collnet/line rate |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for size in sorted(collnet):
        c = collnet[size]
        ca, ga = num(c, "algbw_GBps"), num(gloo.get(size), "algbw_GBps")
        out.append(f"| {human(size)} | {c['calls']} x {human(int(c['call_bytes']))} | {c['max_inflight']}"
                   f" | {fmt(num(c, 'time_us'), 1)} | {fmt(ca)} | {fmt(num(ours.get(size), 'algbw_GBps'))}"
                   f" | {fmt(ga)} | {fmt(ratio(ca, ga), 2)} | {fmt(ratio(ca, line), 2)} |")
    return out


def ddp_table(ddp, gloo_ddp, line):
    out = ["| bucket cap | buckets | compute (us) | ours step (us) | ours exposed (us) | ours algbw (GB/s)"
           " | gloo step (us) | gloo exposed (us) | gloo algbw (GB/s) | ours/gloo | ours/line rate |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for cap in sorted(set(ddp) | set(gloo_ddp)):
        o, g = ddp.get(cap), gloo_ddp.get(cap)
        oa, ga = num(o, "algbw_GBps"), num(g, "algbw_GBps")
        first = o or g
        # Against the line rate: the model's bytes over the step less its
        # forward pass (older CSVs have no forward_us: none).
        o_line = None
        if o and num(o, "step_us"):
            window = num(o, "step_us") - (num(o, "forward_us") or 0)
            o_line = ratio(num(o, "model_bytes") / window / 1e3, line) if window > 0 else None
        out.append(f"| {human(cap)} | {first['buckets']} | {fmt(num(first, 'compute_us'), 0)}"
                   f" | {fmt(num(o, 'step_us'), 0)} | {fmt(num(o, 'exposed_us'), 0)} | {fmt(oa)}"
                   f" | {fmt(num(g, 'step_us'), 0)} | {fmt(num(g, 'exposed_us'), 0)} | {fmt(ga)}"
                   f" | {fmt(ratio(oa, ga), 2)} | {fmt(o_line, 2)} |")
    return out


def torch_table(hook, gloo, line):
    """The real DDP step, hook against gloo, one row per bucket cap (bucket_cap_mb)."""
    out = ["| bucket_cap_mb | buckets (hook / gloo) | hook step (ms) | gloo step (ms) | backward alone (ms, hook / gloo)"
           " | hook all-reduce (ms) | gloo all-reduce (ms) | hook algbw (GB/s) | gloo algbw (GB/s) | hook/gloo"
           " | hook/line rate | gloo/line rate |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def ms(row, key):
        v = num(row, key)
        return None if v is None else v / 1e3

    for cap in sorted(set(hook) | set(gloo), key=float):
        h, g = hook.get(cap), gloo.get(cap)
        ha, ga = num(h, "algbw_GBps"), num(g, "algbw_GBps")
        out.append(f"| {cap} | {h['buckets'] if h else 'n/a'} / {g['buckets'] if g else 'n/a'}"
                   f" | {fmt(ms(h, 'step_us'), 0)} | {fmt(ms(g, 'step_us'), 0)}"
                   f" | {fmt(ms(h, 'backward_nosync_us'), 0)} / {fmt(ms(g, 'backward_nosync_us'), 0)}"
                   f" | {fmt(ms(h, 'allreduce_us'), 0)} | {fmt(ms(g, 'allreduce_us'), 0)} | {fmt(ha)} | {fmt(ga)}"
                   f" | {fmt(ratio(ha, ga), 2)} | {fmt(ratio(ha, line), 2)} | {fmt(ratio(ga, line), 2)} |")
    return out


def cpu_table(rows):
    out = ["| phase | process | CPU s | user s | sys s | wall s | CPU % of one core |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        cpu, wall = float(r["cpu_s"]), float(r["wall_s"])
        pct = 100 * cpu / wall if wall > 0 else 0
        user, sys_ = r.get("user_s") or "", r.get("sys_s") or ""
        out.append(f"| {r['phase']} | {r['process']} | {cpu:.2f} | {user} | {sys_} | {wall:.2f} | {pct:.0f} |")
    return out


def queues_note(queues):
    """The tbf queues, from meta.env's QUEUES ("<switch ports> <hosts' NICs>"; absent before 2026-11-29,
    when both were 25 ms)."""
    parts = queues.split()
    return f", queues {parts[0]} at the switch's ports and {parts[1]} at the hosts' NICs" if len(parts) == 2 else ""


def loss_table(rows):
    """Per phase: queue drops and TCP's recovery, from cumulative sums (links.csv, in run order)."""
    if not rows:
        return []
    out = ["", "## Losses", "",
           "Per phase, summed over every host: packets the tbf queues dropped, TCP segments retransmitted, "
           "retransmission timeouts (each stalls its stream for at least the floor of TCP's retransmission timeout: "
           "200 ms for iperf3 and gloo, the products' own --tcp-rto-min, 5 ms by default, for theirs) and tail-loss "
           "probes."]
    # Each column as links.csv names it, with its header; older runs lack the later ones.
    columns = [("drops", "queue drops"), ("drops_nic", "of which at the hosts' NICs"),
               ("drops_switch", "at the switch's ports"), ("retransmitted", "retransmitted segments"),
               ("dsacks", "of which spurious (DSACKs)"), ("timeouts", "timeouts"),
               ("spurious_rtos", "of which spurious (F-RTO)"), ("loss_probes", "loss probes")]
    columns = [(k, h) for k, h in columns if k in rows[0]]
    keys = tuple(k for k, _ in columns)
    notes = []
    if "drops_switch" in keys:  # runs since the drops were told apart by queue
        notes.append("The drops are told apart by where they happened: at the hosts' own egress (their NICs, "
                     "where only their own streams queue) and at the switch's ports towards the hosts (where "
                     "many senders meet: incast shows there).")
    if "dsacks" in keys:  # runs since the spurious retransmissions were counted
        notes.append("Retransmissions the receiver already had come back as DSACKs: spurious, sent again because "
                     "the first copy or its ACK was late (queued, or its process waited for a CPU), not lost; "
                     "F-RTO finds some timeouts spurious too.")
    if notes:
        out.append(" ".join(notes))
    out += ["", "| phase | " + " | ".join(h for _, h in columns) + " |", "|---|" + "---:|" * len(columns)]
    prev = dict.fromkeys(keys, 0)
    for r in rows:
        now = {k: int(r[k]) for k in keys}
        if r["phase"] != "iperf":  # iperf3's own: the line rate's cost, not ours
            out.append(f"| {r['phase']} | " + " | ".join(str(now[k] - prev[k]) for k in keys) + " |")
        prev = now
    return out


def role_of(process):
    """The role a cpu.csv row adds to, or None (waiting rows, the machine's total)."""
    if "waiting" in process:
        return None
    if process.startswith("reducerd"):
        return "reducerd (all reducers)"
    if process.startswith(("reducer-bench", "torch gloo", "torch DDP")):
        return "workers (all ranks)"
    if process.startswith("of which irq + softirq"):
        return "machine: irq + softirq (charged to no process)"
    if process.startswith("of which kernel"):
        return "machine: all kernel time (system + irq + softirq, every process)"
    return None


def input_bytes(meta, phase):
    value = meta.get(f"INPUT_BYTES_{phase}") or (meta.get("OURS_INPUT_BYTES") if phase == "ours" else None)
    return int(value) if value else 0


def cpu_per_gb_table(meta, rows):
    """CPU-seconds per GB of worker input, per phase and role, user and system apart."""
    sums = {}
    for r in rows:
        role = role_of(r["process"])
        if role is None:
            continue
        s = sums.setdefault((r["phase"], role), [0.0, 0.0, 0.0, True])
        s[0] += float(r["cpu_s"])
        if r.get("user_s") not in (None, "") and r.get("sys_s") not in (None, ""):
            s[1] += float(r["user_s"])
            s[2] += float(r["sys_s"])
        elif role.startswith("machine"):
            s[2] += float(r["cpu_s"])  # kernel time is system time
        else:
            s[3] = False  # an older cpu.csv: only the total
    out = ["| phase | role | GB of worker input | user s/GB | sys s/GB | total s/GB | GB per CPU-second |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for (phase, role), (cpu, user, sys_, split) in sums.items():
        gb = input_bytes(meta, phase) / 1e9
        if gb <= 0:
            continue
        u = "-" if role.startswith("machine") else fmt(user / gb) if split else "n/a"
        k = fmt(sys_ / gb) if split else "n/a"
        out.append(f"| {phase} | {role} | {gb:.2f} | {u} | {k} | {fmt(cpu / gb)} | {fmt(gb / cpu if cpu else None, 2)} |")
    return out if len(out) > 2 else []


def reducer_cost(meta, rows):
    reducer_cpu = sum(float(r["cpu_s"]) for r in rows
                      if r["phase"] == "ours" and r["process"].startswith("reducerd") and "waiting" not in r["process"])
    ours_bytes = input_bytes(meta, "ours")
    if reducer_cpu <= 0 or not ours_bytes:
        return []
    return ["", f"Reducer cost: {ours_bytes / 1e9:.2f} GB of worker contributions reduced in {reducer_cpu:.2f} "
            f"CPU-seconds of reducerd = {ours_bytes / reducer_cpu / 1e9:.3f} GB reduced per CPU-second "
            "(each byte received over TCP, summed in rank order, the result sent back to every worker)."]


def cpu_caution(meta, rows, busy_limit=0.9, wait_limit=0.10):
    """A warning per phase in which the machine, not the links, may have set the pace: the whole
    machine at least `busy_limit` of its cores, or a reducer runnable but waiting for a CPU at
    least `wait_limit` of the phase. Empty when no phase was."""
    try:
        cores = int(meta.get("CORES", "0"))
    except ValueError:
        cores = 0
    phases = {}
    for r in rows:
        wall = float(r["wall_s"] or 0)
        if wall <= 0:
            continue
        p = phases.setdefault(r["phase"], {"busy": None, "wait": 0.0})
        if r["process"].startswith("all (whole machine") and cores > 0:
            p["busy"] = float(r["cpu_s"]) / wall / cores
        elif r["process"].startswith("reducerd") and "waiting" in r["process"]:
            p["wait"] = max(p["wait"], float(r["cpu_s"]) / wall)
    out = []
    for phase, p in phases.items():
        busy, wait = p["busy"], p["wait"]
        if (busy is None or busy < busy_limit) and wait < wait_limit:
            continue
        why = []
        if busy is not None and busy >= busy_limit:
            why.append(f"the whole machine used {busy * cores:.2f} of its {cores} cores")
        if wait >= wait_limit:
            why.append(f"a reducer waited for a CPU {100 * wait:.0f} % of the phase")
        out.append(f"**Short of CPU in phase {phase}:** {' and '.join(why)}. Its figures measure this "
                   "machine as well as the links (section CPU below).")
    return out


def tcp_waits(meta, limit=20.0):
    """Rank 0's TCP waits per phase (reducer-bench's "# TCP waits", TCP_WAITS_<phase> in meta.env:
    busy seconds, receive-window %, send-buffer %): a table, and a caution for each phase in which
    a buffer held the streams back `limit` % or more of the time they had pieces to send."""
    rows, caution = [], []
    for key in sorted(k for k in meta if k.startswith("TCP_WAITS_")):
        phase = key[len("TCP_WAITS_"):]
        try:
            busy, rwnd, sndbuf = (float(x) for x in meta[key].split())
        except ValueError:
            continue
        rows.append(f"| {phase} | {busy:.1f} | {rwnd:.1f} % | {sndbuf:.1f} % |")
        share, what = max((rwnd, "the reducers' receive windows (the reducer hosts' net.ipv4.tcp_rmem ceiling, "
                                 "or reducers reading too slowly)"),
                          (sndbuf, "room in the send buffers (the worker hosts' net.ipv4.tcp_wmem ceiling)"))
        if share >= limit:
            caution.append(f"**Buffers held the streams back in phase {phase}:** rank 0's streams waited for "
                           f"{what} {share:.0f} % of the time they had pieces to send. Its figures measure the "
                           "hosts' buffer ceilings as well as the links (section TCP waits below).")
    if not rows:
        return [], caution
    table = ["", "## TCP waits", "",
             "Rank 0's streams (reducer-bench's `# TCP waits`, from TCP_INFO): the time they had pieces to send, "
             "summed over streams, and the share of it TCP waited for a reducer's receive window or for room in "
             "the send buffer. A few % at most when the buffers are large enough for the path "
             "(docs/guide/tuning.md, \"Socket buffers\").", "",
             "| phase | busy s | receive window | send buffer |", "|---|---:|---:|---:|"] + rows
    return table, caution


def plot(folder, meta, series, line):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib is not installed (apt-get install python3-matplotlib); no plot", file=sys.stderr)
        return False
    w = int(meta["WORKERS"])
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, rows, style in series:
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
    ours = by_key(read_csv(os.path.join(folder, "ours.csv")), "bytes")
    gloo = by_key(read_csv(os.path.join(folder, "gloo.csv")), "bytes")
    collnet = by_key(read_csv(os.path.join(folder, "collnet.csv")), "bytes")
    ddp = by_key(read_csv(os.path.join(folder, "ddp.csv")), "bucket_bytes")
    gloo_ddp = by_key(read_csv(os.path.join(folder, "gloo_ddp.csv")), "bucket_bytes")
    torch_hook = {r["bucket_cap_mb"]: r for r in read_csv(os.path.join(folder, "torch_hook.csv"))}
    torch_gloo = {r["bucket_cap_mb"]: r for r in read_csv(os.path.join(folder, "torch_gloo.csv"))}
    line = line_rate_gbps(folder)
    cpu_rows = read_csv(os.path.join(folder, "cpu.csv"))
    md = [f"# All-reduce: {meta['WORKERS']} workers, {meta['REDUCERS']} reducers, links {meta['RATE']}"
          f"{' + ' + meta['DELAY'] + ' delay' if meta.get('DELAY') else ''}"
          f"{' (rs-delay-line, userspace)' if meta.get('DELAY_IMPL') == 'userspace' else ''}"
          f"{', TCP ' + meta['TCP_CC'] if meta.get('TCP_CC') else ''}"
          f"{', ' + meta['LOSS'] + ' % random loss at every host' if meta.get('LOSS', '0') not in ('', '0') else ''}"
          f"{', tcp_slow_start_after_idle 0' if meta.get('SLOW_START_AFTER_IDLE') == '0' else ''}"
          f"{queues_note(meta.get('QUEUES', ''))}"
          f"{', GSO packets of at most ' + meta['GSO_BYTES'] + ' bytes' if meta.get('GSO_BYTES') else ''}", "",
          f"Command: `{meta.get('COMMAND', '')}`", "",
          f"Measured line rate (iperf3, 1 TCP stream, {meta.get('IPERF_SECONDS', '?')} s): "
          f"{fmt(line)} GB/s = {fmt(line * 8 if line else None, 2)} Gbit/s", "",
          f"Ours: reducer-bench, float32 sum, {meta.get('OURS_FLAGS', '')}. Peer: torch {meta.get('TORCH', '?')} "
          "gloo all_reduce (ring), float32 sum. Time per size: the slowest rank's average over the timed iterations.",
          "algbw = size / time. Bounds use the measured line rate B.", ""]
    waits_table, waits_caution = tcp_waits(meta)
    caution = cpu_caution(meta, cpu_rows) + waits_caution
    if caution:
        md[-1:-1] = [line for c in caution for line in ("", c)]
    if meta.get("DELAY_LINE"):
        md[-1:-1] = ["", f"Links delayed in user space by rs-delay-line (the kernel has no netem; bench/netns/"
                     f"delay_line.cc), over the whole run: {meta['DELAY_LINE']}."]
    if ours or gloo:
        md += bandwidth_table(meta, ours, gloo, line)
    if collnet:
        md += ["", "## NCCL CollNet pattern", "",
               "Each size as a user all-reduce that NCCL 2.28 runs with CollNet Chain: the plugin's calls "
               f"(whole chunks, the last padded) with at most `in flight` outstanding; reducer-bench "
               f"`--pattern collnet {meta.get('COLLNET_FLAGS', '')}`. algbw = user size / time; the gloo column is "
               "the same size as one ring all-reduce.", ""]
        md += collnet_table(collnet, ours, gloo, line)
    if ddp or gloo_ddp:
        md += ["", "## DDP pattern", "",
               f"One training step ({meta.get('DDP_FLAGS', '')}): a forward pass with nothing on the wire, then "
               "one all-reduce per bucket, bucket i issued after i + 1 compute gaps (sleeps standing for the "
               "passes; `compute` = forward + buckets x gap), all waited for at the end of the step. Ours: "
               "reducer-bench `--pattern ddp`; gloo: the same buckets with `dist.all_reduce(async_op=True)`. "
               "exposed = step - compute, the communication the step waits for; algbw = model bytes / step time; "
               "ours/line rate = model bytes / (step - forward) against the line rate.", ""]
        md += ddp_table(ddp, gloo_ddp, line)
    if torch_hook or torch_gloo:
        first = next(iter(torch_hook.values() or torch_gloo.values()))
        md += ["", "## PyTorch DDP step", "",
               f"A real training step of unmodified PyTorch DDP on CPU (bench/netns/torch_ddp_step.py: a stack of "
               f"Linear layers, {int(first['grad_bytes']) / (1 << 20):.1f} MiB of float32 gradients, "
               f"{meta.get('TORCH_DDP_FLAGS', '')}), on the worker hosts. hook: reduction_server.torch's "
               "allreduce_hook through the reducers; gloo: DDP's own all-reduce (ring) on the gloo group. "
               "step = forward + backward + SGD; backward alone = the backward under no_sync() (compute, "
               "nothing on the wire), in each phase; all-reduce = from the first gradient's arrival to backward's return, "
               "the window in which the buckets are all-reduced; algbw = gradient bytes / all-reduce. "
               "The slowest rank's average over the timed steps.", ""]
        md += torch_table(torch_hook, torch_gloo, line)
    md += waits_table
    md += ["", "## CPU", "", "CPU per process (utime + stime from /proc, over the phase; the machine has "
           f"{meta.get('CORES', '?')} cores; machine-wide busy share in the `all` rows, from /proc/stat, which "
           "includes other users of the machine):", ""]
    md += cpu_table(cpu_rows)
    per_gb = cpu_per_gb_table(meta, cpu_rows)
    if per_gb:
        md += ["", "CPU-seconds per GB of worker input (the bytes all workers handed to the all-reduce, warm-up "
               "included): user and system time of the processes; the kernel's packet work on veth and the "
               "bridge that runs in softirq is charged to no process and shows only in the `machine` rows "
               "(whole machine, other users included). The gloo rows include starting Python and importing torch "
               "(about a CPU-second per rank), which only a long run amortises.", ""]
        md += per_gb
    md += reducer_cost(meta, cpu_rows)
    md += loss_table(read_csv(os.path.join(folder, "links.csv")))
    series = (("reducers (ours)", ours, "o-"), ("reducers, CollNet pattern", collnet, "^-"),
              ("ring (torch gloo)", gloo, "s-"))
    if plot(folder, meta, series, line):
        md += ["", "![algbw](algbw.png)"]
    with open(os.path.join(folder, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
