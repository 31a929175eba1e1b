// The tuner slots (ncclTunerPlugin_v5): one CollNetTuner per communicator,
// and getCollInfo applying its choice to NCCL's cost table for all-reduce.
//
// Choosing the reducers makes CollNet's entry 0, so NCCL picks it; choosing
// NCCL's own algorithms marks CollNet's entries unavailable (-1), unless
// nothing else is available (NCCL_ALGO forcing CollNet), since an all-reduce
// with no algorithm left would fail. Entries NCCL marked unavailable (CollNet
// off, an unsupported type or op) are never made available.
#include "nccl_plugin/abi/abi_support.h"
#include "nccl_plugin/abi/slots.h"

namespace rs::plugin::abi {
namespace {

bool Available(float cost) { return cost >= 0; }

void Apply(CollNetTuner::Choice choice, float (*table)[kNumProtocols]) {
  if (choice == CollNetTuner::Choice::kUnchanged) return;
  const bool chain = Available(table[kAlgoCollNetChain][kProtoSimple]);
  const bool direct = Available(table[kAlgoCollNetDirect][kProtoSimple]);
  if (!chain && !direct) return;  // CollNet not available for this collective
  if (choice == CollNetTuner::Choice::kReducers) {
    // Chain: every node's head hands whole chunks to the reducers; Direct
    // (NVSwitch nodes) only when Chain is not offered.
    table[chain ? kAlgoCollNetChain : kAlgoCollNetDirect][kProtoSimple] = 0.0f;
    return;
  }
  bool other = false;
  for (int a = 0; a < kNumAlgorithms; ++a) {
    if (a == kAlgoCollNetChain || a == kAlgoCollNetDirect) continue;
    for (int p = 0; p < kNumProtocols; ++p) other = other || Available(table[a][p]);
  }
  if (!other) return;
  for (int a : {kAlgoCollNetChain, kAlgoCollNetDirect}) {
    for (int p = 0; p < kNumProtocols; ++p) table[a][p] = kAlgoProtoIgnore;
  }
}

}  // namespace

Result TunerInitV5(void** ctx, uint64_t, size_t nranks, size_t nnodes, Logger logger, NvlDomainInfoV5*,
                   TunerConstantsV5*) {
  // A failing tuner init fails NCCL's communicator init: a problem here is
  // logged and the tuner made inactive instead.
  return Guard("tuner init", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(ctx, "ctx"));
    *ctx = nullptr;
    InitLibrary(logger);
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    CollNetTuner* tuner = plugin->CreateTuner(nranks, nnodes);
    RS_PLOG_INFO("%s", tuner->Describe().c_str());
    *ctx = OpaqueObject::ToOpaque(tuner);
    return Status::Ok();
  });
}

Result TunerGetCollInfo(void* ctx, int coll_type, size_t nbytes, int, float** cost_table, int num_algo,
                        int num_proto, int, int*) {
  return Guard("tuner getCollInfo", [&]() -> Outcome {
    if (coll_type != kFuncAllReduce) return Status::Ok();
    RS_RETURN_IF_ERROR(NonNull(cost_table, "collCostTable"));
    if (num_algo != kNumAlgorithms || num_proto != kNumProtocols) {
      return Status::Ok();  // a table of another shape: not ours to interpret
    }
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    RS_ABI_ASSIGN_OR_RETURN(tuner, plugin->FindTuner(ctx));
    // NCCL passes its float[algorithms][protocols] array as float**.
    Apply(tuner->ForAllReduce(nbytes), reinterpret_cast<float (*)[kNumProtocols]>(cost_table));
    return Status::Ok();
  });
}

Result TunerFinalize(void* ctx) {
  return Guard("tuner finalize", [&]() -> Outcome {
    if (ctx == nullptr) return Status::Ok();
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    return plugin->DestroyTuner(ctx);
  });
}

}  // namespace rs::plugin::abi
