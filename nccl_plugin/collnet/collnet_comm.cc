#include "nccl_plugin/collnet/collnet_comm.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cstring>

namespace rs::plugin {

StatusOr<CollListenComm*> CollListenComm::FromOpaque(void* opaque) {
  return OpaqueObject::Cast<CollListenComm>(opaque, "a CollNet listen comm");
}

StatusOr<CollRequest*> CollRequest::FromOpaque(void* opaque) {
  auto* r = static_cast<CollRequest*>(opaque);
  if (r == nullptr || r->magic != kMagic || r->owner == nullptr) {
    return Status(Code::kInternal, "CollNet test() called with something that is not a CollNet request");
  }
  return r;
}

CollRequestPool::CollRequestPool(CollComm* owner) {
  for (CollRequest& r : slots_) r.owner = owner;
}

CollRequest* CollRequestPool::Acquire() {
  for (CollRequest& r : slots_) {
    if (r.in_use) continue;
    r.in_use = true;
    r.bytes = 0;
    ++in_use_;
    return &r;
  }
  return nullptr;
}

void CollRequestPool::Release(CollRequest* r) {
  r->in_use = false;
  r->op.reset();
  --in_use_;
}

CollComm::CollComm(std::unique_ptr<client::Client> client, std::string what, std::unique_ptr<CollTrace> trace)
    : client_(std::move(client)), what_(std::move(what)), pool_(this), trace_(std::move(trace)) {}

// Destroying the client says goodbye to the reducers and joins its threads;
// destroying the trace writes its file.
CollComm::~CollComm() = default;

StatusOr<CollComm*> CollComm::FromOpaque(void* opaque) {
  return OpaqueObject::Cast<CollComm>(opaque, "a CollNet comm");
}

StatusOr<CollRegistration*> CollComm::RegMr(void* data, size_t size) {
  if (data == nullptr && size > 0) return Status(Code::kInvalidArgument, "regMr of NULL");
  // Host memory needs no registration with the kernel; overlapping ranges
  // are fine. The object only lets later calls check their handles.
  auto reg = std::make_unique<CollRegistration>();
  reg->owner = this;
  reg->data = static_cast<const uint8_t*>(data);
  reg->size = size;
  std::lock_guard<std::mutex> lock(mu_);
  registrations_.push_back(std::move(reg));
  return registrations_.back().get();
}

Status CollComm::DeregMr(void* mhandle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(registrations_.begin(), registrations_.end(),
                         [&](const std::unique_ptr<CollRegistration>& r) { return r.get() == mhandle; });
  if (it == registrations_.end()) {
    return Status(Code::kInternal, "CollNet deregMr of a handle this comm did not register (or deregistered twice)");
  }
  registrations_.erase(it);
  return Status::Ok();
}

Status CollComm::CheckRegistration(void* mhandle, const void* data, size_t bytes, const char* side) const {
  if (mhandle == nullptr) return Status::Ok();  // host memory: a handle is a courtesy
  const auto* reg = static_cast<const CollRegistration*>(mhandle);
  bool ours = false;
  for (const auto& r : registrations_) ours = ours || r.get() == reg;
  if (!ours) return Status(Code::kInternal, std::string("iallreduce: the ") + side + " handle is not a registration of this comm");
  const auto* p = static_cast<const uint8_t*>(data);
  if (p < reg->data || bytes > reg->size || static_cast<size_t>(p - reg->data) > reg->size - bytes) {
    return Status(Code::kInvalidArgument, std::string("iallreduce: the ") + side + " buffer (" +
                                              std::to_string(bytes) + " bytes) lies outside its registration");
  }
  return Status::Ok();
}

StatusOr<CollRequest*> CollComm::IAllReduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                                            void* send_mhandle, void* recv_mhandle) {
  const size_t bytes = count * DataTypeSize(type);
  if (count > kMaxCollBytes / DataTypeSize(type)) {
    return Status(Code::kInvalidArgument, "iallreduce of " + std::to_string(count) +
                                              " elements, above the maxCollBytes this plugin reports");
  }
  CollRequest* r = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    RS_RETURN_IF_ERROR(CheckRegistration(send_mhandle, send, bytes, "send"));
    RS_RETURN_IF_ERROR(CheckRegistration(recv_mhandle, recv, bytes, "receive"));
    r = pool_.Acquire();
    if (r == nullptr) {
      if (trace_) trace_->PoolFull();
      return nullptr;  // pool full: NCCL retries
    }
    r->bytes = bytes;
    if (trace_) {
      r->trace = CollTrace::Call{};
      r->trace.call = Clock::now();
      r->trace.bytes = bytes;
      r->trace.in_flight = pool_.in_use();
      r->trace.pool_full_before = trace_->TakePoolFull();
    }
  }
  // Outside the comm's lock: with failover on, AllReduce copies the input
  // as its pieces go out, and test() on other requests need not wait for
  // that. The request is this caller's until it is returned, so nothing
  // else reads its op meanwhile. A failed session yields an operation that
  // has already failed: test() reports it, so NCCL learns of the failure on
  // its usual path.
  r->op = client_->AllReduce(send, recv, count, type, op);
  if (r->trace.call != Clock::time_point{}) r->trace.issued = Clock::now();
  return r;
}

Status CollComm::Test(CollRequest* request, bool* done, size_t* size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (request->owner != this || !request->in_use) {
    return Status(Code::kInternal, "CollNet test() called on a request that already completed");
  }
  *done = false;
  if (trace_) ++request->trace.polls;
  if (!request->op->Done()) return Status::Ok();
  Status st = request->op->status();
  const size_t bytes = request->bytes;
  if (trace_) Traced(request, st.ok());
  pool_.Release(request);
  if (!st.ok()) return st;
  *done = true;
  *size = bytes;
  return Status::Ok();
}

void CollComm::Traced(CollRequest* request, bool ok) {
  CollTrace::Call& call = request->trace;
  const client::OperationTimes times = request->op->times();
  call.first_result = times.first_result;
  call.done = times.done;
  call.seen = Clock::now();
  call.ok = ok;
  trace_->Add(call);
}

void ConfigDigest(const CollNetConfig& config, uint8_t out[16]) {
  std::string text;
  for (const auto& r : config.reducers) text += r.ToString() + ",";
  // 0: automatic, which every rank derives from the same reducer list.
  text += "|" + std::to_string(config.client.streams_per_reducer.value_or(0)) + "|" +
          std::to_string(config.client.max_piece_bytes.value_or(0)) + "|" +
          std::to_string(config.client.min_piece_bytes.value_or(0));
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
