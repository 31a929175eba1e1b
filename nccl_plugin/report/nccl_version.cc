#include "nccl_plugin/report/nccl_version.h"

#include <dlfcn.h>

#include "nccl_plugin/nccl_releases.h"

namespace rs::plugin {
namespace {

using GetVersion = int (*)(int*);

int Call(void* fn) {
  int code = 0;
  if (fn == nullptr || reinterpret_cast<GetVersion>(fn)(&code) != 0) return 0;
  return code;
}

}  // namespace

int FindNcclVersion(const void* in_library_of) {
  Dl_info info{};
  if (in_library_of != nullptr && ::dladdr(in_library_of, &info) != 0 && info.dli_fname != nullptr) {
    // RTLD_NOLOAD: only a library already loaded; nothing new is opened.
    if (void* lib = ::dlopen(info.dli_fname, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD)) {
      const int code = Call(::dlsym(lib, "ncclGetVersion"));
      ::dlclose(lib);
      if (code > 0) return code;
    }
  }
  return Call(::dlsym(RTLD_DEFAULT, "ncclGetVersion"));
}

std::string NcclVersionText(int code) {
  return code > 0 ? "NCCL " + NcclVersionFromCode(code).ToString() : "an unknown NCCL";
}

}  // namespace rs::plugin
