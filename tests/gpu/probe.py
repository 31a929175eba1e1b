"""run_all.sh's first step, the Python half: can PyTorch use a GPU here?

Prints key=value lines that run_all.sh's summary greps (python, torch,
torch_cuda, nccl, cuda_available, devices, device), then exits 0 when PyTorch
sees a CUDA device, 2 with a FAILED: line naming the reason when not. Needs
nothing but the standard library to say why PyTorch is unusable.
"""
import os
import platform
import sys


def fail(reason):
    print(f"FAILED: {reason}", file=sys.stderr, flush=True)
    sys.exit(2)


def main():
    print(f"python={platform.python_version()} {sys.executable}", flush=True)
    try:
        import torch
    except Exception as e:  # ImportError, or a broken wheel's OSError
        fail(f"cannot import torch with {sys.executable}: {type(e).__name__}: {e} (set PYTHON=...)")
    cuda = torch.version.cuda or "none (a CPU-only build)"
    print(f"torch={torch.__version__}", flush=True)
    print(f"torch_cuda={cuda}", flush=True)
    try:
        nccl = torch.cuda.nccl.version()
        nccl = ".".join(str(v) for v in nccl) if isinstance(nccl, tuple) else str(nccl)
    except Exception as e:  # a CPU-only build has no NCCL
        nccl = f"none ({type(e).__name__})"
    print(f"nccl={nccl}", flush=True)
    available = torch.cuda.is_available()
    print(f"cuda_available={available}", flush=True)
    if not available:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
        fail(f"PyTorch sees no CUDA device: torch.cuda.is_available() is False (torch {torch.__version__}, "
             f"CUDA {cuda}, CUDA_VISIBLE_DEVICES {visible})")
    count = torch.cuda.device_count()
    print(f"devices={count}", flush=True)
    print(f"device={torch.cuda.get_device_name(0)}", flush=True)
    # A context and a kernel: a driver too old for this CUDA shows here, not
    # in four ranks at once.
    x = torch.ones(1 << 20, device="cuda")
    if int(x.sum().item()) != 1 << 20:
        fail("a sum of ones on the GPU came out wrong")
    print("gpu_kernel=ok", flush=True)


if __name__ == "__main__":
    main()
