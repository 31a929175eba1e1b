#include "nccl_plugin/p2p/send_comm.h"

namespace rs::plugin {

StatusOr<std::unique_ptr<SendComm>> SendComm::Create(Socket control, std::vector<Socket> data, int threads,
                                                      std::string peer, std::chrono::milliseconds rto_floor) {
  std::string what = "send comm to " + peer;
  std::unique_ptr<SendComm> comm(new SendComm(std::move(control), what));
  StatusOr<std::unique_ptr<DataSockets>> plane = DataSockets::Create(std::move(data), threads, what, rto_floor);
  if (!plane.ok()) return plane.status();
  comm->data_ = std::move(plane).value();
  return comm;
}

SendComm::SendComm(Socket control, std::string what) : control_(std::move(control), std::move(what)), pool_(this) {}

StatusOr<SendComm*> SendComm::FromOpaque(void* opaque) {
  return OpaqueObject::Cast<SendComm>(opaque, "a send comm");
}

StatusOr<Request*> SendComm::Isend(const void* data, size_t size, int tag) {
  std::lock_guard<std::mutex> lock(mu_);
  RS_RETURN_IF_ERROR(data_->failure());
  Request* r = pool_.Acquire();
  if (r == nullptr) return static_cast<Request*>(nullptr);
  // NCCL's isend takes a non-const pointer; we only read through it.
  r->data = static_cast<uint8_t*>(const_cast<void*>(data));
  r->size = size;
  r->tag = tag;
  r->state = kWaitingForCts;
  waiting_.push_back(r);
  Status st = Progress();
  if (!st.ok()) {
    // The comm is failed for good; NCCL will not test a request it never got.
    if (r->state == kWaitingForCts && !waiting_.empty() && waiting_.back() == r) waiting_.pop_back();
    pool_.Release(r);
    return st;
  }
  return r;
}

Status SendComm::Test(Request* r, bool* done, size_t* size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!r->in_use || r->owner != this) {
    return Status(Code::kInternal, "test() on a send request that is not in flight");
  }
  *done = false;
  // Fast path: a chunked send needs no system call to finish.
  const bool finished = r->state == kSending && r->control_written &&
                        r->pending.load(std::memory_order_acquire) == 0;
  if (!finished) {
    Status st = Progress();
    if (!st.ok()) {
      pool_.Release(r);
      return st;
    }
  }
  switch (r->state) {
    case kWaitingForCts:
      return Status::Ok();
    case kRejecting: {
      if (!r->control_written) return Status::Ok();  // tell the receiver first
      Status error = r->error;
      pool_.Release(r);
      return error;
    }
    case kSending:
      if (!r->control_written || r->pending.load(std::memory_order_acquire) != 0) return Status::Ok();
      *done = true;
      *size = r->size;
      pool_.Release(r);
      return Status::Ok();
  }
  return Status(Code::kInternal, "send request in unknown state " + std::to_string(r->state));
}

Status SendComm::Progress() {
  RS_RETURN_IF_ERROR(data_->failure());
  Status st = ProgressUnchecked();
  if (!st.ok()) {
    data_->Fail(std::move(st));
    return data_->failure();  // the first failure, which may be a helper's
  }
  return Status::Ok();
}

Status SendComm::ProgressUnchecked() {
  // Clear-to-send frames are read only while a send waits for one: the
  // kernel keeps the others, and an idle test() costs no system call.
  while (!waiting_.empty()) {
    ControlFrame cts;
    StatusOr<bool> got = control_.ReadFrame(&cts);
    if (!got.ok()) return got.status();
    if (!*got) break;
    if (cts.type != FrameType::kClearToSend) {
      return Status(Code::kProtocol, control_.what() + ": unexpected control frame type " +
                                         std::to_string(static_cast<uint32_t>(cts.type)));
    }
    Start(waiting_.front(), cts);
    waiting_.pop_front();
  }
  if (control_.HasPendingWrites()) RS_RETURN_IF_ERROR(control_.Flush());
  return Status::Ok();
}

void SendComm::Start(Request* r, const ControlFrame& cts) {
  ControlFrame f{};
  f.tag = r->tag;
  f.size = r->size;
  f.reason = RejectReason::kNone;
  if (cts.tag != r->tag) {
    f.reason = RejectReason::kTagMismatch;
    r->error = Status(Code::kMismatch, control_.what() + ": send with tag " + std::to_string(r->tag) +
                                           " met a receive posted with tag " + std::to_string(cts.tag));
  } else if (r->size > cts.size) {
    f.reason = RejectReason::kTooLarge;
    r->error = Status(Code::kMismatch, control_.what() + ": message truncated: sending " +
                                           std::to_string(r->size) + " bytes to a receive of " +
                                           std::to_string(cts.size) + " bytes (tag " + std::to_string(r->tag) + ")");
  }
  if (f.reason != RejectReason::kNone) {
    f.type = FrameType::kRejected;
    f.posted_size = cts.size;
    f.posted_tag = cts.tag;
    r->state = kRejecting;
    control_.Queue(f, nullptr, 0, &r->control_written);
    return;
  }
  f.type = FrameType::kData;
  const bool inline_payload = r->size <= kInlineMax;
  control_.Queue(f, inline_payload ? r->data : nullptr, inline_payload ? r->size : 0, &r->control_written);
  if (!inline_payload) data_->Post(r->data, r->size, /*send=*/true, &r->pending);
  r->transferred = r->size;
  r->state = kSending;
}

}  // namespace rs::plugin
