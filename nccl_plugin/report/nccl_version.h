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

// "2.27.5"; "an unknown NCCL" for 0.
std::string NcclVersionText(int code);

// The tuner versions an NCCL release looks up, newest first, and whether it
// looks in the net plugin's library (2.21+) or only in NCCL_TUNER_PLUGIN's
// (2.19 - 2.20). Read in NCCL's sources (misc/tuner.cc, plugin/tuner.cc).
struct NcclTunerLookup {
  int newest = 0;   // the first version looked up; 0: no tuner interface
  bool in_net_library = false;
};
NcclTunerLookup TunerLookupOf(int code);

}  // namespace rs::plugin
