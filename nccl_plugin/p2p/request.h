// A point-to-point request as NCCL sees it (the opaque `void* request`), and
// the fixed pool each comm draws them from. A pool holds exactly
// kP2pRequestsPerComm (NCCL's per-comm limit, nccl_limits.h): when it is
// empty the comm answers "cannot post now" with a NULL request and NCCL
// retries. Requests are never allocated on the data path.
//
// Thread-safety: a request's fields are guarded by its owner comm's mutex,
// except `pending`, which helper threads decrement. The pool itself is not
// synchronised; the owner comm calls it under its mutex.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "nccl_plugin/nccl_limits.h"
#include "nccl_plugin/opaque_object.h"
#include "common/status.h"

namespace rs::plugin {

class Request;

// What a request points back to, so test(request) can find its comm.
class RequestOwner : public OpaqueObject {
 public:
  // done/size are written only on success; a finished or failed request is
  // returned to the pool.
  virtual Status Test(Request* request, bool* done, size_t* size) = 0;
};

class Request {
 public:
  static constexpr uint32_t kMagic = 0x52455152;  // "RQER"

  // Validates a pointer handed back by NCCL.
  static StatusOr<Request*> FromOpaque(void* opaque);

  const uint32_t magic = kMagic;
  RequestOwner* owner = nullptr;  // set once by the pool
  bool in_use = false;

  int state = 0;  // the owner's enum
  uint8_t* data = nullptr;
  size_t size = 0;       // posted size
  size_t transferred = 0;  // bytes actually sent / received
  int tag = 0;
  bool control_written = false;  // the frame (and inline payload) left this host
  std::atomic<int> pending{0};   // data-socket chunks still moving
  Status error;                  // a per-request failure (truncation, tag mismatch)
};

inline StatusOr<Request*> Request::FromOpaque(void* opaque) {
  auto* r = static_cast<Request*>(opaque);
  if (r == nullptr || r->magic != kMagic) {
    return Status(Code::kInternal, "test() called with something that is not a request of this plugin");
  }
  return r;  // the owner checks in_use under its mutex
}

class RequestPool {
 public:
  explicit RequestPool(RequestOwner* owner) {
    for (Request& r : slots_) r.owner = owner;
  }
  RequestPool(const RequestPool&) = delete;
  RequestPool& operator=(const RequestPool&) = delete;

  static constexpr int kCapacity = kP2pRequestsPerComm;

  // nullptr when all kCapacity requests are in flight.
  Request* Acquire() {
    for (Request& r : slots_) {
      if (r.in_use) continue;
      r.in_use = true;
      r.state = 0;
      r.data = nullptr;
      r.size = r.transferred = 0;
      r.tag = 0;
      r.control_written = false;
      r.pending.store(0, std::memory_order_relaxed);
      r.error = Status::Ok();
      return &r;
    }
    return nullptr;
  }
  void Release(Request* r) { r->in_use = false; }
  int in_flight() const {
    int n = 0;
    for (const Request& r : slots_) n += r.in_use ? 1 : 0;
    return n;
  }

 private:
  std::array<Request, kCapacity> slots_;
};

}  // namespace rs::plugin
