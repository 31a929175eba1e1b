#include "nccl_plugin/collnet_watch.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "nccl_plugin/log.h"

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

void CollNetWatch::WarnOnce(Kind kind, const std::string& message) {
  if (warned_[kind].exchange(true, std::memory_order_relaxed)) return;
  RS_PLOG_WARN("%s", message.c_str());
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
        WarnOnce(kNodes, head + "Expected for a communicator inside one node. " + kSameHostHint +
                             " On one machine, each rank with its own NCCL_HOSTID counts as a node.");
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
