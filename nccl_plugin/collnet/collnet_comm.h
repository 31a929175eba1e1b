// The objects CollNet hands NCCL: the handle every node's head rank
// publishes, the listen comm behind it, the collective comm that wraps one
// rs::client::Client, its registrations and its fixed pool of iallreduce
// requests. Each has a FromOpaque that checks a pointer NCCL gives back
// before use, as the point-to-point objects do.
//
// The session id all nodes share is derived from every node's handle (a
// random nonce each, in the order NCCL passes them), so NCCL's own exchange
// of handles is the only rendezvous needed.
//
// Thread-safety: NCCL's setup and proxy threads may call into one CollComm at
// once; its request pool and registrations are guarded by one mutex.
// iallreduce calls are serialised by that mutex too, which keeps the
// operation order that every node must share.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/client.h"
#include "common/dtype.h"
#include "common/status.h"
#include "nccl_plugin/collnet/collnet_trace.h"
#include "nccl_plugin/config/plugin_config.h"
#include "nccl_plugin/nccl_limits.h"
#include "nccl_plugin/opaque_object.h"
#include "protocol/wire.h"

namespace rs::plugin {

// What listen writes into NCCL's handle buffer.
struct CollHandle {
  static constexpr uint32_t kMagic = 0x4C4F4352;  // "RCOL"
  static constexpr uint32_t kVersion = 2;
  uint32_t magic = kMagic;
  uint32_t version = kVersion;
  uint8_t nonce[16] = {};
  // Fingerprint of the settings every node must share (reducer list,
  // streams, piece size): a difference would only show up later as a
  // partition mismatch, so connect refuses it up front.
  uint8_t config_digest[16] = {};
  // The node's link rate, which the tuner's choice depends on: it must be
  // the same on every node for every rank to choose alike.
  uint32_t link_mbps = 0;
  char host[64] = {};  // for error messages
};
static_assert(sizeof(CollHandle) <= kHandleBytes, "NCCL's handle buffer is 128 bytes");

class CollListenComm final : public OpaqueObject {
 public:
  CollListenComm(const CollHandle& handle, uint64_t comm_id) : handle_(handle), comm_id_(comm_id) {}
  static StatusOr<CollListenComm*> FromOpaque(void* opaque);

  const CollHandle& handle() const { return handle_; }
  // NCCL's communicator hash (v11 tables), 0 when NCCL gave none; for logs.
  uint64_t comm_id() const { return comm_id_; }

 private:
  const CollHandle handle_;
  const uint64_t comm_id_;
};

class CollComm;

// One registration of host memory (NCCL registers its staging buffer once per
// channel and side, all overlapping): a handle that deregMr and iallreduce
// can check.
struct CollRegistration {
  static constexpr uint32_t kMagic = 0x47455243;  // "CREG"
  const uint32_t magic = kMagic;
  const CollComm* owner = nullptr;
  const uint8_t* data = nullptr;
  size_t size = 0;
};

class CollRequest {
 public:
  static constexpr uint32_t kMagic = 0x51524F43;  // "CORQ"
  // A pointer NCCL gave back to test(); the owner checks in_use.
  static StatusOr<CollRequest*> FromOpaque(void* opaque);

  const uint32_t magic = kMagic;
  CollComm* owner = nullptr;  // set once by the pool
  bool in_use = false;        // guarded by owner's mutex
  size_t bytes = 0;
  std::shared_ptr<client::Operation> op;
  CollTrace::Call trace;  // filled only while the comm keeps a trace
};

// The fixed pool of iallreduce requests of one comm (kCollRequestPool).
// Not synchronised: the owner calls it under its mutex.
class CollRequestPool {
 public:
  static constexpr int kCapacity = kCollRequestPool;

  explicit CollRequestPool(CollComm* owner);
  CollRequestPool(const CollRequestPool&) = delete;
  CollRequestPool& operator=(const CollRequestPool&) = delete;

  // nullptr when all kCapacity requests are in flight.
  CollRequest* Acquire();
  void Release(CollRequest* r);
  int in_use() const { return in_use_; }

 private:
  std::array<CollRequest, kCapacity> slots_;
  int in_use_ = 0;
};

class CollComm final : public OpaqueObject {
 public:
  // `trace`: REDUCER_COLLNET_TRACE's file for this comm, or nullptr.
  CollComm(std::unique_ptr<client::Client> client, std::string what, std::unique_ptr<CollTrace> trace = nullptr);
  ~CollComm() override;
  static StatusOr<CollComm*> FromOpaque(void* opaque);

  StatusOr<CollRegistration*> RegMr(void* data, size_t size);
  Status DeregMr(void* mhandle);
  // ok(nullptr) when the pool is full: NCCL retries. The memory handles are
  // checked when given (they must be this comm's and cover the buffers).
  StatusOr<CollRequest*> IAllReduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                                    void* send_mhandle, void* recv_mhandle);
  // Polls a request of this comm; a finished or failed request goes back to
  // the pool. *size is the bytes reduced.
  Status Test(CollRequest* request, bool* done, size_t* size);

  // "node 1 of 4, session ..." for messages.
  const std::string& what() const { return what_; }

 private:
  Status CheckRegistration(void* mhandle, const void* data, size_t bytes, const char* side) const;
  // A finished request's call, into the trace (under mu_).
  void Traced(CollRequest* request, bool ok);

  std::unique_ptr<client::Client> client_;
  const std::string what_;
  mutable std::mutex mu_;
  // guarded by mu_, except an acquired request's op, which IAllReduce sets
  // outside it before handing the request out
  CollRequestPool pool_;
  std::vector<std::unique_ptr<CollRegistration>> registrations_;  // guarded by mu_
  // guarded by mu_ (the pointer is set once); writes its file when the
  // comm is destroyed
  std::unique_ptr<CollTrace> trace_;
};

// The settings fingerprint of CollHandle::config_digest.
void ConfigDigest(const CollNetConfig& config, uint8_t out[16]);
// The session id of one collective communicator: a digest of every node's
// handle, in the order NCCL passes them (the same on every node).
protocol::SessionId SessionIdFromHandles(void* const* handles, int nranks);

}  // namespace rs::plugin
