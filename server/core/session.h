// A session: all ranks of one job (one NCCL communicator) on one reducer.
// Its roster (roster.h) tracks who has joined with which streams and who
// has left. The session matches the ranks' contributions to each piece by
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
// the first and the last contribution. This and the bytes, pieces and
// operations are counted in one place (session_counters.h), per session and
// into the reducer-wide ReducerStats; bytes sent are the result parts that
// went out.
//
// A float32 sum on a 16-bit wire (protocol::kPieceWideSum) gets a slot of
// float32 size per rank, since each rank's piece may come in the wire type
// or, when its values did not fit, in float32, plus two slots for the
// result: the float32 sum of the widened pieces in rank order, and that sum
// rounded once to the wire type. Each result part goes in the wire type
// when all of it fits, else in float32 (the elements that fit still
// rounded), so no Inf or NaN is made on the way and every element's value
// is the same however the piece was cut into parts (part_reducer.h).
//
// With failover (the ranks' HELLO says so) it also takes part in membership
// epochs (failover_coordinator.h): it keeps the session's completion
// watermark (watermark_tracker.h) and relays it to the ranks, coordinates a
// new epoch when the ranks ask it to, drops the pieces of an epoch when the
// ranks announce the next one (and discards any still arriving), and leaves
// quietly when the ranks evict it.
//
// Threading: every method may be called from any I/O thread. One mutex
// (mu_) guards the roster, the table of pending pieces (piece_table.h) and
// the failover state; payload bytes are received and reduced outside it. Members are
// called outside the lock. Counters read by stats() are atomics
// (session_counters.h), so observers never wait on a reduction. What mu_
// guards and the functions that need it (*Locked) are annotated, and clang
// checks them (common/thread_annotations.h).
//
// Lock order: Session::mu_, then Piece::parts_mu_, then
// Connection::results_mu_ (server/net/connection.h); which of a piece's
// fields each of the first two guards is in piece.h. A piece's first
// contribution from a rank records the rank's member under both
// (Piece::BeginLocked), and a failure takes a pending piece's parts_mu_
// under mu_ to let go of its replies (PieceTable::FailAll); a
// piece's parts go to its members under parts_mu_, so that they leave in
// order, and SendResult takes the connection's results_mu_ only to queue
// them. Nothing takes mu_ under the other two, and Deliver never runs
// under mu_. The MemoryBudget's mutex is a leaf below mu_: buffers are
// allocated under it (BeginLocked) and freed when a failure drops the
// pending pieces; the budget runs its wake-ups after releasing its own
// lock, and they only post to a connection. The order is written here, not
// on the mutexes (RS_ACQUIRED_BEFORE): naming another class's private mutex
// takes a friend, and clang checks an order only with -Wthread-safety-beta.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "protocol/membership.h"
#include "protocol/wire.h"
#include "server/core/failover_coordinator.h"
#include "server/core/memory_budget.h"
#include "server/core/piece.h"
#include "server/core/piece_table.h"
#include "server/core/roster.h"
#include "server/core/server_defaults.h"
#include "server/core/reducer_stats.h"
#include "server/core/session_counters.h"
#include "server/core/watermark_tracker.h"

namespace rs::server {

struct SessionLimits {
  // Largest piece payload accepted (bytes); also announced in WELCOME.
  uint64_t max_piece_bytes = kDefaultMaxPiece.value;
  std::chrono::milliseconds op_timeout = kDefaultOpTimeout.value;
  std::chrono::milliseconds join_timeout = kDefaultJoinTimeout.value;
  // Send a CRC32C with the result of pieces whose contributions carry one.
  bool crc = kDefaultCrc.value;
  // When the ranks take results in parts (kHelloResultParts): the smallest
  // part worth a RESULT frame. 0: whole pieces only; unset: from the
  // session's ranks (AutoResultPartBytes).
  std::optional<uint64_t> result_part_bytes;
  // Operations cut into at least this many pieces per rank get whole pieces
  // even then (0: parts for every operation). Whole pieces delay the
  // operation's end by one piece from every rank on the reducer's link, at
  // most world / pieces of the operation, and save a frame, a wake-up of
  // every rank's connection and a reduction call per part.
  uint32_t whole_pieces_from = kDefaultWholePiecesFrom;  // ... on short paths only (kWholePiecesMaxRtt)
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
  // The smallest result part, fixed when every rank has joined; 0: whole
  // pieces (--result-part 0, a rank that does not take parts, not ready).
  uint64_t result_part_bytes = 0;
  // The first rank whose client does not take parts (an older client).
  std::optional<uint32_t> rank_without_parts;
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
  // kDiscard: a piece of an epoch the ranks have left; read its payload and
  // drop it.
  enum class Kind { kReceive, kWaitForMemory, kFailed, kDiscard };
  Kind kind = Kind::kFailed;
  std::shared_ptr<Piece> piece;  // kReceive: read the payload into `dest`
  uint8_t* dest = nullptr;
  Status status;                 // kFailed: why (the session may already be failed)
};

class Session {
 public:
  // `stats` collects the reducer-wide counters; null gives the session its own.
  // `flags` are the first HELLO's (protocol::HelloFlags); every rank must
  // agree on failover. Results go out in parts when every rank asks.
  // `wire` is the first HELLO's wire type of float32 sums (kFloat32: off);
  // every rank must agree.
  Session(const protocol::SessionId& id, uint32_t world, uint16_t streams,
          std::shared_ptr<MemoryBudget> budget, SessionLimits limits, Clock::time_point now,
          std::shared_ptr<ReducerStats> stats = nullptr, uint32_t flags = 0,
          DataType wire = DataType::kFloat32);

  const protocol::SessionId& id() const { return id_; }
  uint32_t world() const { return world_; }
  Clock::time_point created() const { return created_; }
  bool failover() const { return (flags_ & protocol::kHelloFailover) != 0; }
  DataType wire() const { return wire_; }
  // The newest epoch the ranks announced here, and the session's completion
  // watermark within it (lock-free, for the RESULT frames' headers).
  uint32_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  uint64_t watermark() const { return watermark_.load(std::memory_order_acquire); }

  // A rank's heartbeat. When it wants the watermark, the answer to send now;
  // otherwise the rank gets one as soon as the watermark moves.
  std::optional<protocol::Heartbeat> OnHeartbeat(uint32_t rank, const protocol::Heartbeat& heartbeat);
  // A MEMBERSHIP frame from a rank (report, announce, evict).
  void OnMembership(uint32_t rank, const protocol::MembershipFrame& frame);

  // Adds an authenticated stream. Errors concern only the joining stream,
  // except a disagreement (world, streams, failover, wire type) before the
  // session is ready, which fails it: a misconfigured job. A running
  // (ready) session is never failed by a join: the late joiner alone is
  // refused, with why (already running, slot taken, settings disagree).
  Status Join(const protocol::Hello& hello, std::shared_ptr<SessionMember> member);

  // A stream ended. A rank lost (Departure::kLost) fails the session, and so
  // does one closed (kClosed) while a piece is pending here. A rank that
  // leaves cleanly (kGoodbye, or kClosed with nothing pending) ends its
  // membership: the session fails only if an operation is waiting for it,
  // now or later (a piece it will never send), with an error naming it;
  // when every rank has left that way the session has ended well. Returns
  // true when no member is left (the session can be dropped).
  bool Leave(uint32_t rank, uint16_t stream, Departure how, const Status& why);
  // "ranks 0, 2" that left without goodbye (Departure::kClosed); "" if none.
  std::string ClosedWithoutGoodbye() const;

  // A DATA frame's header arrived from (rank, member). On kWaitForMemory
  // `wake` has been registered with the budget; call again when it fires.
  Contribution BeginContribution(uint32_t rank, const std::shared_ptr<SessionMember>& member,
                                 uint16_t stream, const protocol::PieceHeader& header,
                                 std::function<void()> wake, Clock::time_point now);
  // The first `bytes` of the payload are in the slot (checked already, if
  // the rank sent a CRC32C). When the piece's result goes out in parts
  // (Piece::in_parts), the calling thread reduces and sends what every rank
  // has delivered, if that is a part's worth. Never the whole payload:
  // EndContribution says so.
  void ContributionProgress(uint32_t rank, const std::shared_ptr<Piece>& piece, uint64_t bytes);
  // The smallest result part (bytes), or 0 when results go out whole. Even
  // when it is not 0, the pieces of large operations go out whole
  // (SessionLimits::whole_pieces_from): Piece::in_parts says which.
  uint64_t result_part_bytes() const { return part_bytes_.load(std::memory_order_acquire); }
  // The first rank whose client does not take results in parts (an older
  // client), if any: the session's results then go out whole.
  std::optional<uint32_t> rank_without_parts() const;
  // What TCP measured on a stream's path: its smallest round trip (0: not
  // measured yet). Large operations get whole pieces only while every
  // joined stream has reported one of at most kWholePiecesMaxRtt.
  void ReportRoundTrip(uint32_t rank, uint16_t stream, uint32_t min_rtt_us);
  // The payload has been read into the slot at `now`. The last rank's call
  // reduces what is left of the piece (on the calling thread), records it
  // as the piece's straggler and sends the result to every rank.
  void EndContribution(uint32_t rank, const std::shared_ptr<Piece>& piece, Clock::time_point now = Clock::now());

  // Fails the session if it was not ready in time, a piece waited too long,
  // or a stream waited for memory longer than twice the operation timeout.
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
  // Frames to send once the lock is released.
  using Outbox = std::vector<std::pair<std::shared_ptr<SessionMember>, std::vector<uint8_t>>>;

  std::vector<std::shared_ptr<SessionMember>> FailLocked(const Status& status) RS_REQUIRES(mu_);
  Contribution BeginLocked(uint32_t rank, const std::shared_ptr<SessionMember>& member, uint16_t stream,
                           const protocol::PieceHeader& header, std::function<void()> wake, Clock::time_point now,
                           std::vector<std::shared_ptr<SessionMember>>* notify, Outbox* outbox) RS_REQUIRES(mu_);
  // BeginLocked's steps. Why the session takes no data now (failed, not
  // ready), without failing it.
  Status RefusalLocked(uint32_t rank) const RS_REQUIRES(mu_);
  // Each of these is an error that fails the session, or Ok: an epoch the
  // rank has not announced; a wide sum the session cannot take; a rank that
  // left and will not send its part of `piece` (nullptr: a piece nobody has
  // sent yet). The roster checks the order of each stream's pieces.
  Status UnannouncedEpochLocked(uint32_t rank, const protocol::PieceHeader& header) const RS_REQUIRES(mu_);
  Status WideSumRefusedLocked(uint32_t rank, const protocol::PieceHeader& header) const RS_REQUIRES(mu_);
  Status DepartedBeforeLocked(uint32_t rank, const protocol::PieceHeader& header, const Piece* piece) const
      RS_REQUIRES(mu_);
  // The parts policy: the smallest result part of a new piece (elements),
  // or its whole count when its result goes out whole.
  uint64_t PartElementsLocked(const protocol::PieceHeader& header) const RS_REQUIRES(mu_);
  // `rank` begins its contribution to `piece`; an error if its header
  // disagrees with the first rank's or the rank sent the piece twice.
  Status AddToPieceLocked(uint32_t rank, const std::shared_ptr<SessionMember>& member,
                          const protocol::PieceHeader& header, Piece& piece) RS_REQUIRES(mu_);
  // `rank` has delivered `elements` of the piece: reduces the run every
  // rank has delivered since the last claim when it is a part's worth (or
  // the rest), then sends the reduced parts that are next in order. Never
  // under mu_: it reduces, and sends under the piece's parts_mu_.
  void Deliver(uint32_t rank, const std::shared_ptr<Piece>& piece, uint64_t elements) RS_EXCLUDES(mu_);
  void ReportWatermarkLocked(uint32_t rank, uint64_t value, Outbox* outbox) RS_REQUIRES(mu_);
  void InstallLocked(uint32_t epoch, uint64_t start) RS_REQUIRES(mu_);
  void QueueLocked(const FailoverCoordinator::Actions& actions, Outbox* outbox) RS_REQUIRES(mu_);

  const protocol::SessionId id_;
  const std::string name_;  // hex id, for messages
  const uint32_t world_;
  const uint16_t streams_;
  const std::shared_ptr<MemoryBudget> budget_;
  const SessionLimits limits_;
  const Clock::time_point created_;
  const uint32_t flags_;
  const DataType wire_;

  mutable Mutex mu_;  // before Piece::parts_mu_ and MemoryBudget::mu_ (top of this file)
  Roster roster_ RS_GUARDED_BY(mu_);
  Status failure_ RS_GUARDED_BY(mu_);
  PieceTable pieces_ RS_GUARDED_BY(mu_);
  WatermarkTracker watermarks_ RS_GUARDED_BY(mu_);
  FailoverCoordinator coordinator_ RS_GUARDED_BY(mu_);
  std::vector<uint8_t> wants_watermark_ RS_GUARDED_BY(mu_);  // per rank
  // Streams whose next piece waits for memory (kWaitForMemory), since when
  // and for which piece: no pending piece shows them, and --op-timeout
  // must still end the wait, naming it.
  struct MemoryWait {
    Clock::time_point since;
    PieceKey piece;
  };
  std::map<std::pair<uint32_t, uint16_t>, MemoryWait> memory_waits_ RS_GUARDED_BY(mu_);  // (rank, stream)
  std::atomic<uint64_t> part_bytes_{0};       // written under mu_ when the session becomes ready
  std::atomic<uint32_t> epoch_{0};            // written under mu_
  std::atomic<uint64_t> watermark_{0};        // written under mu_

  SessionCounters counters_;  // atomics: read by stats() without mu_
};

}  // namespace rs::server
