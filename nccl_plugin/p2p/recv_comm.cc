#include "nccl_plugin/p2p/recv_comm.h"

namespace rs::plugin {

StatusOr<std::unique_ptr<RecvComm>> RecvComm::Create(Socket control, std::vector<Socket> data, int threads,
                                                      std::string peer) {
  std::string what = "recv comm from " + peer;
  std::unique_ptr<RecvComm> comm(new RecvComm(std::move(control), what));
  StatusOr<std::unique_ptr<DataSockets>> plane = DataSockets::Create(std::move(data), threads, what);
  if (!plane.ok()) return plane.status();
  comm->data_ = std::move(plane).value();
  return comm;
}

RecvComm::RecvComm(Socket control, std::string what) : control_(std::move(control), std::move(what)), pool_(this) {}

StatusOr<RecvComm*> RecvComm::FromOpaque(void* opaque) {
  return OpaqueObject::Cast<RecvComm>(opaque, "a recv comm");
}

StatusOr<Request*> RecvComm::Irecv(void* data, size_t size, int tag) {
  std::lock_guard<std::mutex> lock(mu_);
  RS_RETURN_IF_ERROR(data_->failure());
  Request* r = pool_.Acquire();
  if (r == nullptr) return static_cast<Request*>(nullptr);
  r->data = static_cast<uint8_t*>(data);
  r->size = size;
  r->tag = tag;
  r->state = kWaitingForData;
  ControlFrame cts{};
  cts.type = FrameType::kClearToSend;
  cts.tag = tag;
  cts.size = size;
  // control_written only tracks the clear-to-send here; completion is
  // decided by the state.
  control_.Queue(cts, nullptr, 0, &r->control_written);
  waiting_.push_back(r);
  Status st = Progress();
  if (!st.ok()) {
    // The comm is failed for good; the queued frame dies with it, but the
    // request must not point into a released slot.
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
      if (*it == r) {
        waiting_.erase(it);
        break;
      }
    }
    pool_.Release(r);
    return st;
  }
  return r;
}

Status RecvComm::Test(Request* r, bool* done, size_t* size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!r->in_use || r->owner != this) {
    return Status(Code::kInternal, "test() on a receive request that is not in flight");
  }
  *done = false;
  // Fast path: chunks all landed, no system call needed.
  const bool finished = r->state == kComplete ||
                        (r->state == kReceiving && r->pending.load(std::memory_order_acquire) == 0);
  if (!finished) {
    Status st = Progress();
    if (!st.ok()) {
      pool_.Release(r);
      return st;
    }
  }
  switch (r->state) {
    case kWaitingForData:
    case kReadingInline:
      return Status::Ok();
    case kReceiving:
      if (r->pending.load(std::memory_order_acquire) != 0) return Status::Ok();
      [[fallthrough]];
    case kComplete:
      *done = true;
      *size = r->transferred;
      pool_.Release(r);
      return Status::Ok();
    case kRejected: {
      Status error = r->error;
      pool_.Release(r);
      return error;
    }
  }
  return Status(Code::kInternal, "receive request in unknown state " + std::to_string(r->state));
}

Status RecvComm::Progress() {
  RS_RETURN_IF_ERROR(data_->failure());
  Status st = ProgressUnchecked();
  if (!st.ok()) {
    data_->Fail(std::move(st));
    return data_->failure();
  }
  return Status::Ok();
}

Status RecvComm::ProgressUnchecked() {
  if (control_.HasPendingWrites()) RS_RETURN_IF_ERROR(control_.Flush());
  while (true) {
    if (reading_ != nullptr) {
      StatusOr<bool> got = control_.ReadPayload(reading_->data, reading_->transferred);
      if (!got.ok()) return got.status();
      if (!*got) return Status::Ok();
      reading_->state = kComplete;
      reading_ = nullptr;
    }
    // The sender answers only clear-to-send frames, so nothing legitimate
    // can arrive while no receive waits.
    if (waiting_.empty()) return Status::Ok();
    ControlFrame f;
    StatusOr<bool> got = control_.ReadFrame(&f);
    if (!got.ok()) return got.status();
    if (!*got) return Status::Ok();
    Request* r = waiting_.front();
    waiting_.pop_front();
    RS_RETURN_IF_ERROR(OnFrame(r, f));
  }
}

Status RecvComm::OnFrame(Request* r, const ControlFrame& f) {
  const std::string& what = control_.what();
  if (f.type == FrameType::kRejected) {
    std::string why = f.reason == RejectReason::kTagMismatch
                          ? "peer sent tag " + std::to_string(f.tag) + " to a receive posted with tag " +
                                std::to_string(f.posted_tag)
                          : "message truncated: peer sent " + std::to_string(f.size) +
                                " bytes to a receive of " + std::to_string(f.posted_size) + " bytes (tag " +
                                std::to_string(f.tag) + ")";
    r->error = Status(Code::kMismatch, what + ": " + why);
    r->state = kRejected;
    return Status::Ok();
  }
  if (f.type != FrameType::kData) {
    return Status(Code::kProtocol,
                  what + ": unexpected control frame type " + std::to_string(static_cast<uint32_t>(f.type)));
  }
  // The sender checked these against our clear-to-send; a violation means a
  // broken peer, and the stream can no longer be trusted.
  if (f.size > r->size || f.tag != r->tag) {
    return Status(Code::kProtocol, what + ": peer sent " + std::to_string(f.size) + " bytes with tag " +
                                       std::to_string(f.tag) + " for a receive of " + std::to_string(r->size) +
                                       " bytes with tag " + std::to_string(r->tag));
  }
  r->transferred = f.size;
  if (f.size <= kInlineMax) {
    r->state = kReadingInline;
    reading_ = r;
  } else {
    data_->Post(r->data, f.size, /*send=*/false, &r->pending);
    r->state = kReceiving;
  }
  return Status::Ok();
}

}  // namespace rs::plugin
