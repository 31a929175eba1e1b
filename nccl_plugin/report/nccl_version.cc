#include "nccl_plugin/report/nccl_version.h"

#include <dlfcn.h>

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
  if (code <= 0) return "an unknown NCCL";
  return "NCCL " + std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

NcclTunerLookup TunerLookupOf(int code) {
  const int minor = code >= 20000 && code < 30000 ? code / 100 % 100 : 0;
  if (code >= 30000) return {6, true};
  if (minor >= 30) return {6, true};
  if (minor >= 28) return {5, true};
  if (minor >= 24) return {4, true};
  if (minor >= 22) return {3, true};
  if (minor == 21) return {2, true};
  if (minor >= 19) return {1, false};
  return {0, false};
}

}  // namespace rs::plugin
