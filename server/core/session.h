// A session: all ranks of one job (one NCCL communicator) on one reducer.
// It tracks who has joined, matches the ranks' contributions to each piece by
// (operation sequence, piece index), checks that every rank agrees on dtype,
// op and sizes, reduces a complete piece in rank order and hands the result
// to every rank's stream. It fails as a whole: a mismatch, a timeout or a
// rank lost without goodbye fails every rank with one message that names the
// ranks involved.
//
// No I/O: connections are reached through SessionMember, and time is passed
// in, so tests drive it directly.
//
// It also attributes stragglers: for each completed piece it records which
// rank's contribution completed last and how long the piece waited between
// the first and the last contribution, per session and into the reducer-wide
// ReducerStats.
//
// Threading: every method may be called from any I/O thread. One mutex
// guards membership and the table of pending pieces; payload bytes are
// received and reduced outside it. Members are called outside the lock.
// Counters read by stats() are atomics, so observers never wait on a
// reduction.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/core/memory_budget.h"
#include "server/core/recent_seq_set.h"
#include "server/core/reducer_stats.h"
#include "common/status.h"
#include "common/clock.h"
#include "protocol/wire.h"

namespace rs::server {


class Piece;

// One authenticated TCP stream of one rank, as the session sees it.
// Implementations must be thread-safe and must not call back into the
// session from these methods.
class SessionMember {
 public:
  virtual ~SessionMember() = default;
  virtual void SendReady() = 0;
  // Sends piece->header() and piece->result(); keeps `piece` alive until sent.
  virtual void SendResult(std::shared_ptr<Piece> piece) = 0;
  // Sends an ERROR frame, then closes the stream.
  virtual void SendErrorAndClose(const Status& status) = 0;
};

// One piece of one operation: a slot per rank, reduced into slot 0.
class Piece {
 public:
  Piece(const protocol::PieceHeader& header, uint32_t first_rank, uint32_t world,
        std::unique_ptr<PieceBuffer> buffer, size_t slot_bytes, Clock::time_point now);

  const protocol::PieceHeader& header() const { return header_; }
  const uint8_t* result() const { return buffer_->data(); }
  uint8_t* slot(uint32_t rank) { return buffer_->data() + rank * slot_bytes_; }

 private:
  friend class Session;
  protocol::PieceHeader header_;
  uint32_t first_rank_;
  std::unique_ptr<PieceBuffer> buffer_;
  size_t slot_bytes_;
  Clock::time_point first_arrival_;  // first rank began its contribution
  // Guarded by the session's mutex:
  Clock::time_point first_end_;      // first rank's contribution was complete
  std::vector<uint8_t> begun_;   // rank has started sending its contribution
  std::vector<uint8_t> ended_;   // rank's contribution is complete
  uint32_t ended_count_ = 0;
  std::vector<std::shared_ptr<SessionMember>> reply_to_;  // per rank
};

struct SessionLimits {
  // Largest piece payload accepted (bytes); also announced in WELCOME.
  uint64_t max_piece_bytes = 4 << 20;
  std::chrono::milliseconds op_timeout{30'000};
  std::chrono::milliseconds join_timeout{60'000};
};

struct SessionStats {
  uint32_t world = 0;
  uint16_t streams = 0;             // per rank
  uint32_t ranks_joined = 0;
  bool ready = false;
  bool failed = false;
  uint64_t operations_completed = 0;  // with at least one piece reduced here
  uint64_t pieces_completed = 0;
  uint64_t bytes_received = 0;
  uint64_t bytes_sent = 0;
  double straggler_wait_seconds = 0;  // summed over pieces
  std::vector<uint64_t> last_arrivals;  // per rank: pieces it completed last
};

struct RankCount {
  uint32_t rank = 0;
  uint64_t count = 0;
};
// The ranks most often last to arrive, most often first (ties: lower rank
// first), only those last at least once, at most `max` of them: the bounded
// answer to "who is this job waiting for".
std::vector<RankCount> SlowestRanks(const SessionStats& stats, size_t max);

// What BeginContribution tells the connection to do next.
struct Contribution {
  enum class Kind { kReceive, kWaitForMemory, kFailed };
  Kind kind = Kind::kFailed;
  std::shared_ptr<Piece> piece;  // kReceive: read the payload into `dest`
  uint8_t* dest = nullptr;
  Status status;                 // kFailed: why (the session may already be failed)
};

class Session {
 public:
  // `stats` collects the reducer-wide counters; null gives the session its own.
  Session(const protocol::SessionId& id, uint32_t world, uint16_t streams,
          std::shared_ptr<MemoryBudget> budget, SessionLimits limits, Clock::time_point now,
          std::shared_ptr<ReducerStats> stats = nullptr);

  const protocol::SessionId& id() const { return id_; }
  uint32_t world() const { return world_; }
  Clock::time_point created() const { return created_; }

  // Adds an authenticated stream. Errors concern only the joining stream,
  // except a world or stream-count disagreement, which fails the session.
  Status Join(const protocol::Hello& hello, std::shared_ptr<SessionMember> member);

  // A stream ended. `clean` when the rank said BYE. A rank lost without BYE
  // fails the session. Returns true when no member is left (the session can
  // be dropped).
  bool Leave(uint32_t rank, uint16_t stream, bool clean, const Status& why);

  // A DATA frame's header arrived from (rank, member). On kWaitForMemory
  // `wake` has been registered with the budget; call again when it fires.
  Contribution BeginContribution(uint32_t rank, const std::shared_ptr<SessionMember>& member,
                                 uint16_t stream, const protocol::PieceHeader& header,
                                 std::function<void()> wake, Clock::time_point now);
  // The payload has been read into the slot at `now`. The last rank's call
  // reduces the piece (on the calling thread), records it as the piece's
  // straggler and sends the result to every rank.
  void EndContribution(uint32_t rank, const std::shared_ptr<Piece>& piece, Clock::time_point now = Clock::now());

  // Fails the session if it was not ready in time or a piece waited too long.
  void CheckTimeouts(Clock::time_point now);

  // Fails the session: every member gets `status` and is closed.
  void Fail(const Status& status);

  // Lets go of every member and pending piece without telling anyone: for
  // teardown once the I/O threads have stopped, since members and the
  // session hold each other until a member leaves.
  void DropMembers();

  Status failure() const;
  SessionStats stats() const;
  // Every rank has joined with all its streams (still true after a later failure).
  bool ready() const;

 private:
  using PieceKey = std::pair<uint64_t, uint32_t>;  // (seq, piece index)
  struct Stream {
    std::shared_ptr<SessionMember> member;
    PieceKey last{0, 0};
    bool sent_any = false;
  };

  size_t StreamIndex(uint32_t rank, uint16_t stream) const { return size_t{rank} * streams_ + stream; }
  std::vector<std::shared_ptr<SessionMember>> FailLocked(const Status& status);
  std::string MissingRanksLocked() const;
  void Reduce(Piece& piece);

  const protocol::SessionId id_;
  const std::string name_;  // hex id, for messages
  const uint32_t world_;
  const uint16_t streams_;
  const std::shared_ptr<MemoryBudget> budget_;
  const SessionLimits limits_;
  const Clock::time_point created_;
  const std::shared_ptr<ReducerStats> reducer_stats_;

  mutable std::mutex mu_;
  std::vector<Stream> members_;               // guarded by mu_; world * streams
  uint32_t joined_ = 0;                       // guarded by mu_: streams joined and not left
  uint32_t ever_joined_ = 0;                  // guarded by mu_
  bool ready_ = false;                        // guarded by mu_
  Status failure_;                            // guarded by mu_
  std::map<PieceKey, std::shared_ptr<Piece>> pending_;  // guarded by mu_
  RecentSeqSet completed_ops_;                // guarded by mu_

  std::atomic<uint64_t> pieces_completed_{0};
  std::atomic<uint64_t> bytes_received_{0};
  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> operations_completed_{0};
  std::atomic<uint64_t> straggler_wait_ns_{0};
  const std::unique_ptr<std::atomic<uint64_t>[]> last_arrivals_;  // world entries
};

}  // namespace rs::server
