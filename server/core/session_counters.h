// A session's data-plane counters, and the same events recorded into the
// reducer-wide ReducerStats, in one place: bytes received (whole
// contributions) and sent (result parts as they go out), pieces and
// operations completed, and straggler attribution (which rank completed
// each piece last, and how long the piece waited between its first and its
// last contribution). Each event has one method, so that a session and the
// reducer count it once and alike.
//
// Threading: every method may be called from any thread, under the
// session's mutex or not: the counters are relaxed atomics, so that
// observers (Session::stats) never wait on a reduction and recording costs
// the I/O threads a few adds per piece.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "server/core/piece.h"
#include "server/core/reducer_stats.h"

namespace rs::server {

// What SessionCounters has counted (SessionStats carries it out).
struct SessionCounts {
  uint64_t operations_completed = 0;  // with at least one piece reduced here
  uint64_t pieces_completed = 0;
  uint64_t bytes_received = 0;
  uint64_t bytes_sent = 0;
  double straggler_wait_seconds = 0;    // summed over pieces
  std::vector<uint64_t> last_arrivals;  // per rank: pieces it completed last
};

class SessionCounters {
 public:
  // `reducer` collects the reducer-wide counters (never null).
  SessionCounters(uint32_t world, std::shared_ptr<ReducerStats> reducer);
  SessionCounters(const SessionCounters&) = delete;
  SessionCounters& operator=(const SessionCounters&) = delete;

  // `rank`'s whole contribution to `piece` has been read (its bytes in the
  // type it came in; a wide sum's also as the float32 they stand for).
  void OnContributionBytes(const Piece& piece, uint32_t rank);
  // Piece::Release sent these parts of `piece`'s result (nothing when they
  // were dropped: an epoch the ranks have left, a failed session).
  void OnResultPartsSent(const Piece& piece, const Piece::Sent& sent);
  // `piece` is complete: `last_rank`'s contribution completed it, after
  // `wait` from the first contribution's end; `latency` runs from the first
  // contribution's start to the result being reduced.
  void OnPieceCompleted(const Piece& piece, uint32_t last_rank, std::chrono::nanoseconds latency,
                        std::chrono::nanoseconds wait);
  // The first piece of an operation completed here.
  void OnOperationCompleted();
  // The session failed with `code`: counted once per session.
  void OnFailure(Code code) { reducer_->CountError(code); }

  SessionCounts Snapshot() const;

 private:
  const uint32_t world_;
  const std::shared_ptr<ReducerStats> reducer_;
  std::atomic<uint64_t> operations_completed_{0};
  std::atomic<uint64_t> pieces_completed_{0};
  std::atomic<uint64_t> bytes_received_{0};
  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> straggler_wait_ns_{0};
  const std::unique_ptr<std::atomic<uint64_t>[]> last_arrivals_;  // world entries
};

}  // namespace rs::server
