#include "client/operation.h"

namespace rs::client {

OperationImpl::OperationImpl(uint64_t seq, const void* send, void* recv, uint64_t count, DataType dtype,
                             ReduceOp op, std::vector<protocol::PieceSpan> pieces, uint32_t reducers,
                             Clock::time_point start)
    : seq_(seq),
      send_(send),
      recv_(recv),
      count_(count),
      dtype_(dtype),
      op_(op),
      pieces_(std::move(pieces)),
      start_(start),
      claimed_(pieces_.size(), 0),
      owed_(reducers, 0),
      pieces_left_(pieces_.size()) {
  for (const protocol::PieceSpan& p : pieces_) ++owed_[p.reducer];
  if (pieces_left_ == 0) {
    has_result_ = true;
    done_ = true;
  }
}

bool OperationImpl::Done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

Status OperationImpl::Wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [this] { return done_; })) {
    return Status(Code::kTimeout, "operation " + std::to_string(seq_) + " still running after waiting " +
                                      std::to_string(timeout.count()) + " ms");
  }
  return status_;
}

Status OperationImpl::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_ ? status_ : Status::Ok();
}

bool OperationImpl::Acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (has_result_) return false;
  ++leases_;
  return true;
}

void OperationImpl::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  --leases_;
  MaybeSignalLocked();
}

Status OperationImpl::ClaimResult(uint32_t reducer, const protocol::PieceHeader& h) {
  const std::string where = "operation " + std::to_string(seq_) + " piece " + std::to_string(h.piece);
  if (h.piece >= pieces_.size() || h.pieces != pieces_.size()) {
    return Status(Code::kProtocol, "reducer sent a result for " + where + ", which was never sent to it");
  }
  const protocol::PieceSpan& p = pieces_[h.piece];
  if (p.reducer != reducer || p.offset != h.offset || p.count != h.count || h.dtype != dtype_ || h.op != op_ ||
      h.total_count != count_) {
    return Status(Code::kProtocol, "reducer's result for " + where + " does not match what was sent");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (claimed_[h.piece]) return Status(Code::kProtocol, "reducer sent " + where + " twice");
  claimed_[h.piece] = 1;
  return Status::Ok();
}

bool OperationImpl::PieceDone() {
  std::lock_guard<std::mutex> lock(mu_);
  // Pieces are claimed once, so this counts each piece once.
  --pieces_left_;
  const bool last = pieces_left_ == 0 && !has_result_;
  if (last) has_result_ = true;
  MaybeSignalLocked();
  return last;
}

void OperationImpl::Finish(const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (has_result_) return;
  has_result_ = true;
  status_ = status;
  MaybeSignalLocked();
}

std::vector<uint32_t> OperationImpl::PendingReducers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint32_t> owed = owed_;
  for (size_t i = 0; i < pieces_.size(); ++i) {
    if (claimed_[i]) --owed[pieces_[i].reducer];
  }
  std::vector<uint32_t> out;
  for (uint32_t r = 0; r < owed.size(); ++r) {
    if (owed[r] > 0) out.push_back(r);
  }
  return out;
}

void OperationImpl::MaybeSignalLocked() {
  if (has_result_ && leases_ == 0 && !done_) {
    done_ = true;
    cv_.notify_all();
  }
}

}  // namespace rs::client
