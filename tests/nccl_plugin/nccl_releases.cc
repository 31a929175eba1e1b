#include "tests/nccl_plugin/nccl_releases.h"

#include <dlfcn.h>

#include <cstring>

namespace rs::plugin::test {
namespace {

using abi::Result;
using Lib = NcclRelease::TunerLib;

// misc/tuner.cc's tryOpenDynamicLib (2.19 - 2.25): RTLD_LAZY | RTLD_LOCAL.
bool TryOpen(const std::string& name, NcclLibOpen* out) {
  if (name.empty()) return false;
  out->tried.push_back(name);
  void* handle = ::dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  out->handle = handle;
  out->name = name;
  return true;
}

bool Set(const char* v) { return v != nullptr && v[0] != '\0'; }

// NCCL's estimates for one all-reduce (microseconds): the ring cheapest in
// every protocol, the tree next, CollNet Chain Simple offered but dearer,
// so NCCL alone never picks it (NVIDIA/nccl#353).
void NcclCosts(float* t, int num_algo, size_t bytes, bool collnet) {
  for (int i = 0; i < num_algo * abi::kNumProtocols; ++i) t[i] = abi::kAlgoProtoIgnore;
  const float ring = 30.0f + static_cast<float>(bytes) / 1000.0f;
  for (int p = 0; p < abi::kNumProtocols; ++p) {
    t[abi::kAlgoRing * abi::kNumProtocols + p] = ring * (p == abi::kProtoSimple ? 1.0f : 1.5f);
    t[abi::kAlgoTree * abi::kNumProtocols + p] = ring * 1.2f;
  }
  if (collnet) t[abi::kAlgoCollNetChain * abi::kNumProtocols + abi::kProtoSimple] = ring * 2.0f;
}

// topoGetAlgoInfo: the first smallest entry >= 0.
int NcclPick(const float* t, int num_algo) {
  int best = -1;
  float min = 3.6e9f;
  for (int a = 0; a < num_algo; ++a) {
    for (int p = 0; p < abi::kNumProtocols; ++p) {
      const float c = t[a * abi::kNumProtocols + p];
      if (c >= 0 && c < min) {
        min = c;
        best = a;
      }
    }
  }
  return best;
}

}  // namespace

const std::vector<NcclRelease>& NcclReleases() {
  static const std::vector<NcclRelease> releases = {
      {"2.19.3", 21903, Lib::kEnvOnly, {1}, 6},
      {"2.20.5", 22005, Lib::kEnvOnly, {1}, 6},
      {"2.21.5", 22105, Lib::kEnvThenNet, {2}, 6},
      {"2.22.3", 22203, Lib::kEnvThenNet, {3, 2}, 6},
      {"2.23.4", 22304, Lib::kEnvThenNet, {3, 2}, 7},
      {"2.24.3", 22403, Lib::kEnvThenNet, {4, 3, 2}, 7},
      {"2.27.7", 22707, Lib::kPluginOpen, {4, 3, 2}, 7},
      {"2.28.9", 22809, Lib::kPluginOpen, {5, 4, 3, 2}, 7},
      {"2.29.7", 22907, Lib::kPluginOpen, {5, 4, 3, 2}, 7},
      {"2.30.7", 23007, Lib::kPluginOpen, {6, 5, 4, 3, 2}, 7},
  };
  return releases;
}

NcclLibOpen OpenTunerLibAt(const NcclRelease& release, const char* tuner_env, const char* net_env,
                           const NcclNetLoad& net) {
  NcclLibOpen out;
  switch (release.tuner_lib) {
    case Lib::kEnvOnly:
      if (Set(tuner_env)) TryOpen(tuner_env, &out);
      return out;
    case Lib::kEnvThenNet:
      if (Set(tuner_env)) {
        if (TryOpen(tuner_env, &out) || TryOpen(std::string("libnccl-tuner-") + tuner_env + ".so", &out)) return out;
      } else if (TryOpen("libnccl-tuner.so", &out)) {
        return out;
      }
      if (Set(net_env)) {
        if (TryOpen(net_env, &out) || TryOpen(std::string("libnccl-net-") + net_env + ".so", &out)) return out;
      } else if (TryOpen("libnccl-net.so", &out)) {
        return out;
      }
      return out;
    case Lib::kPluginOpen:
      return OpenTunerLib(tuner_env, net);
  }
  return out;
}

std::unique_ptr<ReleaseTuner> ReleaseTuner::Create(const NcclRelease& release, void* lib, size_t nranks,
                                                   size_t nnodes, abi::Logger logger, std::string* error) {
  std::unique_ptr<ReleaseTuner> t(new ReleaseTuner);
  t->num_algorithms_ = release.num_algorithms;
  for (int v : release.tuner_versions) {
    if (const void* sym = ::dlsym(lib, ("ncclTunerPlugin_v" + std::to_string(v)).c_str())) {
      t->version_ = v;
      t->table_ = sym;
      break;
    }
  }
  if (t->table_ == nullptr) {
    *error = std::string("NCCL ") + release.name + " finds no tuner it looks up in the library";
    return nullptr;
  }
  Result r = Result::kSuccess;
  switch (t->version_) {
    case 1: r = static_cast<const abi::TunerV1*>(t->table_)->init(nranks, nnodes, logger); break;
    case 2: r = static_cast<const abi::TunerV2*>(t->table_)->init(nranks, nnodes, logger, &t->ctx_); break;
    case 3: r = static_cast<const abi::TunerV3*>(t->table_)->init(nranks, nnodes, logger, &t->ctx_); break;
    case 4: r = static_cast<const abi::TunerV4*>(t->table_)->init(nranks, nnodes, logger, &t->ctx_); break;
    default: {
      // v5, and v6's fallback to it (2.30): the same init.
      abi::NvlDomainInfoV5 nvl{static_cast<int>(nnodes), 1, 1};
      r = static_cast<const abi::TunerV5*>(t->table_)->init(&t->ctx_, 0x5eed, nranks, nnodes, logger, &nvl, nullptr);
    }
  }
  if (r != Result::kSuccess) {
    *error = "tuner init returned " + std::to_string(static_cast<int>(r));
    t->table_ = nullptr;  // nothing to destroy
    return nullptr;
  }
  return t;
}

ReleaseTuner::~ReleaseTuner() {
  if (table_ == nullptr) return;
  switch (version_) {
    case 1: static_cast<const abi::TunerV1*>(table_)->destroy(); break;
    case 2: static_cast<const abi::TunerV2*>(table_)->destroy(ctx_); break;
    case 3: static_cast<const abi::TunerV3*>(table_)->destroy(ctx_); break;
    case 4: static_cast<const abi::TunerV4*>(table_)->destroy(ctx_); break;
    default: static_cast<const abi::TunerV5*>(table_)->finalize(ctx_);
  }
}

Result ReleaseTuner::RawGetCollInfo(int coll_type, size_t bytes, int collnet_support, float* table, int num_algo,
                                    int num_proto, int* algorithm, int* protocol) const {
  int channels = 0;
  float** cost = reinterpret_cast<float**>(table);
  switch (version_) {
    case 1:
      return static_cast<const abi::TunerV1*>(table_)->getCollInfo(coll_type, bytes, collnet_support, 0, 1,
                                                                    algorithm, protocol, &channels);
    case 2:
      return static_cast<const abi::TunerV2*>(table_)->getCollInfo(ctx_, coll_type, bytes, collnet_support, 0, 1,
                                                                    algorithm, protocol, &channels);
    case 3:
      return static_cast<const abi::TunerV3*>(table_)->getCollInfo(ctx_, coll_type, bytes, 1, cost, num_algo,
                                                                    num_proto, &channels);
    case 4:
      return static_cast<const abi::TunerV4*>(table_)->getCollInfo(ctx_, coll_type, bytes, 1, cost, num_algo,
                                                                    num_proto, 0, &channels);
    default:
      return static_cast<const abi::TunerV5*>(table_)->getCollInfo(ctx_, coll_type, bytes, 1, cost, num_algo,
                                                                    num_proto, 0, &channels);
  }
}

int ReleaseTuner::AllReduceAlgorithm(size_t bytes, bool collnet_supported) const {
  float table[abi::kNumAlgorithms * abi::kNumProtocols];
  NcclCosts(table, num_algorithms_, bytes, collnet_supported);
  if (version_ <= 2) {
    // v1, v2: outputs; NCCL_ALGO_UNDEF (-1) until the tuner sets them, and
    // NCCL's own pick when it sets neither.
    int algorithm = -1, protocol = -1;
    if (RawGetCollInfo(abi::kFuncAllReduce, bytes, collnet_supported ? 1 : 0, nullptr, 0, 0, &algorithm, &protocol) !=
        Result::kSuccess) {
      return -1;
    }
    return algorithm >= 0 && protocol >= 0 ? algorithm : NcclPick(table, num_algorithms_);
  }
  if (RawGetCollInfo(abi::kFuncAllReduce, bytes, 0, table, num_algorithms_, abi::kNumProtocols, nullptr, nullptr) !=
      Result::kSuccess) {
    return -1;
  }
  return NcclPick(table, num_algorithms_);
}

}  // namespace rs::plugin::test
