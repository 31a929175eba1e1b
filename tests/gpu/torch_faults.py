"""One rank of the GPU fault checks, run by run_torch_faults.sh, one process
per rank, all ranks on one GPU (each its own NCCL node through NCCL_HOSTID).

Every rank all-reduces ITERS float32 tensors of BYTES through NCCL (the
plugin's CollNet, the tuner choosing) and checks every element of each
result. Rank 0 prints a progress line after each all-reduce:
  RS_PROGRESS iter=12
which run_torch_faults.sh waits for before it kills a reducer or a rank.
At the end every rank prints one RS_CHECK line (as torch_allreduce.py does).

A rank whose collective fails prints the exception's type and message on
one line starting "RS_ERROR" and exits 1, so that the step can show what a
user would see.
"""
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    iters = int(os.environ.get("ITERS", 200))
    nbytes = int(os.environ.get("BYTES", 16 << 20))
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    torch.cuda.set_device(0)
    device = torch.device("cuda", 0)
    n = nbytes // 4
    base = (torch.arange(n, device=device) % 7 + 1).to(torch.float32)
    want = base * (world * (world + 1) / 2)

    dist.init_process_group("nccl", init_method=f"tcp://{addr}:{port}", rank=rank, world_size=world,
                            device_id=device)
    wrong = 0
    started = time.monotonic()
    try:
        for i in range(1, iters + 1):
            x = base * (rank + 1)
            dist.all_reduce(x)
            wrong += int((x != want).sum().item())
            if rank == 0:
                print(f"RS_PROGRESS iter={i} t={time.monotonic() - started:.2f}", flush=True)
    except Exception as e:  # what the training loop would see
        msg = " ".join(str(e).split())
        print(f"RS_ERROR rank={rank} after={time.monotonic() - started:.2f}s {type(e).__name__}: {msg[:600]}",
              flush=True)
        sys.exit(1)
    print(f"RS_CHECK rank={rank} group=1 op=all_reduce dtype=float32 bytes={nbytes} wrong={wrong}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
