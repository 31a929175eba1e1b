// Our own declaration of NCCL's tuner interface, versions 1 to 5, each as
// NCCL's ext-tuner/example/nccl/tuner.h declares it at the release that
// introduced it (facts: docs/engineering/nccl-interface.md, "Tuner"):
//
//   v1  NCCL 2.19 - 2.20, only from the library NCCL_TUNER_PLUGIN names; no
//       context (one tuner per process); getCollInfo sets the algorithm
//       and protocol itself, given whether CollNet supports the collective
//   v2  NCCL 2.21 (and 2.22 - 2.30 as a fallback): v1 with a context
//   v3  NCCL 2.22 - 2.23: NCCL's cost table instead of outputs
//   v4  NCCL 2.24 - 2.27: v3 plus regBuff
//   v5  NCCL 2.28 - 2.29 (2.30 after v6): init with the communicator's hash,
//       its NVLink domains and NCCL's constants; destroy is `finalize`
//
// From 2.21, when NCCL_TUNER_PLUGIN is unset and no libnccl-tuner.so is
// found, NCCL looks for the tuner in the library that gave it the network
// plugin, so ours is served from libnccl-net-reducer.so.
//
// getCollInfo receives NCCL's cost table for one collective: a
// float[kNumAlgorithms][kNumProtocols] array (passed as float**), each entry
// NCCL's estimated time in microseconds, or -1 where the algorithm/protocol
// is unavailable. NCCL picks the smallest entry >= 0 after the call. Facts:
// docs/engineering/nccl-interface.md, "Tuner".
//
// Only the ABI layer and the ABI tests include this file.
//
// Thread-safety: declarations only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl_plugin/abi/nccl_abi.h"

namespace rs::plugin::abi {

// ncclFunc_t
inline constexpr int kFuncBroadcast = 0, kFuncReduce = 1, kFuncAllGather = 2, kFuncReduceScatter = 3,
                     kFuncAllReduce = 4;

// Rows and columns of the cost table.
inline constexpr int kAlgoTree = 0, kAlgoRing = 1, kAlgoCollNetDirect = 2, kAlgoCollNetChain = 3, kAlgoNvls = 4,
                     kAlgoNvlsTree = 5, kAlgoPat = 6;
inline constexpr int kNumAlgorithms = 7;
inline constexpr int kProtoLL = 0, kProtoLL128 = 1, kProtoSimple = 2;
inline constexpr int kNumProtocols = 3;
inline constexpr float kAlgoProtoIgnore = -1.0f;  // NCCL_ALGO_PROTO_IGNORE

// ncclNvlDomainInfo_v5_t, read-only input. NCCL 2.28 fills it with its node
// counts (init.cc, initNvlDomainInfo): the plugin reads the most ranks on
// one node, beyond which NCCL offers no CollNet.
struct NvlDomainInfoV5 {
  int nNvlDomains;           // nodes
  int minRanksPerNvlDomain;  // fewest ranks on one node
  int maxRanksPerNvlDomain;  // most ranks on one node
};
static_assert(sizeof(NvlDomainInfoV5) == 12);
static_assert(offsetof(NvlDomainInfoV5, maxRanksPerNvlDomain) == 8);
struct TunerConstantsV5;  // NCCL's latency/bandwidth constants; in/out, we leave them

// v1 - v4 (identical but for the arguments shown).
struct TunerV1 {
  const char* name;
  Result (*init)(size_t nRanks, size_t nNodes, Logger logger);
  Result (*getCollInfo)(int collType, size_t nBytes, int collNetSupport, int nvlsSupport, int numPipeOps,
                        int* algorithm, int* protocol, int* nChannels);
  Result (*destroy)();
};
struct TunerV2 {
  const char* name;
  Result (*init)(size_t nRanks, size_t nNodes, Logger logger, void** ctx);
  Result (*getCollInfo)(void* ctx, int collType, size_t nBytes, int collNetSupport, int nvlsSupport,
                        int numPipeOps, int* algorithm, int* protocol, int* nChannels);
  Result (*destroy)(void* ctx);
};
struct TunerV3 {
  const char* name;
  Result (*init)(size_t nRanks, size_t nNodes, Logger logger, void** ctx);
  Result (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                        int numAlgo, int numProto, int* nChannels);
  Result (*destroy)(void* ctx);
};
struct TunerV4 {
  const char* name;
  Result (*init)(size_t nRanks, size_t nNodes, Logger logger, void** ctx);
  Result (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                        int numAlgo, int numProto, int regBuff, int* nChannels);
  Result (*destroy)(void* ctx);
};
// Four pointer-sized slots each, in this order.
template <typename T>
constexpr bool kFourSlots = sizeof(T) == 32 && offsetof(T, name) == 0 && offsetof(T, init) == 8 &&
                            offsetof(T, getCollInfo) == 16 && offsetof(T, destroy) == 24;
static_assert(kFourSlots<TunerV1> && kFourSlots<TunerV2> && kFourSlots<TunerV3> && kFourSlots<TunerV4>);

// The cost table's shape: NCCL 2.22 passes 6 algorithms (no PAT), 2.23 and
// later 7; the CollNet rows are 2 and 3 in every release.
inline constexpr int kMinAlgorithms = 4;

struct TunerV5 {
  const char* name;
  Result (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, Logger logger,
                 NvlDomainInfoV5* nvlDomainInfo, TunerConstantsV5* constants);
  Result (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                        int numAlgo, int numProto, int regBuff, int* nChannels);
  Result (*finalize)(void* ctx);
};
static_assert(sizeof(TunerV5) == 32);
static_assert(offsetof(TunerV5, name) == 0 && offsetof(TunerV5, init) == 8 &&
              offsetof(TunerV5, getCollInfo) == 16 && offsetof(TunerV5, finalize) == 24);

}  // namespace rs::plugin::abi
