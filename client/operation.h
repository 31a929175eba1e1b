// The state of one all-reduce in flight on the client: its partition, which
// pieces have come back, and its result. I/O on the user's buffers holds a
// lease on the operation, and the operation only reports Done() once its
// result is known AND no socket still reads into or writes from those
// buffers, so a caller may free them as soon as Done() is true.
//
// Thread-safe: I/O threads complete pieces; any thread may poll or wait.
#pragma once

#include <condition_variable>
#include <mutex>
#include <vector>

#include "client/client.h"
#include "protocol/partition.h"
#include "common/clock.h"

namespace rs::client {

class OperationImpl final : public Operation {
 public:
  OperationImpl(uint64_t seq, const void* send, void* recv, uint64_t count, DataType dtype, ReduceOp op,
                std::vector<protocol::PieceSpan> pieces, uint32_t reducers, Clock::time_point start);

  bool Done() const override;
  Status Wait(std::chrono::milliseconds timeout) override;
  Status status() const override;
  uint64_t seq() const override { return seq_; }

  const void* send() const { return send_; }
  void* recv() const { return recv_; }
  uint64_t count() const { return count_; }
  DataType dtype() const { return dtype_; }
  ReduceOp op() const { return op_; }
  const std::vector<protocol::PieceSpan>& pieces() const { return pieces_; }
  Clock::time_point start() const { return start_; }

  // Takes an I/O lease unless the operation already has a result.
  bool Acquire();
  void Release();
  // Checks a RESULT header against what was sent to `reducer`; on success
  // marks the piece as being received (a second RESULT for it is an error).
  Status ClaimResult(uint32_t reducer, const protocol::PieceHeader& header);
  // The piece's bytes are in recv. Returns true for the last piece, which
  // completes the operation.
  bool PieceDone();
  // Sets the result if none is set yet.
  void Finish(const Status& status);
  // Reducers (by index) that still owe pieces, for timeout messages.
  std::vector<uint32_t> PendingReducers() const;

 private:
  void MaybeSignalLocked();

  const uint64_t seq_;
  const void* const send_;
  void* const recv_;
  const uint64_t count_;
  const DataType dtype_;
  const ReduceOp op_;
  const std::vector<protocol::PieceSpan> pieces_;
  const Clock::time_point start_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint8_t> claimed_;      // guarded by mu_
  std::vector<uint32_t> owed_;        // guarded by mu_: pieces per reducer not yet back
  size_t pieces_left_;                // guarded by mu_
  int leases_ = 0;                    // guarded by mu_
  bool has_result_ = false;           // guarded by mu_
  bool done_ = false;                 // guarded by mu_: result set and no leases
  Status status_;                     // guarded by mu_
};

}  // namespace rs::client
