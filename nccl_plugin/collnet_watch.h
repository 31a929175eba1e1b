// "No silent fallback": NCCL leaves CollNet, and so the reducers, off without
// an error in several cases. When reducers are configured, the plugin tells
// the user once, at WARN, with the fix, for each case it can see:
//
//   at library init (CheckSetup), once per process:
//     a) NCCL_COLLNET_ENABLE is not 1 (NCCL's default is 0);
//     d) net device 0, which CollNet's device is named after, reports less
//        than 960 Mbit/s: NCCL's graph search tries no rate below 0.12 GB/s
//        (graph/search.cc, speedArrayInter; a NIC's rate is Mbit/s / 8000,
//        graph/topo.cc), finds no CollNet channel and turns CollNet off
//        (init.cc);
//   at tuner init, per communicator (CheckCommunicator), once per process:
//     b) fewer nodes than NCCL_COLLNET_NODE_THRESHOLD (init.cc);
//     c) more than 8 ranks on one node: NCCL 2.28 offers neither CollNet
//        Chain nor Direct then (enqueue.cc, updateCollCostTable:
//        maxLocalRanks > NCCL_MAX_DIRECT_ARITY + 1).
// The last case, CollNet offered but no all-reduce reaching the reducers,
// is the tuner's to see (tuner/collnet_usage.h); it watches only the
// communicators none of the above explains.
//
// (b), (c) and the usage watch rely on NCCL's tuner interface (NCCL 2.28+,
// when NCCL loads our tuner); older NCCL gets (a) and (d) only.
//
// Thread-safety: CheckSetup runs once, before any other call; the other
// methods may be called from any thread (the once-flags are atomic).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl_plugin/config/plugin_config.h"

namespace rs::plugin {

// NCCL's floor for a CollNet device's reported speed: 0.12 GB/s x 8000.
inline constexpr int kMinCollNetMbps = 960;
// NCCL_MAX_DIRECT_ARITY + 1 in NCCL 2.28: the most ranks per node with CollNet.
inline constexpr int kMaxCollNetLocalRanks = 8;

// What the plugin knows when the library initialises.
struct CollNetSetup {
  bool reducers = false;  // reducers configured, CollNet reports a device
  NcclCollNetSettings nccl;
  std::string nic_name;         // net device 0
  int nic_speed_mbps = 0;       // what the plugin reports for it
  std::string nic_speed_source;  // where that came from, for the message
};

// One communicator, as the tuner's init learns it.
struct CommShape {
  uint64_t comm_id = 0;  // NCCL's communicator hash
  size_t ranks = 0;
  size_t nodes = 0;
  int max_local_ranks = 0;  // the most ranks on one node; 0: unknown
};

class CollNetWatch {
 public:
  explicit CollNetWatch(CollNetSetup setup);
  CollNetWatch(const CollNetWatch&) = delete;
  CollNetWatch& operator=(const CollNetWatch&) = delete;

  // Cases (a) and (d).
  void CheckSetup();
  // Cases (b) and (c) for one communicator (not checked after (a) or (d),
  // which already explain everything). True when, as far as the plugin can
  // tell, NCCL may use CollNet for it: reducers configured, at least 2
  // nodes, and none of (a) to (d) applies.
  bool CheckCommunicator(const CommShape& comm);

 private:
  enum Kind { kEnable, kNicSpeed, kNodes, kLocalRanks, kNumKinds };
  void WarnOnce(Kind kind, const std::string& message);

  const CollNetSetup setup_;
  bool off_everywhere_ = false;  // (a) or (d): set by CheckSetup
  std::atomic<bool> warned_[kNumKinds] = {};
  // A communicator that reached the node threshold: a later one below it is
  // then a sub-communicator, not a sign of a job NCCL sees as one node.
  std::atomic<bool> multi_node_seen_{false};
};

}  // namespace rs::plugin
