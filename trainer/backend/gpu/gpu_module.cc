// The one exported symbol of librs-train-gpu.so: the GPU backend's hooks,
// for rs-train's loader (gpu_loader.h), which checks the ABI version.
#include "trainer/backend/gpu/gpu_backend.h"
#include "trainer/backend/gpu_loader.h"

extern "C" __attribute__((visibility("default"))) const rs::trainer::GpuHooks* rs_train_gpu_hooks(int abi) {
  if (abi != rs::trainer::kGpuModuleAbi) return nullptr;
  static const rs::trainer::GpuHooks hooks{rs::trainer::MakeNcclId, rs::trainer::CreateGpuBackend};
  return &hooks;
}
