#include "nccl_plugin/collnet/collnet_comm.h"

#include <openssl/sha.h>

#include <cstring>
#include <vector>

namespace rs::plugin {

CollComm::CollComm(std::unique_ptr<client::Client> client) : client_(std::move(client)) {
  for (CollRequest& r : pool_) r.owner = this;
}

CollComm::~CollComm() = default;

Status CollComm::IAllReduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                            void** request) {
  std::lock_guard<std::mutex> lock(mu_);
  *request = nullptr;
  for (CollRequest& r : pool_) {
    if (r.in_use) continue;
    r.in_use = true;
    r.bytes = count * DataTypeSize(type);
    // A failed session yields an operation that has already failed: test()
    // reports it, so NCCL learns of the failure on its usual path.
    r.op = client_->AllReduce(send, recv, count, type, op);
    *request = &r;
    return Status::Ok();
  }
  return Status::Ok();  // pool full: NCCL retries
}

Status CollComm::Test(void* opaque, bool* done, size_t* size) {
  auto* request = static_cast<CollRequest*>(opaque);
  if (request == nullptr || request->magic != CollRequest::kMagic || request->owner == nullptr) {
    return Status(Code::kInternal, "CollNet test() called with something that is not a CollNet request");
  }
  CollComm* comm = request->owner;
  std::lock_guard<std::mutex> lock(comm->mu_);
  return comm->TestLocked(request, done, size);
}

Status CollComm::TestLocked(CollRequest* request, bool* done, size_t* size) {
  if (!request->in_use) {
    return Status(Code::kInternal, "CollNet test() called on a request that already completed");
  }
  *done = false;
  if (!request->op->Done()) return Status::Ok();
  Status st = request->op->status();
  request->in_use = false;
  request->op.reset();
  if (!st.ok()) return st;
  *done = true;
  *size = request->bytes;
  return Status::Ok();
}

void ConfigDigest(const CollNetConfig& config, uint8_t out[16]) {
  std::string text;
  for (const auto& r : config.reducers) text += r.ToString() + ",";
  text += "|" + std::to_string(config.streams_per_reducer) + "|" + std::to_string(config.max_piece_bytes) + "|" +
          std::to_string(config.min_piece_bytes);
  uint8_t digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::memcpy(out, digest, 16);
}

protocol::SessionId SessionIdFromHandles(void* const* handles, int nranks) {
  std::vector<uint8_t> all(sizeof(CollHandle) * static_cast<size_t>(nranks));
  for (int i = 0; i < nranks; ++i) std::memcpy(all.data() + i * sizeof(CollHandle), handles[i], sizeof(CollHandle));
  uint8_t digest[SHA256_DIGEST_LENGTH];
  SHA256(all.data(), all.size(), digest);
  protocol::SessionId id{};
  std::memcpy(id.data(), digest, id.size());
  return id;
}

}  // namespace rs::plugin
