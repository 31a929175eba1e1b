// The tuner slots of every version (ncclTunerPlugin_v1 ... _v5): one
// CollNetTuner per communicator, the same cost model deciding in every
// version, applied the way each version lets a tuner decide.
//
// v3 - v5 get NCCL's cost table. Choosing the reducers makes CollNet's entry
// 0, so NCCL picks it; choosing NCCL's own algorithms marks CollNet's entries
// unavailable (-1), unless nothing else is available (NCCL_ALGO forcing
// CollNet), since an all-reduce with no algorithm left would fail. Entries
// NCCL marked unavailable (CollNet off, an unsupported type or op) are never
// made available. NCCL picks the first smallest entry >= 0 after the call
// (enqueue.cc, topoGetAlgoInfo), which is recomputed here for CollNetUsage.
//
// v1 - v2 get no table: the tuner sets the algorithm and protocol itself, and
// NCCL uses them unchecked (2.19 - 2.21 enqueue.cc, getAlgoInfo). So the
// reducers are chosen only where NCCL says CollNet supports the collective
// (collNetSupport == 1), as CollNet Chain with the Simple protocol, the only
// pair CollNet runs without NVSwitch; otherwise nothing is set and NCCL's own
// model decides.
//
// v1 has no context: NCCL 2.19 - 2.20 keep one tuner per process and call
// init per communicator. Each init's tuner joins a list; getCollInfo uses the
// newest, destroy releases the oldest.
#include <atomic>
#include <deque>
#include <mutex>

#include "nccl_plugin/abi/abi_support.h"
#include "nccl_plugin/abi/slots.h"

namespace rs::plugin::abi {
namespace {

// NCCL's cost table: `rows` algorithms of `cols` protocols, row-major.
class CostTable {
 public:
  CostTable(float* cells, int rows, int cols) : cells_(cells), rows_(rows), cols_(cols) {}
  float& at(int a, int p) const { return cells_[a * cols_ + p]; }
  int rows() const { return rows_; }
  int cols() const { return cols_; }

 private:
  float* cells_;
  int rows_, cols_;
};

bool Available(float cost) { return cost >= 0; }
bool IsCollNet(int algo) { return algo == kAlgoCollNetChain || algo == kAlgoCollNetDirect; }

bool CollNetOffered(const CostTable& t) {
  for (int a : {kAlgoCollNetChain, kAlgoCollNetDirect}) {
    for (int p = 0; p < t.cols(); ++p) {
      if (Available(t.at(a, p))) return true;
    }
  }
  return false;
}

void Apply(CollNetTuner::Choice choice, const CostTable& t) {
  if (choice == CollNetTuner::Choice::kUnchanged) return;
  const bool chain = Available(t.at(kAlgoCollNetChain, kProtoSimple));
  const bool direct = Available(t.at(kAlgoCollNetDirect, kProtoSimple));
  if (!chain && !direct) return;  // CollNet not available for this collective
  if (choice == CollNetTuner::Choice::kReducers) {
    // Chain: every node's head hands whole chunks to the reducers; Direct
    // (NVSwitch nodes) only when Chain is not offered.
    t.at(chain ? kAlgoCollNetChain : kAlgoCollNetDirect, kProtoSimple) = 0.0f;
    return;
  }
  bool other = false;
  for (int a = 0; a < t.rows(); ++a) {
    if (IsCollNet(a)) continue;
    for (int p = 0; p < t.cols(); ++p) other = other || Available(t.at(a, p));
  }
  if (!other) return;
  for (int a : {kAlgoCollNetChain, kAlgoCollNetDirect}) {
    for (int p = 0; p < t.cols(); ++p) t.at(a, p) = kAlgoProtoIgnore;
  }
}

// Where NCCL will run this all-reduce; `offered`: whether NCCL's table had a
// CollNet entry before the tuner's change.
CollNetUsage::Route RouteOf(bool offered, const CostTable& t) {
  if (!offered) return CollNetUsage::Route::kNotOffered;
  int pick = -1;
  float best = 3.6e9f;  // NCCL's starting minimum
  for (int a = 0; a < t.rows(); ++a) {
    for (int p = 0; p < t.cols(); ++p) {
      if (Available(t.at(a, p)) && t.at(a, p) < best) {
        best = t.at(a, p);
        pick = a;
      }
    }
  }
  return IsCollNet(pick) ? CollNetUsage::Route::kReducers : CollNetUsage::Route::kNccl;
}

// Tuner init of every version. A failing tuner init fails NCCL's
// communicator init: a problem here is logged and the tuner made inactive
// instead, unless REDUCER_REQUIRED asks for exactly that (Plugin::CreateTuner).
Result InitTuner(void** ctx, const CommShape& comm, Logger logger) {
  return Guard("tuner init", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(ctx, "ctx"));
    *ctx = nullptr;
    InitLibrary(logger);
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    RS_ABI_ASSIGN_OR_RETURN(tuner, plugin->CreateTuner(comm));
    RS_PLOG_INFO("%s", tuner->Describe().c_str());
    *ctx = OpaqueObject::ToOpaque(tuner);
    return Status::Ok();
  });
}

// v1 - v4 know no communicator hash: a process-local number names the
// communicator in the log instead.
CommShape ShapeWithoutHash(size_t nranks, size_t nnodes) {
  static std::atomic<uint64_t> next{1};
  CommShape comm;
  comm.comm_id = next.fetch_add(1, std::memory_order_relaxed);
  comm.ranks = nranks;
  comm.nodes = nnodes;
  return comm;
}

Result GetCollInfoFromTable(void* ctx, int coll_type, size_t nbytes, float** cost_table, int num_algo,
                            int num_proto) {
  return Guard("tuner getCollInfo", [&]() -> Outcome {
    if (coll_type != kFuncAllReduce) return Status::Ok();
    RS_RETURN_IF_ERROR(NonNull(cost_table, "collCostTable"));
    if (num_algo < kMinAlgorithms || num_algo > 64 || num_proto <= kProtoSimple || num_proto > 64) {
      return Status::Ok();  // a table of another shape: not ours to interpret
    }
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    RS_ABI_ASSIGN_OR_RETURN(tuner, plugin->FindTuner(ctx));
    // NCCL passes its float[algorithms][protocols] array as float**.
    const CostTable table(reinterpret_cast<float*>(cost_table), num_algo, num_proto);
    const bool offered = CollNetOffered(table);
    Apply(tuner->ForAllReduce(nbytes), table);
    if (CollNetUsage* usage = tuner->usage()) usage->Record(nbytes, RouteOf(offered, table));
    return Status::Ok();
  });
}

Result GetCollInfoAsOutputs(void* ctx, int coll_type, size_t nbytes, int collnet_support, int* algorithm,
                            int* protocol) {
  return Guard("tuner getCollInfo", [&]() -> Outcome {
    if (coll_type != kFuncAllReduce) return Status::Ok();
    RS_RETURN_IF_ERROR(NonNull(algorithm, "algorithm"));
    RS_RETURN_IF_ERROR(NonNull(protocol, "protocol"));
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    RS_ABI_ASSIGN_OR_RETURN(tuner, plugin->FindTuner(ctx));
    CollNetUsage::Route route = CollNetUsage::Route::kNotOffered;
    if (collnet_support == 1) {
      const CollNetTuner::Choice choice = tuner->ForAllReduce(nbytes);
      if (choice == CollNetTuner::Choice::kReducers) {
        *algorithm = kAlgoCollNetChain;
        *protocol = kProtoSimple;
      }
      // kNccl: nothing set, NCCL's own model picks (it rarely picks CollNet
      // on its own, but this version cannot take CollNet out).
      route = choice == CollNetTuner::Choice::kReducers ? CollNetUsage::Route::kReducers : CollNetUsage::Route::kNccl;
    }
    if (CollNetUsage* usage = tuner->usage()) usage->Record(nbytes, route);
    return Status::Ok();
  });
}

Result DestroyTuner(void* ctx) {
  return Guard("tuner destroy", [&]() -> Outcome {
    if (ctx == nullptr) return Status::Ok();
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    RS_ABI_ASSIGN_OR_RETURN(tuner, plugin->FindTuner(ctx));
    if (CollNetUsage* usage = tuner->usage()) usage->Finish();  // a short-lived communicator
    return plugin->DestroyTuner(ctx);
  });
}

// v1's per-process list of live tuners (oldest first). A static object, not
// a leaked allocation: the library is unloaded and loaded again (dlclose),
// and LeakSanitizer counts an orphaned allocation as a leak.
std::mutex g_v1_mu;
std::deque<void*> g_v1_tuners;
std::deque<void*>& V1Tuners() { return g_v1_tuners; }

void* NewestV1Tuner() {
  std::lock_guard<std::mutex> lock(g_v1_mu);
  return V1Tuners().empty() ? nullptr : V1Tuners().back();
}

}  // namespace

Result TunerInitV1(size_t nranks, size_t nnodes, Logger logger) {
  void* ctx = nullptr;
  const Result r = InitTuner(&ctx, ShapeWithoutHash(nranks, nnodes), logger);
  if (ctx != nullptr) {
    std::lock_guard<std::mutex> lock(g_v1_mu);
    V1Tuners().push_back(ctx);
  }
  return r;
}

Result TunerGetCollInfoV1(int coll_type, size_t nbytes, int collnet_support, int, int, int* algorithm, int* protocol,
                          int*) {
  void* ctx = NewestV1Tuner();
  if (ctx == nullptr) return Result::kSuccess;  // init failed or made none: NCCL's own tuning
  return GetCollInfoAsOutputs(ctx, coll_type, nbytes, collnet_support, algorithm, protocol);
}

Result TunerDestroyV1() {
  void* ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_v1_mu);
    if (V1Tuners().empty()) return Result::kSuccess;
    ctx = V1Tuners().front();
    V1Tuners().pop_front();
  }
  return DestroyTuner(ctx);
}

Result TunerInitV2(size_t nranks, size_t nnodes, Logger logger, void** ctx) {
  return InitTuner(ctx, ShapeWithoutHash(nranks, nnodes), logger);
}

Result TunerGetCollInfoV2(void* ctx, int coll_type, size_t nbytes, int collnet_support, int, int, int* algorithm,
                          int* protocol, int*) {
  return GetCollInfoAsOutputs(ctx, coll_type, nbytes, collnet_support, algorithm, protocol);
}

Result TunerGetCollInfoV3(void* ctx, int coll_type, size_t nbytes, int, float** cost_table, int num_algo,
                          int num_proto, int*) {
  return GetCollInfoFromTable(ctx, coll_type, nbytes, cost_table, num_algo, num_proto);
}

Result TunerInitV5(void** ctx, uint64_t comm_id, size_t nranks, size_t nnodes, Logger logger,
                   NvlDomainInfoV5* nvl_domain_info, TunerConstantsV5*) {
  CommShape comm;
  comm.comm_id = comm_id;
  comm.ranks = nranks;
  comm.nodes = nnodes;
  if (nvl_domain_info != nullptr) comm.max_local_ranks = nvl_domain_info->maxRanksPerNvlDomain;
  return InitTuner(ctx, comm, logger);
}

Result TunerGetCollInfo(void* ctx, int coll_type, size_t nbytes, int, float** cost_table, int num_algo,
                        int num_proto, int, int*) {
  return GetCollInfoFromTable(ctx, coll_type, nbytes, cost_table, num_algo, num_proto);
}

Result TunerFinalize(void* ctx) { return DestroyTuner(ctx); }

}  // namespace rs::plugin::abi
