// One piece of one operation on a reducer: a slot per rank for its
// contribution (reduced into slot 0), which ranks have begun and finished
// sending it, and the cut-through bookkeeping of its result: what each rank
// has delivered, what is claimed for reduction, and which reduced parts
// went out. The result goes out whole, or in parts of at least
// `part_elements` (the last may be shorter) as soon as every rank's
// contribution to a part is in, always in order.
//
// The session's table of pending pieces (piece_table.h) holds it until
// every rank has finished it, and the session decides what its state means
// (a failure, a straggler, a completed operation); the piece keeps the
// records and sends its own parts. A piece lives in a shared_ptr
// (std::make_shared): each part it sends keeps it alive (ResultPart::piece).
//
// Threading: a piece is shared by the I/O threads of its ranks'
// connections. Its fields are guarded as follows:
//  - fixed at construction, read from any thread: header_, first_rank_,
//    buffer_, slot_bytes_, part_elements_, first_arrival_.
//  - guarded by the session's mutex (Session::mu_), which the caller of the
//    *Locked methods holds: begun_, ended_, ended_count_, first_end_.
//    first_end() reads first_end_ without it once EndLocked has returned
//    true: nothing writes it after that. Clang's analysis cannot follow a
//    mutex of another object, so this rule is in comments only.
//  - types_[rank]: written by BeginLocked under the session's mutex, before
//    any of the rank's bytes are delivered, then read without a lock by
//    whoever handles the rank's bytes.
//  - guarded by parts_mu_ (annotated, checked by clang): arrived_,
//    claimed_, sent_, reduced_ (Claim, Release, ReleaseReplies), and
//    reply_to_, whose entry for a rank BeginLocked sets under parts_mu_
//    too. Release reads it once every rank has delivered some elements (so
//    every rank has begun) and clears it once the result is out, as
//    ReleaseReplies does when the session lets go.
//  - the slots: a rank's slot is written only by the thread reading its
//    contribution; a claimed run [begin, end) only by the thread that
//    claimed it (Claim), which reduces it outside every lock.
//
// Lock order: Session::mu_, then Piece::parts_mu_, then
// Connection::results_mu_ (Release calls SessionMember::SendResult under
// parts_mu_). Nothing here takes the session's mutex. The first step is
// written on Session::mu_ (RS_ACQUIRED_BEFORE); server/core cannot name the
// connection's mutex.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "protocol/wire.h"
#include "server/core/memory_budget.h"
#include "server/core/session_member.h"

namespace rs::server {

// Slots of one piece's buffer, each as large as the largest piece: one per
// rank, and for a float32 sum on a 16-bit wire (`wire` not kFloat32) two
// more for its result. The reducer's largest piece is sized from this, so
// that one piece of any session it admits fits the memory limit.
inline uint32_t PieceSlots(uint32_t world, DataType wire) {
  return world + (wire == DataType::kFloat32 ? 0 : 2);
}

class Piece : public std::enable_shared_from_this<Piece> {
 public:
  // A run of elements [begin, end) from the piece's start.
  struct Run {
    uint64_t begin = 0;
    uint64_t end = 0;
  };

  // The bytes of one slot for a piece of `header`, 64-byte aligned: its
  // payload, or for a wide sum (kPieceWideSum) room for it in float32,
  // since each rank's elements may come in either type.
  static size_t SlotBytes(const protocol::PieceHeader& header);

  // `first_rank` sent `header` first, at `now`.
  Piece(const protocol::PieceHeader& header, uint32_t first_rank, uint32_t world,
        std::unique_ptr<PieceBuffer> buffer, size_t slot_bytes, uint64_t part_elements, Clock::time_point now);
  Piece(const Piece&) = delete;
  Piece& operator=(const Piece&) = delete;

  // Fixed at construction: any thread.
  const protocol::PieceHeader& header() const { return header_; }
  // A float32 sum travelling in the session's wire type (kPieceWideSum).
  bool wide_sum() const { return (header_.flags & protocol::kPieceWideSum) != 0; }
  uint8_t* slot(uint32_t rank) { return buffer_->data() + rank * slot_bytes_; }
  // Cut-through: the result may go out in several parts, so the connections
  // report the contributions' progress (Session::ContributionProgress).
  bool in_parts() const { return part_elements_ < header_.count; }
  uint32_t world() const { return static_cast<uint32_t>(ended_.size()); }
  // When the first rank began its contribution.
  Clock::time_point first_arrival() const { return first_arrival_; }

  // Set by BeginLocked before any of the rank's bytes arrive: the type the
  // rank's elements come in (its header's dtype), and the bytes of its
  // whole contribution.
  DataType type(uint32_t rank) const { return types_[rank]; }
  uint64_t contribution_bytes(uint32_t rank) const { return header_.count * DataTypeSize(types_[rank]); }

  // Under the session's mutex:
  // Why `header` from `rank` does not match the header the piece began
  // with (the first field that differs, naming both ranks); "" if it does.
  std::string DisagreementLocked(const protocol::PieceHeader& header, uint32_t rank) const;
  // `rank` begins its contribution in `type`; its result goes to `member`.
  // False, and nothing changes, if the rank had begun already. Takes
  // parts_mu_ to set the rank's reply_to_.
  bool BeginLocked(uint32_t rank, DataType type, std::shared_ptr<SessionMember> member) RS_EXCLUDES(parts_mu_);
  // The rank's contribution is complete.
  bool EndedLocked(uint32_t rank) const { return ended_[rank] != 0; }
  // Marks the rank's contribution complete at `now` (once per rank:
  // EndedLocked says whether it was). True when it was the last rank's.
  bool EndLocked(uint32_t rank, Clock::time_point now);
  // The ranks whose contribution is not complete, in rank order.
  std::vector<uint32_t> MissingLocked() const;
  // When the first rank's contribution was complete; read it once
  // EndLocked has returned true.
  Clock::time_point first_end() const { return first_end_; }

  // What one Release call sent: each part once to every rank it answers.
  struct Sent {
    uint64_t bytes = 0;          // payload bytes, summed over the ranks sent to
    uint32_t float32_parts = 0;  // parts that went in float32 (a wide sum's fallback)
  };

  // Under parts_mu_, taken here:
  // `rank` has delivered `elements`. The run every rank has delivered since
  // the last claim, when it is a part's worth or the rest of the piece:
  // the caller reduces it and hands it to Release. Otherwise nothing.
  std::optional<Run> Claim(uint32_t rank, uint64_t elements) RS_EXCLUDES(parts_mu_);
  // The run claimed from `begin` is reduced into `data`, to go out with
  // `header`. Sends every reduced part that is next in order to every
  // rank, and lets go of the ranks' members once the whole result is out.
  // A piece of an epoch other than `current_epoch` (the ranks have left
  // it) is reduced but not sent, nor is anything once the replies are let
  // go (ReleaseReplies). Returns what went out, which may include parts
  // other threads reduced.
  Sent Release(uint64_t begin, const protocol::PieceHeader& header, const uint8_t* data, uint32_t current_epoch)
      RS_EXCLUDES(parts_mu_);
  // A piece not yet sent in full holds its ranks' members, and they may
  // hold it (the piece being read, results queued): a cycle that only
  // sending the whole result breaks. After this no result goes out.
  void ReleaseReplies() RS_EXCLUDES(parts_mu_);

 private:
  const protocol::PieceHeader header_;
  const uint32_t first_rank_;
  const std::unique_ptr<PieceBuffer> buffer_;
  const size_t slot_bytes_;
  const uint64_t part_elements_;           // header_.count: the result goes out whole
  const Clock::time_point first_arrival_;  // first rank began its contribution

  // Guarded by the session's mutex:
  Clock::time_point first_end_;   // first rank's contribution was complete
  std::vector<uint8_t> begun_;    // rank has started sending its contribution
  std::vector<uint8_t> ended_;    // rank's contribution is complete
  uint32_t ended_count_ = 0;

  // Written under the session's mutex when the rank begins (see above).
  std::vector<DataType> types_;

  // Elements, from the piece's start: what each rank has delivered, what is
  // claimed for reduction, what went out, and the reduced parts waiting for
  // the ones before them (by first element), with the bytes each part is
  // sent from. And who gets the result, until it is out.
  Mutex parts_mu_;
  std::vector<uint64_t> arrived_ RS_GUARDED_BY(parts_mu_);
  uint64_t claimed_ RS_GUARDED_BY(parts_mu_) = 0;
  uint64_t sent_ RS_GUARDED_BY(parts_mu_) = 0;
  std::map<uint64_t, std::pair<protocol::PieceHeader, const uint8_t*>> reduced_ RS_GUARDED_BY(parts_mu_);
  std::vector<std::shared_ptr<SessionMember>> reply_to_ RS_GUARDED_BY(parts_mu_);
};

}  // namespace rs::server
