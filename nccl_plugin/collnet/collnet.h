// The CollNet side of the plugin core: offload of NCCL's all-reduce to the
// reducers through the client library (rs::client::Client). NCCL types stay
// in the ABI layer; here data types and ops are already ours, and the calls
// return the typed objects of collnet_comm.h (the ABI layer turns them into
// NCCL's opaque pointers and back).
//
// Listen writes this node's handle. Connect is collective: it derives one
// session id from all nodes' handles and creates an rs::client::Client,
// which returns only once every node has joined every reducer, so all nodes
// proceed together or fail together. NCCL orders the handles by the global
// rank of each node's head and passes the node's index as `rank`; with
// several GPUs per node the handle at index `rank` need not be this node's
// own, and nothing here assumes it is (docs/engineering/nccl-interface.md, "CollNet semantics,
// and what NCCL 2.28.9 does").
//
// Thread-safety: immutable after construction; every method may be called
// from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/dtype.h"
#include "common/status.h"
#include "nccl_plugin/collnet/collnet_comm.h"
#include "nccl_plugin/config/plugin_config.h"

namespace rs::plugin {

class CollNet {
 public:
  // `link_mbps`: the speed of net device 0, which CollNet's device is named
  // after and which the tuner models.
  CollNet(StatusOr<CollNetConfig> config, int link_mbps);
  CollNet(const CollNet&) = delete;
  CollNet& operator=(const CollNet&) = delete;

  // A configuration problem (reported to NCCL as misconfiguration), or ok.
  const Status& config_status() const { return config_.status(); }
  // 1 when reducers are configured, 0 when CollNet is off (NCCL then uses
  // its own algorithms). Only meaningful when config_status() is ok.
  int num_devices() const;
  // nullptr when config_status() is not ok.
  const CollNetConfig* config() const { return config_.ok() ? &config_.value() : nullptr; }
  // The one line init logs about CollNet (why it is off, or where the reducers come from).
  void LogSummary() const;

  // Whether the reducers implement `op` on `type` (every data type of
  // common/dtype.h with sum, prod, max and min).
  static bool ReduceSupported(DataType type, ReduceOp op);

  // Writes this node's handle (at most kHandleBytes) into `handle`.
  // `comm_id` is NCCL's communicator hash where the table passes one (0
  // otherwise), kept for log lines.
  StatusOr<std::unique_ptr<CollListenComm>> Listen(int dev, void* handle, uint64_t comm_id) const;
  // Collective: every node calls it with the same handles. Every check that
  // can refuse runs over all handles alike, so all nodes refuse alike:
  // handles of another plugin version, other reducer settings or another
  // link rate than node 0's.
  StatusOr<std::unique_ptr<CollComm>> Connect(void* const* handles, int nranks, int rank,
                                              const CollListenComm& listen) const;

 private:
  Status CheckHandles(void* const* handles, int nranks, int rank) const;

  StatusOr<CollNetConfig> config_;
  int link_mbps_;
};

}  // namespace rs::plugin
