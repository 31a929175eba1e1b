// Which NCCL loaded the plugin, for messages that depend on the release
// (which tuner it looks up, where). NCCL passes no version to a net plugin;
// its logger function lives in libnccl, so the library that holds the
// logger is asked for ncclGetVersion (then the global scope, where PyTorch
// loads libnccl as a dependency).
//
// Thread-safety: pure functions.
#pragma once

#include <string>

namespace rs::plugin {

// NCCL's version code (major * 10000 + minor * 100 + patch since 2.9), or 0
// when it cannot be found. `in_library_of`: a function of the library to ask
// first (NCCL's logger); may be nullptr.
int FindNcclVersion(const void* in_library_of);

// "NCCL 2.27.5"; "an unknown NCCL" for 0.
std::string NcclVersionText(int code);

}  // namespace rs::plugin
