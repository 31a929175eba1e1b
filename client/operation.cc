#include "client/operation.h"

#include <cstring>

namespace rs::client {

OperationImpl::OperationImpl(uint64_t seq, const void* send, void* recv, uint64_t count, DataType dtype,
                             ReduceOp op, uint32_t epoch, std::vector<protocol::PieceSpan> pieces, uint32_t reducers,
                             Clock::time_point start, DataType wire)
    : seq_(seq),
      send_(send),
      source_(static_cast<const uint8_t*>(send)),
      recv_(recv),
      count_(count),
      dtype_(dtype),
      op_(op),
      wire_(dtype == DataType::kFloat32 && op == ReduceOp::kSum ? wire : DataType::kFloat32),
      reducers_(reducers),
      start_(start),
      epoch_(epoch),
      pieces_(std::move(pieces)),
      claimed_(pieces_.size(), 0),
      pieces_left_(pieces_.size()) {
  if (count_ == 0) {
    has_result_ = true;
    done_ = true;
    done_at_ = start_;
  }
}

OperationTimes OperationImpl::times() const {
  MutexLock lock(mu_);
  return {start_, first_result_at_, done_at_};
}

bool OperationImpl::Done() const {
  MutexLock lock(mu_);
  return done_;
}

Status OperationImpl::Wait(std::chrono::milliseconds timeout) {
  UniqueLock lock(mu_);
  if (!cv_.wait_for(lock.native(), timeout, [this]() RS_REQUIRES(mu_) { return done_; })) {
    return Status(Code::kTimeout, "operation " + std::to_string(seq_) + " still running after waiting " +
                                      std::to_string(timeout.count()) + " ms");
  }
  return status_;
}

Status OperationImpl::status() const {
  MutexLock lock(mu_);
  return done_ ? status_ : Status::Ok();
}

uint32_t OperationImpl::epoch() const {
  MutexLock lock(mu_);
  return epoch_;
}

std::vector<protocol::PieceSpan> OperationImpl::pieces() const {
  MutexLock lock(mu_);
  return pieces_;
}

OpLease& OpLease::operator=(OpLease&& other) noexcept {
  if (this != &other) {
    reset();
    op_ = std::move(other.op_);
  }
  return *this;
}

void OpLease::reset() {
  if (op_ == nullptr) return;
  const std::shared_ptr<OperationImpl> op = std::move(op_);
  op->Release();
}

OpLease OperationImpl::Lease(std::shared_ptr<OperationImpl> op) {
  if (op == nullptr || !op->Acquire()) return OpLease();
  return OpLease(std::move(op));
}

bool OperationImpl::Acquire() {
  MutexLock lock(mu_);
  if (has_result_) return false;
  ++leases_;
  return true;
}

void OperationImpl::Release() {
  MutexLock lock(mu_);
  if (leases_ > 0) --leases_;  // Abandon zeroes them: a lease given back after it counts for nothing
  MaybeSignalLocked();
}

OperationImpl::Claim OperationImpl::ClaimResult(uint32_t reducer, const protocol::PieceHeader& h, bool* last,
                                                Status* error) {
  // Named only for an error: this runs for every result part.
  const auto where = [&] { return "operation " + std::to_string(seq_) + " piece " + std::to_string(h.piece); };
  MutexLock lock(mu_);
  if (h.epoch != epoch_) return Claim::kStale;
  if (h.piece >= pieces_.size() || h.pieces != pieces_.size()) {
    *error = Status(Code::kProtocol, "reducer sent a result for " + where() + ", which was never sent to it");
    return Claim::kError;
  }
  const protocol::PieceSpan& p = pieces_[h.piece];
  // A float32 sum on a 16-bit wire comes back part by part in the wire type
  // or, where the sum did not fit it, in float32.
  const bool wide = wire_ != DataType::kFloat32;
  const bool type_ok = wide ? (h.flags & protocol::kPieceWideSum) != 0 &&
                                  (h.dtype == DataType::kFloat32 || h.dtype == wire_)
                            : (h.flags & protocol::kPieceWideSum) == 0 && h.dtype == dtype_;
  if (p.reducer != reducer || !type_ok || h.op != op_ || h.total_count != count_) {
    *error = Status(Code::kProtocol, "reducer's result for " + where() + " does not match what was sent");
    return Claim::kError;
  }
  uint64_t& got = claimed_[h.piece];
  if (got == p.count) {
    *error = Status(Code::kProtocol, "reducer sent " + where() + " twice");
    return Claim::kError;
  }
  // Parts come in order: each starts where the last one ended.
  if (h.offset != p.offset + got || h.count > p.count - got) {
    *error = Status(Code::kProtocol, "reducer's result for " + where() + " covers elements [" +
                                         std::to_string(h.offset) + ", " + std::to_string(h.offset + h.count) +
                                         "), but the next ones owed are [" + std::to_string(p.offset + got) + ", " +
                                         std::to_string(p.offset + p.count) + ")");
    return Claim::kError;
  }
  got += h.count;
  *last = got == p.count;
  if (first_result_at_ == Clock::time_point{}) first_result_at_ = Clock::now();
  return Claim::kClaimed;
}

bool OperationImpl::PieceDone(uint32_t epoch) {
  MutexLock lock(mu_);
  if (epoch != epoch_ || pieces_left_ == 0) return false;
  --pieces_left_;  // pieces are claimed once per epoch, so each counts once
  const bool last = pieces_left_ == 0 && !has_result_;
  if (last) has_result_ = true;
  MaybeSignalLocked();
  return last;
}

size_t OperationImpl::RetainedBytes() const {
  return count_ * (wire_ == DataType::kBfloat16 ? sizeof(uint16_t) : DataTypeSize(dtype_));
}

void OperationImpl::RetainInto(const RetainedCopy& retained) {
  const size_t bytes = count_ * DataTypeSize(dtype_);
  uint8_t* const copy = retained.data;
  source_lease_ = retained.lease;
  retained_ = copy;
  const auto* in = static_cast<const uint8_t*>(send_);
  const auto* out = static_cast<const uint8_t*>(recv_);
  // Partly overlapping buffers: a result could overwrite input at another
  // offset than its own, so the copy is made before anything is sent.
  const bool overlap = recv_ != nullptr && in != out && in < out + bytes && out < in + bytes;
  if (wire_ == DataType::kBfloat16) {
    narrowed_ = std::make_shared<NarrowedCopy>(wire_, reinterpret_cast<uint16_t*>(copy), count_);
    copy_ = std::make_unique<CopyBehind>(reinterpret_cast<const float*>(in), narrowed_, count_);
    if (overlap) {
      copy_->EnsureAll();
      copy_.reset();
      return;
    }
  } else if (overlap) {
    std::memcpy(copy, in, bytes);
    source_ = copy;
    return;
  } else {
    copy_ = std::make_unique<CopyBehind>(in, copy, bytes);
  }
  MutexLock lock(mu_);
  copying_ = true;
}

const uint16_t* OperationImpl::WireElements(uint64_t offset, uint64_t count, std::vector<float>* wide) {
  if (copy_) copy_->Ensure(offset * sizeof(float), count * sizeof(float));
  return narrowed_->Elements(offset, count, wide);
}

void OperationImpl::CopyInput() {
  if (!copy_) return;
  copy_->EnsureAll();
  MutexLock lock(mu_);
  copying_ = false;
  if (done_) source_lease_.reset();
}

void OperationImpl::BeforeResult(size_t offset, size_t bytes) {
  if (copy_) copy_->Ensure(offset, bytes);
}

void OperationImpl::Restart(uint32_t epoch, std::vector<protocol::PieceSpan> pieces) {
  // Outside mu_: completing the copy may wait for an I/O thread's chunk.
  if (copy_) copy_->EnsureAll();
  if (retained_ != nullptr) source_ = retained_;
  MutexLock lock(mu_);
  epoch_ = epoch;
  pieces_ = std::move(pieces);
  claimed_.assign(pieces_.size(), 0);
  pieces_left_ = pieces_.size();
}

void OperationImpl::Finish(const Status& status) {
  MutexLock lock(mu_);
  if (has_result_) return;
  has_result_ = true;
  status_ = status;
  MaybeSignalLocked();
}

void OperationImpl::Abandon(const Status& status) {
  MutexLock lock(mu_);
  if (!has_result_) {
    has_result_ = true;
    status_ = status;
  }
  leases_ = 0;
  MaybeSignalLocked();
}

std::vector<uint32_t> OperationImpl::PendingReducers() const {
  MutexLock lock(mu_);
  std::vector<uint32_t> owed(reducers_, 0);
  for (size_t i = 0; i < pieces_.size(); ++i) {
    if (claimed_[i] < pieces_[i].count && pieces_[i].reducer < reducers_) ++owed[pieces_[i].reducer];
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
    done_at_ = Clock::now();
    // Nothing reads the copy any more; the watermark may free it now.
    if (!copying_) source_lease_.reset();
    cv_.notify_all();
  }
}

}  // namespace rs::client
