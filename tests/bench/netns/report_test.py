#!/usr/bin/env python3
"""bench/netns/report.py on made-up runs: a phase in which the machine was
short of CPU (the whole machine at 90 % or more of its cores, or a reducer
waiting for a CPU 10 % or more of the phase) is named at the top of
results.md, with the figure that tripped it; a phase with CPU to spare is
not. Harness figures taken on a saturated machine were twice read as the
network's (docs/performance.md); the warning is what keeps a reader from it.
A phase whose streams waited for a buffer a fifth of their busy time or more
is named the same way (its figures measure the hosts' buffer ceilings).
The real DDP step (torch_hook, torch_gloo) gets a table, hook against gloo
and each against the line rate. The Losses table says where the queues
dropped: at the hosts' own NICs or at the switch's ports, where incast shows.

  report_test.py   (exit 0 on success)
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
REPORT = os.path.join(ROOT, "bench", "netns", "report.py")


def run_report(cpu_rows, extra=None, meta=""):
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "meta.env"), "w") as f:
            f.write("WORKERS=2\nREDUCERS=2\nRATE=1gbit\nCORES=2\nINPUT_BYTES_ours=1000000000\n" + meta)
        for name, text in (extra or {}).items():
            with open(os.path.join(folder, name), "w") as f:
                f.write(text)
        with open(os.path.join(folder, "ours.csv"), "w") as f:
            f.write("bytes,count,dtype,op,ranks,reducers,time_us,algbw_GBps,busbw_GBps,wrong\n"
                    "1048576,262144,float32,sum,2,2,10000,0.1,0.1,0\n")
        with open(os.path.join(folder, "cpu.csv"), "w") as f:
            f.write("phase,process,cpu_s,wall_s,user_s,sys_s\n")
            for row in cpu_rows:
                f.write(",".join(row) + "\n")
        done = subprocess.run([sys.executable, REPORT, folder], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"FAIL: report.py exited {done.returncode}: {done.stderr}")
        with open(os.path.join(folder, "results.md")) as f:
            return f.read()


def expect(cond, what, text):
    if not cond:
        sys.exit(f"FAIL: {what}\n--- results.md ---\n{text}")


def main():
    machine = "all (whole machine incl. other users; 2 cores)"
    idle = run_report([("ours", "reducerd 0", "1.0", "10.0", "0.2", "0.8"),
                       ("ours", "reducerd 0: waiting for a CPU while runnable", "0.5", "10.0", "", ""),
                       ("ours", machine, "8.0", "10.0", "", "")])
    expect("Short of CPU" not in idle, "a phase with CPU to spare was flagged", idle)

    busy = run_report([("ours", "reducerd 0", "1.0", "10.0", "0.2", "0.8"),
                       ("ours", "reducerd 0: waiting for a CPU while runnable", "0.5", "10.0", "", ""),
                       ("ours", machine, "19.4", "10.0", "", "")])
    expect("**Short of CPU in phase ours:** the whole machine used 1.94 of its 2 cores" in busy,
           "a machine at 97 % of its cores was not named", busy)
    expect(busy.index("Short of CPU") < busy.index("| size |"), "the warning is not above the results", busy)

    waiting = run_report([("ours", "reducerd 0", "1.0", "10.0", "0.2", "0.8"),
                          ("ours", "reducerd 1: waiting for a CPU while runnable", "3.2", "10.0", "", ""),
                          ("gloo", "torch gloo rank 0", "1.0", "10.0", "0.5", "0.5"),
                          ("gloo", machine, "4.0", "10.0", "", "")])
    expect("**Short of CPU in phase ours:** a reducer waited for a CPU 32 % of the phase" in waiting,
           "a reducer waiting 32 % of the phase was not named", waiting)
    expect("phase gloo" not in waiting, "a phase with CPU to spare was flagged", waiting)

    # A DDP step with a forward pass: its share of the line rate counts the
    # step less the forward pass, when nothing is on the wire (100 MiB in
    # 5 s of 6 at 0.02 GB/s: 1.05); a CSV from before forward_us, all of it.
    ddp_header = ("model_bytes,bucket_bytes,first_bucket_bytes,buckets,gap_us,dtype,op,ranks,reducers,"
                  "step_us,compute_us,exposed_us,algbw_GBps,wrong")
    iperf = '{"end": {"sum_received": {"bits_per_second": 160000000}}}'
    for forward, line_share in (("1000000", "1.05"), (None, "0.87")):
        ddp = ddp_header + (",forward_us" if forward else "") + "\n104857600,26214400,1048576,5,0,float32,sum,2,2," \
            "6000000,1000000,5000000,0.017476,0" + (f",{forward}" if forward else "") + "\n"
        text = run_report([("ours", machine, "8.0", "10.0", "", "")], {"ddp.csv": ddp, "iperf.json": iperf})
        row = next((r for r in text.splitlines() if r.startswith("| 25 MiB | 5 |")), "")
        expect(row.endswith(f"| {line_share} |"), f"the DDP row's line-rate share is not {line_share}", text)
        expect("compute` = forward + buckets x gap" in text, "the DDP section does not say what compute is", text)
    # Buffers that held rank 0's streams back a fifth of their busy time or
    # more are named at the top, with the setting; the table shows every
    # phase that reported its waits.
    held = run_report([("ours", machine, "8.0", "10.0", "", "")],
                      meta="TCP_WAITS_ours=121.3 0.0 45.3\nTCP_WAITS_ddp=61.5 0.4 0.0\n")
    expect("**Buffers held the streams back in phase ours:** rank 0's streams waited for room in the send "
           "buffers (the worker hosts' net.ipv4.tcp_wmem ceiling) 45 %" in held,
           "a phase held back by its send buffers 45 % of the time was not named", held)
    expect(held.index("Buffers held") < held.index("| size |"), "the buffer warning is not above the results", held)
    expect("phase ddp:**" not in held, "a phase whose buffers sufficed was flagged", held)
    expect("| ours | 121.3 | 0.0 % | 45.3 % |" in held and "| ddp | 61.5 | 0.4 % | 0.0 % |" in held,
           "the TCP waits table does not show both phases", held)
    expect("## TCP waits" not in idle, "a run without TCP waits has a TCP waits section", idle)
    # The real DDP step (torch_ddp_step.py): hook against gloo per bucket_cap_mb, and each against
    # the line rate (0.1 GB/s here): 100 MiB in 0.9 s (hook) and in 1.5 s (gloo).
    torch_header = ("comm,bucket_cap_mb,grad_bytes,params,buckets,batch,ranks,steps,step_us,backward_us,"
                    "backward_nosync_us,allreduce_us,algbw_GBps,wrong\n")
    torch_csvs = {"iperf.json": '{"end": {"sum_received": {"bits_per_second": 800000000}}}',
                  "torch_hook.csv": torch_header + "hook,25,104857600,26214400,5,8,4,5,1100000,950000,100000,"
                                                   "900000,0.116508,0\n",
                  "torch_gloo.csv": torch_header + "gloo,25,104857600,26214400,5,8,4,5,1700000,1550000,120000,"
                                                   "1500000,0.069905,0\n"}
    text = run_report([("torch_hook", "torch DDP rank 0", "1.0", "10.0", "0.5", "0.5")], torch_csvs,
                      meta="INPUT_BYTES_torch_hook=1048576000\n")
    expect("## PyTorch DDP step" in text, "no section for the DDP step", text)
    expect("| 25 | 5 / 5 | 1100 | 1700 | 100 / 120 | 900 | 1500 | 0.117 | 0.070 | 1.67 | 1.17 | 0.70 |" in text,
           "the DDP step's row is not hook against gloo and the line rate", text)
    expect("| torch_hook | workers (all ranks) | 1.05 |" in text, "the DDP step's ranks are not counted as workers",
           text)
    expect("## PyTorch DDP step" not in idle, "a run without the DDP step phases has its section", idle)
    # Losses: where the queues dropped, hosts' NICs apart from the switch's
    # ports (incast shows at the latter), per phase from cumulative sums;
    # a links.csv from before the split still gives its one column.
    links = ("phase,drops,retransmitted,timeouts,loss_probes,drops_nic,drops_switch\n"
             "iperf,3,5,0,1,3,0\nours,1124,303,3,363,1124,0\ngloo,1130,393,3,364,1125,5\n")
    text = run_report([("ours", machine, "8.0", "10.0", "", "")], {"links.csv": links})
    expect("| ours | 1121 | 1121 | 0 | 298 | 3 | 362 |" in text and "| gloo | 6 | 1 | 5 | 90 | 0 | 1 |" in text,
           "the Losses table does not tell the hosts' NICs from the switch's ports", text)
    # Since the spurious retransmissions were counted: DSACKs beside the
    # retransmissions, F-RTO's undone timeouts beside the timeouts.
    spurious = ("phase,drops,retransmitted,timeouts,loss_probes,drops_nic,drops_switch,dsacks,spurious_rtos\n"
                "iperf,3,5,0,1,3,0,2,0\nours,52,1745,309,905,22,30,1502,280\n")
    text = run_report([("ours", machine, "8.0", "10.0", "", "")], {"links.csv": spurious})
    expect("| ours | 49 | 19 | 30 | 1740 | 1500 | 309 | 280 | 904 |" in text and "of which spurious (DSACKs)" in text,
           "the Losses table does not say which retransmissions were spurious", text)
    old_links = "phase,drops,retransmitted,timeouts,loss_probes\niperf,0,0,0,0\nours,942,300,2,360\n"
    text = run_report([("ours", machine, "8.0", "10.0", "", "")], {"links.csv": old_links})
    expect("| ours | 942 | 300 | 2 | 360 |" in text, "an older links.csv lost its Losses table", text)
    print("PASS")


if __name__ == "__main__":
    main()
