// The objects CollNet hands NCCL: the handle every node's head rank
// publishes, the listen comm behind it, and the collective comm that wraps
// one rs::client::Client with a fixed pool of iallreduce requests.
//
// The session id all ranks share is derived from every rank's handle (a
// random nonce each, in rank order), so NCCL's own exchange of handles is the
// only rendezvous needed.
//
// Thread-safety: NCCL's setup and proxy threads may call into one CollComm at
// once; its request pool is guarded by a mutex. iallreduce calls are
// serialised by that mutex too, which keeps the operation order that every
// rank must share.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "client/client.h"
#include "nccl_plugin/opaque_object.h"
#include "nccl_plugin/config/plugin_config.h"
#include "protocol/wire.h"

namespace rs::plugin {

// What listen writes into NCCL's 128-byte handle buffer.
struct CollHandle {
  static constexpr uint32_t kMagic = 0x4C4F4352;  // "RCOL"
  static constexpr uint32_t kVersion = 1;
  uint32_t magic = kMagic;
  uint32_t version = kVersion;
  uint8_t nonce[16] = {};
  // Fingerprint of the settings every rank must share (reducer list,
  // streams, piece size): a difference would only show up later as a
  // partition mismatch, so connect refuses it up front.
  uint8_t config_digest[16] = {};
  char host[64] = {};  // for error messages
};
static_assert(sizeof(CollHandle) <= 128, "NCCL's handle buffer is 128 bytes");

class CollListenComm final : public OpaqueObject {
 public:
  explicit CollListenComm(const CollHandle& handle) : handle_(handle) {}
  const CollHandle& handle() const { return handle_; }

 private:
  const CollHandle handle_;
};

class CollComm;

class CollRequest {
 public:
  static constexpr uint32_t kMagic = 0x51524F43;  // "CORQ"
  const uint32_t magic = kMagic;
  CollComm* owner = nullptr;
  bool in_use = false;  // guarded by owner's mutex
  size_t bytes = 0;
  std::shared_ptr<client::Operation> op;
};

class CollComm final : public OpaqueObject {
 public:
  // NCCL keeps up to ~64 iallreduce calls in flight per comm.
  static constexpr int kRequestPoolSize = 256;

  explicit CollComm(std::unique_ptr<client::Client> client);
  ~CollComm() override;

  // nullptr in *request when the pool is full (NCCL retries).
  Status IAllReduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op, void** request);
  // Validates an opaque request from NCCL and polls it.
  static Status Test(void* request, bool* done, size_t* size);

 private:
  Status TestLocked(CollRequest* request, bool* done, size_t* size);

  std::unique_ptr<client::Client> client_;
  std::mutex mu_;
  std::array<CollRequest, kRequestPoolSize> pool_;  // guarded by mu_
};

// The settings fingerprint of CollHandle::config_digest.
void ConfigDigest(const CollNetConfig& config, uint8_t out[16]);
// The session id of one communicator: a digest of every rank's handle.
protocol::SessionId SessionIdFromHandles(void* const* handles, int nranks);

}  // namespace rs::plugin
