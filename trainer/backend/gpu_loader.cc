#include "trainer/backend/gpu_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <string>

namespace rs::trainer {
namespace {

std::string ExecutableDir() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  std::string p(path, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

}  // namespace

StatusOr<GpuHooks> LoadGpuBackend() {
  const std::string dir = ExecutableDir();
  std::string errors;
  for (const std::string& path :
       {dir + "/" + kGpuModuleName, dir + "/../lib/" + kGpuModuleName, std::string(kGpuModuleName)}) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      errors += "\n  " + path + ": " + (why ? why : "not loadable");
      continue;
    }
    using Entry = const GpuHooks* (*)(int abi);
    auto entry = reinterpret_cast<Entry>(dlsym(handle, kGpuModuleEntry));
    const GpuHooks* hooks = entry ? entry(kGpuModuleAbi) : nullptr;
    if (hooks == nullptr) {
      errors += "\n  " + path + ": not a GPU backend module of this rs-train version";
      continue;
    }
    return *hooks;  // the handle stays open for the process's life
  }
  return Status(Code::kIo,
                "--backend gpu: cannot load the GPU backend (CUDA, cuBLAS and NCCL libraries on the "
                "loader path?):" +
                    errors);
}

}  // namespace rs::trainer
