// "No silent fallback": NCCL leaves CollNet, and so the reducers, off without
// an error in several cases. When reducers are configured, the plugin tells
// the user once per process, on stderr and at WARN (report.h), with the fix,
// for each case it can see:
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
//   at CollNet connect (CollNetConnected, ConnectFailed), per node head:
//     e) a reducer unreachable, refusing the token, or any other failure to
//        connect: NCCL then runs the communicator without CollNet;
//   at the tuner's creation for a communicator CollNet connected
//   (CommunicatorReady), once per process:
//     f) too few reducers: the cost model sends all-reduces above some size
//        to NCCL's ring; the warning says how many reducers would carry
//        every size. Otherwise the one INFO line of what the plugin does;
//   at the first point-to-point transfer after a CollNet connect
//   (FirstTransfer): every communicator's init is over by then, so
//     g) no tuner was created and NCCL_ALGO does not force CollNet: NCCL
//        never chooses CollNet on its own (the fix depends on the release:
//        nccl_version.h).
// The last case, CollNet offered but no all-reduce reaching the reducers,
// is the tuner's to see (tuner/collnet_usage.h); it watches only the
// communicators none of the above explains.
//
// With REDUCER_REQUIRED=1, each of these cases is also an error, kept in
// required_failure(): the next tuner creation and the next point-to-point
// connect or transfer fail with it, so the job stops naming the cause.
//
// Thread-safety: CheckSetup runs once, before any other call; the other
// methods may be called from any thread (the once-flags are atomic, the
// failure is guarded by a mutex).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "common/status.h"
#include "nccl_plugin/config/plugin_config.h"
#include "nccl_plugin/tuner/cost_model.h"

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
  int nccl_version = 0;         // nccl_version.h; 0: unknown
  bool required = false;        // REDUCER_REQUIRED=1
  std::string reducers_text;    // "4 reducers (10.0.0.5:7450, ...)"
  std::string wire_text;        // "float32 sums travel as float32"
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

  // CollNet connected in this process, or (e) failed to.
  void CollNetConnected();
  void ConnectFailed(const Status& status);
  // A tuner was created (for (g)).
  void TunerCreated() { tuner_created_.store(true, std::memory_order_release); }
  // The tuner of a communicator that CheckCommunicator accepted, with the
  // model it decides by: (f), or the INFO line.
  void CommunicatorReady(const CommShape& comm, const CostModel& model);
  // (g). Called for each point-to-point transfer; does its work once.
  void FirstTransfer();

  // ok, or the first case seen under REDUCER_REQUIRED=1.
  Status required_failure() const;
  // Whether any case made required_failure() an error (cheap; for the data path).
  bool failed() const { return failed_.load(std::memory_order_acquire); }

 private:
  enum Kind { kEnable, kNicSpeed, kNodes, kLocalRanks, kConnect, kFewReducers, kNoTuner, kUsing, kNumKinds };
  // Reports once per kind; under REDUCER_REQUIRED also records the failure
  // where `fails`.
  void WarnOnce(Kind kind, const std::string& message, bool fails = true);
  std::string NoTunerFix() const;
  std::string ForcedLine() const;  // the INFO line when NCCL_ALGO forces CollNet

  const CollNetSetup setup_;
  bool off_everywhere_ = false;  // (a) or (d): set by CheckSetup
  std::atomic<bool> collnet_connected_{false};
  std::atomic<bool> tuner_created_{false};
  std::atomic<bool> first_transfer_seen_{false};
  std::atomic<bool> failed_{false};
  mutable std::mutex failure_mu_;
  Status failure_;  // guarded by failure_mu_
  std::atomic<bool> warned_[kNumKinds] = {};
  // A communicator that reached the node threshold: a later one below it is
  // then a sub-communicator, not a sign of a job NCCL sees as one node.
  std::atomic<bool> multi_node_seen_{false};
};

}  // namespace rs::plugin
