// The state of one all-reduce in flight on the client: its partition, which
// pieces have come back, and its result. I/O on the user's buffers holds a
// lease on the operation, and the operation only reports Done() once its
// result is known AND no socket still reads into or writes from those
// buffers, so a caller may free them as soon as Done() is true.
//
// With failover an operation belongs to a membership epoch: when the ranks
// install a new one, an operation that has not completed everywhere is
// restarted with the new epoch's partition (results of the old one are then
// stale and dropped), and its pieces go out again from the copy the client
// retained. An operation this rank had already completed is redone by a
// "shadow" that has no receive buffer: it only gives the other ranks this
// rank's contribution again and drops the results.
//
// Thread-safe: I/O threads complete pieces; any thread may poll or wait.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "client/client.h"
#include "client/copy_behind.h"
#include "client/retention.h"
#include "common/clock.h"
#include "common/thread_annotations.h"
#include "protocol/partition.h"

namespace rs::client {

class OperationImpl;

// An I/O lease on an operation: while any is held, a socket may still read
// into or write from the operation's buffers, so it is not Done(). Made only
// by OperationImpl::Lease; gives the lease back exactly once, when destroyed
// or reset, so whatever holds one (a piece queued on a stream, a read in
// flight) cannot be dropped without giving it back. Move-only: a moved-from
// lease holds nothing. Giving it back takes the operation's mutex (and may
// complete it, which wakes its waiters and may free its retained copy): fine
// under the client's mutex (lock order: the client's, then an operation's,
// client_impl.h), never under the operation's own.
class OpLease {
 public:
  OpLease() = default;
  OpLease(OpLease&& other) noexcept = default;  // a moved-from shared_ptr is empty
  OpLease& operator=(OpLease&& other) noexcept;
  OpLease(const OpLease&) = delete;
  OpLease& operator=(const OpLease&) = delete;
  ~OpLease() { reset(); }

  void reset();
  explicit operator bool() const { return op_ != nullptr; }
  OperationImpl* operator->() const { return op_.get(); }

 private:
  friend class OperationImpl;
  explicit OpLease(std::shared_ptr<OperationImpl> op) : op_(std::move(op)) {}

  std::shared_ptr<OperationImpl> op_;
};

class OperationImpl final : public Operation {
 public:
  // Pieces are sent from `send` until a retained copy takes over (see
  // RetainInto and Restart). `recv` null makes a shadow. Pieces name
  // reducers by their index in the client's list.
  // `wire`: the client's wire type of float32 sums (ClientOptions::wire_dtype).
  OperationImpl(uint64_t seq, const void* send, void* recv, uint64_t count, DataType dtype, ReduceOp op,
                uint32_t epoch, std::vector<protocol::PieceSpan> pieces, uint32_t reducers, Clock::time_point start,
                DataType wire = DataType::kFloat32);

  bool Done() const override;
  Status Wait(std::chrono::milliseconds timeout) override;
  Status status() const override;
  uint64_t seq() const override { return seq_; }
  OperationTimes times() const override;

  // Where pieces are sent from: the caller's send buffer, or the retained
  // copy of it. Read and changed under the client's lock only.
  const uint8_t* source() const { return source_; }
  // Failover: this operation's input is to be kept in `copy`, made behind
  // the sends (copy_behind.h) while pieces go out from the caller's buffer.
  // Call once, before the first piece is issued. The operation holds the
  // copy's lease (retention.h) until it is Done (no piece is being written
  // from the copy: every write holds an I/O lease) and the copy is made
  // (CopyInput has returned), whichever comes last; a handle the caller
  // keeps does not keep the copy.
  // A float32 sum on a bfloat16 wire keeps its copy narrowed (NarrowedCopy):
  // RetainedBytes() of ring, and its pieces go out from the copy, whose
  // chunks are made first where needed (WireElements).
  void RetainInto(const RetainedCopy& copy);
  size_t RetainedBytes() const;
  // The narrowed copy, once RetainInto made one (null otherwise).
  const std::shared_ptr<NarrowedCopy>& narrowed() const { return narrowed_; }
  // A shadow's input is a copy retained earlier: it holds that copy's lease,
  // and reads a narrowed copy through `narrowed`.
  void HoldSourceLease(std::shared_ptr<const void> lease, std::shared_ptr<NarrowedCopy> narrowed = nullptr) {
    source_lease_ = std::move(lease);
    narrowed_ = std::move(narrowed);
  }
  // With a narrowed copy: a piece's elements as they go on the wire, made
  // first where the copy is still being made (NarrowedCopy::Elements).
  // I/O threads, after the pieces were issued.
  const uint16_t* WireElements(uint64_t offset, uint64_t count, std::vector<float>* wide);
  // Completes the copy (the calling thread, after issuing the pieces).
  void CopyInput();
  // Before a result is read into [offset, offset + bytes) of the receive
  // buffer: the input there must be copied first (in-place operations).
  void BeforeResult(size_t offset, size_t bytes);
  void* recv() const { return recv_; }
  bool shadow() const { return recv_ == nullptr; }
  uint64_t count() const { return count_; }
  DataType dtype() const { return dtype_; }
  ReduceOp op() const { return op_; }
  // The type this operation's pieces travel in: the wire type for a float32
  // sum on a 16-bit wire (protocol::kPieceWideSum), otherwise kFloat32.
  DataType wire() const { return wire_; }
  Clock::time_point start() const { return start_; }
  uint32_t epoch() const;
  std::vector<protocol::PieceSpan> pieces() const;

  // An I/O lease on `op`, or an empty one when `op` is null or already has
  // a result (no new I/O on buffers the caller may have freed).
  [[nodiscard]] static OpLease Lease(std::shared_ptr<OperationImpl> op);

  enum class Claim { kClaimed, kStale, kError };
  // Checks a RESULT header against what was sent to `reducer`: the whole
  // piece, or the part of it that follows the parts received so far. On
  // success marks those elements as being received (anything else is an
  // error); *last: they end the piece.
  // kStale: the result belongs to an epoch this operation has left.
  Claim ClaimResult(uint32_t reducer, const protocol::PieceHeader& header, bool* last, Status* error);
  // The piece's bytes are in place. Returns true for the last piece of the
  // operation's epoch, which completes it; false for a stale one.
  bool PieceDone(uint32_t epoch);
  // Starts over in a new epoch with its partition; pieces then go out from
  // the retained copy, completed first where it is still being made.
  void Restart(uint32_t epoch, std::vector<protocol::PieceSpan> pieces);
  // Sets the result if none is set yet.
  void Finish(const Status& status);
  // For a client whose I/O threads have all stopped: nothing touches the
  // buffers any more, so the leases the I/O held (a write or read that will
  // never complete) are void. Finishes with `status` unless a result is set.
  void Abandon(const Status& status);
  // Reducers (by index) that still owe pieces, for timeout messages.
  std::vector<uint32_t> PendingReducers() const;

 private:
  friend class OpLease;
  bool Acquire();  // unless the operation has a result
  void Release();  // OpLease's, once per Acquire
  void MaybeSignalLocked() RS_REQUIRES(mu_);

  const uint64_t seq_;
  const void* const send_;
  const uint8_t* source_;
  void* const recv_;
  const uint64_t count_;
  const DataType dtype_;
  const ReduceOp op_;
  const DataType wire_;
  const uint32_t reducers_;
  const Clock::time_point start_;
  // Keeps an overflow copy (retention.h); guarded by mu_ once published.
  std::shared_ptr<const void> source_lease_;
  uint8_t* retained_ = nullptr;        // the failover copy, if any
  std::shared_ptr<NarrowedCopy> narrowed_;  // the copy, if kept in the wire type
  std::unique_ptr<CopyBehind> copy_;   // how it is being made, if behind the sends

  mutable Mutex mu_;
  std::condition_variable cv_;
  uint32_t epoch_ RS_GUARDED_BY(mu_);
  std::vector<protocol::PieceSpan> pieces_ RS_GUARDED_BY(mu_);
  std::vector<uint64_t> claimed_ RS_GUARDED_BY(mu_);  // elements per piece
  size_t pieces_left_ RS_GUARDED_BY(mu_);
  int leases_ RS_GUARDED_BY(mu_) = 0;
  bool has_result_ RS_GUARDED_BY(mu_) = false;
  bool done_ RS_GUARDED_BY(mu_) = false;     // result set and no leases
  bool copying_ RS_GUARDED_BY(mu_) = false;  // CopyInput has not returned yet
  Status status_ RS_GUARDED_BY(mu_);
  Clock::time_point first_result_at_ RS_GUARDED_BY(mu_);
  Clock::time_point done_at_ RS_GUARDED_BY(mu_);
};

}  // namespace rs::client
