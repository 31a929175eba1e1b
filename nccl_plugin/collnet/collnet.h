// The CollNet side of the plugin core: offload of NCCL's all-reduce to the
// reducers through the client library (rs::client::Client). NCCL types stay
// in the ABI layer; here data types and ops are already ours.
//
// Connect derives one session id from all ranks' handles and creates an
// rs::client::Client, which returns only once every rank has joined every
// reducer; iallreduce hands NCCL's chunk to it and test polls it.
//
// Thread-safety: the configuration accessors are immutable after
// construction. NCCL may call the communication functions from its setup and
// proxy threads at once for the same comm; the implementation must allow it.
#pragma once

#include <cstddef>
#include <string>

#include "nccl_plugin/config/plugin_config.h"
#include "common/dtype.h"
#include "common/status.h"

namespace rs::plugin {

class CollNet {
 public:
  // NCCL needs at least this many iallreduce requests per collComm.
  static constexpr int kMinRequestPool = 256;

  explicit CollNet(StatusOr<CollNetConfig> config);
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

  // Handles are at most 128 bytes; connect is collective and must succeed on
  // every rank or fail on every rank (see docs/nccl-abi.md).
  Status Listen(int dev, void* handle, void** listen_comm);
  Status Connect(void* const* handles, int nranks, int rank, void* listen_comm, void** coll_comm);
  // Overlapping host registrations of one buffer must work.
  Status RegMr(void* coll_comm, void* data, size_t size, void** mhandle);
  Status DeregMr(void* coll_comm, void* mhandle);
  // *request = nullptr when the in-flight pool (>= kMinRequestPool) is full.
  Status IAllReduce(void* coll_comm, void* send, void* recv, size_t count, DataType type, ReduceOp op,
                    void** request);
  // Host memory: completes at once (*request = nullptr).
  Status IFlush(void* coll_comm, void* data, size_t size, void** request);
  Status Test(void* request, bool* done, size_t* size);
  Status CloseColl(void* coll_comm);
  Status CloseListen(void* listen_comm);

 private:
  Status CheckHandles(void* const* handles, int nranks, int rank, const class CollListenComm& listen) const;

  StatusOr<CollNetConfig> config_;
};

}  // namespace rs::plugin
