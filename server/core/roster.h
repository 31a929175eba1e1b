// Who is in a session: a slot per (rank, stream) holding the stream's
// member, the last piece it sent and its path's smallest round trip; how
// many streams have joined; whether every rank has joined with all its
// streams (the session is ready); and which ranks have left cleanly, and
// how. It applies the join rules (a HELLO must agree with the session's
// world, streams, failover and wire type; a slot is taken once; nobody
// joins a running session) and answers the questions the session asks of
// its membership: who is missing, who left before sending their part of a
// piece, whether every path is short enough for whole pieces.
//
// No I/O and no lock of its own: the session holds its mutex (Session::mu_)
// around every call, and calls the members it hands out only after
// releasing it. Names and settings given at construction are fixed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"
#include "protocol/wire.h"
#include "server/core/piece.h"
#include "server/core/session_member.h"

namespace rs::server {

// How a stream left its session (Session::Leave).
enum class Departure {
  // The rank said BYE: its client closed after its last operation.
  kGoodbye,
  // The connection ended (EOF) at a frame boundary, without BYE, in a ready
  // session with no piece pending on this reducer: the rank's process ended
  // between operations without closing its client (no atexit, os._exit). A
  // clean end too, unless another rank goes on; otherwise as kLost.
  kClosed,
  // Anything else: a reset, a broken frame, a silent rank, an ERROR from it.
  kLost,
};

// Large operations (SessionLimits::whole_pieces_from) get whole pieces only
// while every stream's path has reported a round trip (TCP's smallest) of at
// most this. On a long path a loss holds up a whole piece's result for a
// round trip or more: with 80 ms round trips and losses, 64 MiB operations
// took 8 % longer on average with whole pieces.
inline constexpr std::chrono::microseconds kWholePiecesMaxRtt{2000};

// "rank 3", "ranks 0, 2", "ranks 0, 1, ..., and 4 more" (at most 16 named).
std::string RankList(const std::vector<uint32_t>& ranks);

class Roster {
 public:
  // What a join did (Join).
  struct JoinOutcome {
    enum class Kind {
      kJoined,     // the stream took its slot; others are still to come
      kReady,      // the stream took the last free slot: the session is ready
      kRefused,    // the joiner alone is refused (`status` says why)
      kDisagrees,  // its settings disagree before the session is ready: a
                   // misconfigured job, which fails the session (`status`)
    };
    Kind kind = Kind::kRefused;
    Status status;
  };
  // A rank that left cleanly: how, and its connection's last word.
  struct Left {
    Departure how;
    std::string why;
  };

  // `name` is the session's id in hex, for messages; `flags` and `wire` are
  // the first HELLO's (protocol::HelloFlags, the wire type of float32 sums).
  Roster(std::string name, uint32_t world, uint16_t streams, uint32_t flags, DataType wire);

  // Takes the stream's slot for `member`, or says why not. A running
  // session is never failed by a join: only the late joiner is refused.
  JoinOutcome Join(const protocol::Hello& hello, std::shared_ptr<SessionMember> member);
  // Why `hello` does not fit this session (world, streams, failover, wire
  // type), or Ok. Reads only what is fixed at construction.
  Status Disagreement(const protocol::Hello& hello) const;
  // Frees the stream's slot. False if it held no member (never joined, or
  // left already).
  bool Leave(uint32_t rank, uint16_t stream);
  // Records that `rank` left cleanly (the first departure is kept).
  void Departed(uint32_t rank, Departure how, std::string why);
  // Empties every slot (teardown), handing back the members.
  std::vector<std::shared_ptr<SessionMember>> TakeMembers();

  bool ready() const { return ready_; }
  // Streams joined and not left.
  uint32_t joined() const { return joined_; }
  // Ranks with at least one stream joined.
  uint32_t ranks_joined() const;
  // Every HELLO so far asked for results in parts (kHelloResultParts).
  bool all_take_parts() const { return !rank_without_parts_; }
  // The first rank whose HELLO did not (an older client), if any.
  std::optional<uint32_t> rank_without_parts() const { return rank_without_parts_; }
  // Every joined stream's round trip is known and at most kWholePiecesMaxRtt.
  bool paths_short() const { return paths_short_; }

  // Every stream joined and not left, in slot order.
  std::vector<std::shared_ptr<SessionMember>> Members() const;
  // The rank's first stream still joined, or nullptr: the one control
  // frames (HEARTBEAT, MEMBERSHIP) go to.
  std::shared_ptr<SessionMember> FirstMember(uint32_t rank) const;
  // The ranks not joined with all their streams, as RankList says them.
  std::string MissingRanks() const;

  // What TCP measured on a stream's path: its smallest round trip (0: not
  // measured yet). Out-of-range streams are ignored.
  void ReportRoundTrip(uint32_t rank, uint16_t stream, uint32_t min_rtt_us);

  // Each stream sends its pieces in (epoch, seq, piece) order: an error
  // naming the rank when `header` is not after the stream's last piece.
  Status OutOfOrder(uint32_t rank, uint16_t stream, const protocol::PieceHeader& header) const;
  // `header` is the stream's last piece now.
  void Sent(uint32_t rank, uint16_t stream, const protocol::PieceHeader& header);

  // How `rank` left, if it left cleanly; nullptr otherwise.
  const Left* departure(uint32_t rank) const { return departed_[rank] ? &*departed_[rank] : nullptr; }
  // A rank other than `rank` that left cleanly and has not sent its part of
  // `piece` (nullptr: a piece nobody has sent yet): it never will. Reads
  // the piece's records under the session's mutex (Piece::EndedLocked).
  std::optional<uint32_t> DepartedFrom(uint32_t rank, const Piece* piece) const;
  // "ranks 0, 2" that left without goodbye (Departure::kClosed); "" if none.
  std::string ClosedWithoutGoodbye() const;

 private:
  using StreamKey = std::tuple<uint32_t, uint64_t, uint32_t>;  // (epoch, seq, piece index)
  struct Stream {
    std::shared_ptr<SessionMember> member;
    StreamKey last{0, 0, 0};
    bool sent_any = false;
    uint32_t min_rtt_us = 0;  // the path's smallest round trip; 0: not reported
  };

  size_t StreamIndex(uint32_t rank, uint16_t stream) const { return size_t{rank} * streams_ + stream; }

  const std::string name_;
  const uint32_t world_;
  const uint16_t streams_;
  const uint32_t flags_;
  const DataType wire_;

  std::vector<Stream> members_;  // world * streams
  uint32_t joined_ = 0;
  bool ready_ = false;
  std::optional<uint32_t> rank_without_parts_;
  bool paths_short_ = false;
  std::vector<std::optional<Left>> departed_;  // per rank, once it has left cleanly
};

}  // namespace rs::server
