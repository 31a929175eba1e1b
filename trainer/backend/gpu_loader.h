// Loads the GPU backend, which is built as its own shared module
// (librs-train-gpu.so, next to rs-train or in ../lib) so that rs-train's
// CPU backend never loads CUDA, cuBLAS or NCCL: a CPU run starts in
// milliseconds and works on machines without them.
//
// Thread-safety: call once, from main's thread; the module stays loaded.
#pragma once

#include "trainer/job.h"

namespace rs::trainer {

// The module's entry point and the version of GpuHooks it was built with.
inline constexpr char kGpuModuleName[] = "librs-train-gpu.so";
inline constexpr char kGpuModuleEntry[] = "rs_train_gpu_hooks";
inline constexpr int kGpuModuleAbi = 1;

// kIo naming the paths tried and dlerror's reason (CUDA libraries missing?).
StatusOr<GpuHooks> LoadGpuBackend();

}  // namespace rs::trainer
