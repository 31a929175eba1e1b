#include "nccl_plugin/report/collnet_watch.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "nccl_plugin/nccl_releases.h"
#include "nccl_plugin/report/nccl_version.h"
#include "nccl_plugin/report/report.h"

namespace rs::plugin {
namespace {

// The part every communicator message starts with.
std::string CommName(const CommShape& comm) {
  char id[40];
  std::snprintf(id, sizeof(id), "communicator %016" PRIx64, comm.comm_id);
  return id;
}

// NCCL counts ranks as one node when their host hashes (hostname and boot
// id, or NCCL_HOSTID) match: containers sharing a hostname do.
constexpr const char* kSameHostHint =
    "If these ranks run on different hosts, NCCL counted them as one node because their host hashes match "
    "(same hostname and boot id, e.g. containers): give each host its own NCCL_HOSTID.";

}  // namespace

CollNetWatch::CollNetWatch(CollNetSetup setup) : setup_(std::move(setup)) {}

void CollNetWatch::WarnOnce(Kind kind, const std::string& message, bool fails) {
  if (setup_.required && fails) {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (failure_.ok()) {
      failure_ = Status(Code::kInvalidArgument, "REDUCER_REQUIRED=1 and the reducers will not be used: " + message);
      failed_.store(true, std::memory_order_release);
    }
  }
  if (warned_[kind].exchange(true, std::memory_order_relaxed)) return;
  ReportWarn(setup_.required && fails ? message + " REDUCER_REQUIRED=1: the job fails." : message);
}

Status CollNetWatch::required_failure() const {
  std::lock_guard<std::mutex> lock(failure_mu_);
  return failure_;
}

void CollNetWatch::CollNetConnected() { collnet_connected_.store(true, std::memory_order_release); }

void CollNetWatch::ConnectFailed(const Status& status) {
  WarnOnce(kConnect, "CollNet could not connect to the reducers (" + setup_.reducers_text + "): " + status.message() +
                         ". NCCL runs this communicator without CollNet: every all-reduce takes NCCL's own "
                         "algorithms, about half the speed at scale. Fix: start the reducers first, check the "
                         "addresses (REDUCER_ADDRS or CLUSTER_SPEC) and the job token; `reducerctl doctor` checks "
                         "each reducer from this machine. REDUCER_REQUIRED=1 fails the job instead.");
}

void CollNetWatch::CommunicatorReady(const CommShape& comm, const CostModel& model) {
  if (!collnet_connected_.load(std::memory_order_acquire)) return;  // not a node head: its head reports
  if (setup_.nccl.algo_forces_collnet) {
    // NCCL_ALGO leaves NCCL no other algorithm: the tuner cannot send any
    // size elsewhere, and the model's view is moot.
    if (!warned_[kUsing].exchange(true, std::memory_order_relaxed)) ReportInfo(ForcedLine());
    return;
  }
  constexpr size_t kLargest = size_t{1} << 40;
  if (!model.PreferReducers(kLargest)) {
    // The fewest reducers with which the model sends the largest sizes to
    // the reducers too (bounded: a ring of 2 nodes never loses).
    CostModelParams params = model.params();
    int needed = 0;
    for (int r = params.reducers + 1; r <= 4 * params.nodes + 4; ++r) {
      params.reducers = r;
      if (CostModel(params).PreferReducers(kLargest)) {
        needed = r;
        break;
      }
    }
    std::string fix = needed > 0 ? "Fix: " + std::to_string(needed) +
                                       " reducers with links as fast as the nodes' (the reducers together need "
                                       "the nodes' total bandwidth; `reducerctl plan` sizes a job)."
                                 : "With " + std::to_string(params.nodes) +
                                       " nodes a ring moves no more bytes than the reducers: expected.";
    WarnOnce(kFewReducers, CommName(comm) + ": " + model.Describe() + ". " + fix);
    return;
  }
  if (warned_[kUsing].exchange(true, std::memory_order_relaxed)) return;
  ReportInfo("using " + setup_.reducers_text + ", " + setup_.wire_text + "; " + CommName(comm) + ": " +
             model.Describe() + ". (REDUCER_LOG=warn hides this line.)");
}

std::string CollNetWatch::ForcedLine() const {
  return "using " + setup_.reducers_text + ", " + setup_.wire_text + "; NCCL_ALGO=" + setup_.nccl.algo +
         " sends every all-reduce NCCL can run on CollNet to them. (REDUCER_LOG=warn hides this line.)";
}

std::string CollNetWatch::NoTunerFix() const {
  const int v = setup_.nccl_version;
  const NcclRelease* release = v > 0 ? FindNcclRelease(NcclVersionFromCode(v)) : nullptr;
  const std::string nccl = NcclVersionText(v);
  // The NCCL_ALGO value that forces CollNet on this release (both forms when unknown).
  const std::string force = release != nullptr
                                ? "NCCL_ALGO=" + release->force_collnet
                                : "NCCL_ALGO=allreduce:collnetchain (NCCL 2.24+; NCCL_ALGO=CollNetChain before)";
  if (!setup_.nccl.tuner_plugin.empty() && setup_.nccl.tuner_plugin.find("nccl-net-reducer") == std::string::npos) {
    return "NCCL_TUNER_PLUGIN=" + setup_.nccl.tuner_plugin +
           " gives NCCL another tuner, which does not choose CollNet. Fix: unset it (or set "
           "NCCL_TUNER_PLUGIN=libnccl-net-reducer.so), or force CollNet with " + force + ".";
  }
  if (release != nullptr && release->tuner_search == TunerSearch::kNone) {
    return nccl + " has no tuner interface. Fix: " + force + ".";
  }
  if (release != nullptr && release->tuner_search == TunerSearch::kTunerLibraryOnly) {
    return nccl + " takes a tuner only from the library NCCL_TUNER_PLUGIN names. Fix: "
                  "NCCL_TUNER_PLUGIN=libnccl-net-reducer.so (LD_PRELOAD of the plugin sets it for you), or " +
           force + ".";
  }
  return nccl + " loaded no tuner from the plugin (is NCCL_NET_PLUGIN naming it, or a libnccl-tuner.so "
                "found first?). Fix: NCCL_TUNER_PLUGIN=libnccl-net-reducer.so, or force CollNet with " + force + ".";
}

void CollNetWatch::FirstTransfer() {
  if (first_transfer_seen_.load(std::memory_order_relaxed) || first_transfer_seen_.exchange(true)) return;
  if (!collnet_connected_.load(std::memory_order_acquire) || tuner_created_.load(std::memory_order_acquire)) return;
  if (setup_.nccl.algo_forces_collnet) {
    if (!warned_[kUsing].exchange(true, std::memory_order_relaxed)) ReportInfo(ForcedLine());
    return;
  }
  WarnOnce(kNoTuner, "CollNet is connected to " + setup_.reducers_text +
                         ", but NCCL will not choose it: no tuner of the plugin's was created and NCCL_ALGO does "
                         "not name CollNet, and NCCL's own tuning does not pick CollNet. " +
                         NoTunerFix());
}

void CollNetWatch::CheckSetup() {
  if (!setup_.reducers) return;
  if (!setup_.nccl.enabled) {
    off_everywhere_ = true;
    const std::string value =
        setup_.nccl.enable_text.empty() ? "not set" : "'" + setup_.nccl.enable_text + "', not 1";
    WarnOnce(kEnable, "NCCL_COLLNET_ENABLE is " + value +
                          ": NCCL leaves CollNet off and never uses the reducers configured, without an error; "
                          "every all-reduce takes NCCL's own algorithms. Fix: NCCL_COLLNET_ENABLE=1 on every rank (an "
                          "application that sets collnetEnable=1 in its ncclConfig_t can ignore this).");
  }
  if (setup_.nic_speed_mbps > 0 && setup_.nic_speed_mbps < kMinCollNetMbps) {
    off_everywhere_ = true;
    WarnOnce(kNicSpeed,
             "net device 0 (" + setup_.nic_name + ") reports " + std::to_string(setup_.nic_speed_mbps) +
                 " Mbit/s (" + setup_.nic_speed_source + "), below the " + std::to_string(kMinCollNetMbps) +
                 " Mbit/s NCCL needs for CollNet (its topology search tries no rate below 0.12 GB/s): NCCL "
                 "leaves CollNet off and never uses the reducers, without an error. Fix: a faster interface "
                 "(REDUCER_SOCKET_IFNAME), or, where the link is faster than the interface says, "
                 "REDUCER_NIC_SPEED=<its rate, e.g. 10Gbit>, the same on every node.");
  }
}

bool CollNetWatch::CheckCommunicator(const CommShape& comm) {
  // (a) or (d) already explained why no communicator uses the reducers.
  if (!setup_.reducers || off_everywhere_) return false;
  const size_t threshold = static_cast<size_t>(std::max(setup_.nccl.node_threshold, 0));
  if (comm.nodes < threshold) {
    // A single rank has nothing to reduce over the network; a communicator
    // below the threshold after one that reached it is a sub-communicator.
    if (comm.ranks > 1 && !multi_node_seen_.load(std::memory_order_relaxed)) {
      const std::string head = CommName(comm) + " has its " + std::to_string(comm.ranks) + " ranks on " +
                               std::to_string(comm.nodes) + " node(s), fewer than NCCL_COLLNET_NODE_THRESHOLD=" +
                               std::to_string(threshold) + ": NCCL does not use CollNet (the reducers) for it. ";
      if (comm.nodes >= 2) {
        WarnOnce(kNodes, head + "Fix: NCCL_COLLNET_NODE_THRESHOLD=" + std::to_string(comm.nodes) +
                             " or lower (NCCL's default is 2).");
      } else {
        // Not an error under REDUCER_REQUIRED: a job may hold communicators
        // inside a node beside the one that uses the reducers.
        WarnOnce(kNodes,
                 head + "Expected for a communicator inside one node. " + kSameHostHint +
                     " On one machine, each rank with its own NCCL_HOSTID counts as a node.",
                 /*fails=*/false);
      }
    }
    return false;
  }
  if (comm.nodes < 2) return false;  // a threshold of 0 or 1: nothing goes over the network anyway
  multi_node_seen_.store(true, std::memory_order_relaxed);
  // NCCL passes the most ranks on one node (NVLink domain info); without
  // it, the average is a lower bound.
  const bool known = comm.max_local_ranks > 0;
  const size_t local = known ? static_cast<size_t>(comm.max_local_ranks)
                             : (comm.nodes ? (comm.ranks + comm.nodes - 1) / comm.nodes : comm.ranks);
  if (local > static_cast<size_t>(kMaxCollNetLocalRanks)) {
    WarnOnce(kLocalRanks, CommName(comm) + " has " + (known ? "" : "at least ") + std::to_string(local) +
                              " ranks on one node (" + std::to_string(comm.ranks) + " ranks on " +
                              std::to_string(comm.nodes) + " nodes), more than the " +
                              std::to_string(kMaxCollNetLocalRanks) +
                              " with which NCCL 2.28 offers CollNet: the reducers are not used for it. Fix: at "
                              "most " + std::to_string(kMaxCollNetLocalRanks) +
                              " GPUs per node in a communicator. " + kSameHostHint);
    return false;
  }
  return true;
}

}  // namespace rs::plugin
