// NCCL's releases as the stand-in reproduces them for the tuner: which
// library each opens for its tuner, which tuner versions it looks up, newest
// first, with which signature it calls them and what it does with the
// answer. Read from NCCL's sources at each tag:
//   - 2.19.3, 2.20.5 (src/misc/tuner.cc): only the library NCCL_TUNER_PLUGIN
//     names, dlopen'ed as given; `ncclTunerPlugin_v1`; init(nRanks, nNodes,
//     logger) per communicator, no context; getCollInfo(coll, bytes,
//     collNetSupport, nvlsSupport, numPipeOps, &algo, &proto, &nChannels),
//     and a set algorithm and protocol are used unchecked (enqueue.cc);
//   - 2.21.5 - 2.25.1 (src/misc/tuner.cc): NCCL_TUNER_PLUGIN as given, then
//     libnccl-tuner-<value>.so; unset, libnccl-tuner.so; then NCCL_NET_PLUGIN
//     as given, then libnccl-net-<value>.so; unset, libnccl-net.so; v2 with a
//     context (2.21), v3 then v2 (2.22 - 2.23: the cost table replaces the
//     outputs), v4 then v3, v2 (2.24 - 2.25: regBuff added);
//   - 2.26 - 2.30 (src/plugin/tuner.cc, plugin_open.cc; nccl_loader.h): the
//     library as 2.28.9 opens it; v4 ... v2 (2.26 - 2.27), v5 ... v2 (2.28 -
//     2.29), v6 ... v2 (2.30).
// The cost table is float[algorithms][protocols]: 6 algorithms before 2.23
// (no PAT), 7 since.
//
// Thread-safety: the table is constant; a ReleaseTuner is used by one thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "nccl_plugin/abi/nccl_tuner_abi.h"
#include "tests/nccl_plugin/nccl_loader.h"

namespace rs::plugin::test {

struct NcclRelease {
  enum class TunerLib { kEnvOnly, kEnvThenNet, kPluginOpen };
  const char* name;  // "2.27.7"
  int code;          // ncclGetVersion's code
  TunerLib tuner_lib;
  std::vector<int> tuner_versions;  // looked up in this order
  int num_algorithms;
};

// 2.19.3, 2.20.5, 2.21.5, 2.22.3, 2.23.4, 2.24.3, 2.27.7, 2.28.9, 2.29.7, 2.30.7.
const std::vector<NcclRelease>& NcclReleases();

// The tuner library as `release` opens it, given NCCL_TUNER_PLUGIN and
// NCCL_NET_PLUGIN (nullptr: unset) and the net plugin it loaded.
NcclLibOpen OpenTunerLibAt(const NcclRelease& release, const char* tuner_env, const char* net_env,
                           const NcclNetLoad& net);

// One communicator's tuner, found and driven as `release` does.
class ReleaseTuner {
 public:
  // nullptr with *error set when the library has none of the versions the
  // release looks up, or init fails.
  static std::unique_ptr<ReleaseTuner> Create(const NcclRelease& release, void* lib, size_t nranks, size_t nnodes,
                                              abi::Logger logger, std::string* error);
  ~ReleaseTuner();  // destroy / finalize, as the release does at the communicator's end
  ReleaseTuner(const ReleaseTuner&) = delete;
  ReleaseTuner& operator=(const ReleaseTuner&) = delete;

  int version() const { return version_; }
  // The algorithm (abi::kAlgo*) NCCL runs a `bytes` all-reduce with: NCCL's
  // own estimates (the ring cheapest, CollNet Chain offered when
  // `collnet_supported`), the tuner's call, then NCCL's pick. -1 when the
  // tuner's call failed (NCCL then falls back to its own tuning).
  int AllReduceAlgorithm(size_t bytes, bool collnet_supported) const;
  // The raw call, for bad-input checks: the result code of getCollInfo with
  // this table shape (v3+) or these output pointers (v1, v2).
  abi::Result RawGetCollInfo(int coll_type, size_t bytes, int collnet_support, float* table, int num_algo,
                             int num_proto, int* algorithm, int* protocol) const;

 private:
  ReleaseTuner() = default;
  int version_ = 0;
  int num_algorithms_ = 7;
  const void* table_ = nullptr;  // abi::TunerV1 ... V5
  void* ctx_ = nullptr;
};

}  // namespace rs::plugin::test
