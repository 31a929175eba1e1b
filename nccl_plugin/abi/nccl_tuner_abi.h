// Our own declaration of NCCL's tuner interface, version 5 (NCCL 2.28 and
// 2.29 look for `ncclTunerPlugin_v5` first; 2.30 for v6, then v5). When
// NCCL_TUNER_PLUGIN is unset and no libnccl-tuner.so is found, NCCL looks
// for the tuner in the library that gave it the network plugin
// (plugin/tuner.cc), so ours is served from libnccl-net-reducer.so.
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
