// The tuner slots (ncclTunerPlugin_v5): one CollNetTuner per communicator,
// and getCollInfo applying its choice to NCCL's cost table for all-reduce.
//
// Choosing the reducers makes CollNet's entry 0, so NCCL picks it; choosing
// NCCL's own algorithms marks CollNet's entries unavailable (-1), unless
// nothing else is available (NCCL_ALGO forcing CollNet), since an all-reduce
// with no algorithm left would fail. Entries NCCL marked unavailable (CollNet
// off, an unsupported type or op) are never made available.
//
// getCollInfo also tells the communicator's CollNetUsage where each
// all-reduce goes: NCCL picks the first smallest entry >= 0 after the call
// (enqueue.cc, topoGetAlgoInfo), which is recomputed here.
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

bool IsCollNet(int algo) { return algo == kAlgoCollNetChain || algo == kAlgoCollNetDirect; }

// Where NCCL will run this all-reduce; `offered`: whether NCCL's table had a
// CollNet entry before the tuner's change.
CollNetUsage::Route RouteOf(bool offered, const float (*table)[kNumProtocols]) {
  if (!offered) return CollNetUsage::Route::kNotOffered;
  int pick = -1;
  float best = 3.6e9f;  // NCCL's starting minimum
  for (int a = 0; a < kNumAlgorithms; ++a) {
    for (int p = 0; p < kNumProtocols; ++p) {
      if (table[a][p] == kAlgoProtoIgnore) continue;
      if (Available(table[a][p]) && table[a][p] < best) {
        best = table[a][p];
        pick = a;
      }
    }
  }
  return IsCollNet(pick) ? CollNetUsage::Route::kReducers : CollNetUsage::Route::kNccl;
}

bool CollNetOffered(const float (*table)[kNumProtocols]) {
  for (int a : {kAlgoCollNetChain, kAlgoCollNetDirect}) {
    for (int p = 0; p < kNumProtocols; ++p) {
      if (Available(table[a][p])) return true;
    }
  }
  return false;
}

}  // namespace

Result TunerInitV5(void** ctx, uint64_t comm_id, size_t nranks, size_t nnodes, Logger logger,
                   NvlDomainInfoV5* nvl_domain_info, TunerConstantsV5*) {
  // A failing tuner init fails NCCL's communicator init: a problem here is
  // logged and the tuner made inactive instead.
  return Guard("tuner init", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(ctx, "ctx"));
    *ctx = nullptr;
    InitLibrary(logger);
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    CommShape comm;
    comm.comm_id = comm_id;
    comm.ranks = nranks;
    comm.nodes = nnodes;
    if (nvl_domain_info != nullptr) comm.max_local_ranks = nvl_domain_info->maxRanksPerNvlDomain;
    CollNetTuner* tuner = plugin->CreateTuner(comm);
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
    auto* table = reinterpret_cast<float (*)[kNumProtocols]>(cost_table);
    const bool offered = CollNetOffered(table);
    Apply(tuner->ForAllReduce(nbytes), table);
    if (CollNetUsage* usage = tuner->usage()) usage->Record(nbytes, RouteOf(offered, table));
    return Status::Ok();
  });
}

Result TunerFinalize(void* ctx) {
  return Guard("tuner finalize", [&]() -> Outcome {
    if (ctx == nullptr) return Status::Ok();
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    RS_ABI_ASSIGN_OR_RETURN(tuner, plugin->FindTuner(ctx));
    if (CollNetUsage* usage = tuner->usage()) usage->Finish();  // a short-lived communicator
    return plugin->DestroyTuner(ctx);
  });
}

}  // namespace rs::plugin::abi
