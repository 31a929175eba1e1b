// A session's pending pieces: those some rank has begun and not every rank
// has finished, by (operation sequence, piece index). It finds the piece a
// DATA frame belongs to, makes a new one with its buffer from the memory
// budget, takes out a piece every rank has finished (remembering which
// operations have completed here), answers what the session asks of what
// is pending (is a piece still waiting for a rank, has one waited too
// long), and drops the pieces when the session fails, moves to a new epoch,
// is evicted or is torn down.
//
// No I/O and no lock of its own: the session holds its mutex (Session::mu_)
// around every call, which also guards the pieces' *Locked records
// (piece.h). Dropping a piece only takes it out of the table: its memory
// goes back to the budget with the last reference to it (a connection still
// reading into it, a result part still queued).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/dtype.h"
#include "protocol/wire.h"
#include "server/core/memory_budget.h"
#include "server/core/piece.h"
#include "server/core/recent_seq_set.h"

namespace rs::server {

class PieceTable {
 public:
  // Pieces of `world` ranks; `wire` is the session's wire type of float32
  // sums (kFloat32: off), whose pieces need two more slots (PieceSlots).
  PieceTable(uint32_t world, DataType wire, std::shared_ptr<MemoryBudget> budget);
  PieceTable(const PieceTable&) = delete;
  PieceTable& operator=(const PieceTable&) = delete;

  // The pending piece `header` belongs to (its seq and piece index), or nullptr.
  std::shared_ptr<Piece> Find(const protocol::PieceHeader& header) const;
  // A new pending piece for `header`, first sent by `rank` at `now`, whose
  // result goes out in parts of `part_elements` (its count: whole); nullptr
  // when the budget cannot cover it now (`wake` is then registered with it).
  std::shared_ptr<Piece> Create(uint32_t rank, const protocol::PieceHeader& header, uint64_t part_elements,
                                std::function<void()> wake, Clock::time_point now);
  // Every rank has finished `piece`: it is pending no more. True when it is
  // the first piece of its operation to complete here, which is when the
  // operation counts as completed (recent_seq_set.h says why).
  bool Complete(const Piece& piece);

  bool empty() const { return pending_.empty(); }
  size_t size() const { return pending_.size(); }
  // The first pending piece in (operation, piece) order that `rank` has not
  // finished sending (Piece::EndedLocked), or nullptr.
  const Piece* FirstAwaiting(uint32_t rank) const;
  // The first pending piece in (operation, piece) order whose first
  // contribution began more than `limit` before `now`, or nullptr.
  const Piece* FirstOlderThan(Clock::time_point now, std::chrono::milliseconds limit) const;

  // Drops every pending piece: the ranks moved to a new epoch and redo its
  // operations (a piece of an older epoch still being received or reduced
  // sends nothing, Piece::Release), or they evicted this reducer.
  void DropAll();
  // Drops every pending piece after a failure, letting go of their replies
  // first (Piece::ReleaseReplies): no result goes out after a failure, and
  // a piece not yet sent in full holds its ranks' members, which may hold
  // it (the piece being read, results queued). Takes each piece's
  // parts_mu_, under the session's mutex (lock order: session.h).
  void FailAll();
  // Teardown: hands every pending piece over, in (operation, piece) order,
  // for the caller to let go of their replies outside the session's mutex.
  std::vector<std::shared_ptr<Piece>> TakeAll();

 private:
  using Key = std::pair<uint64_t, uint32_t>;  // (seq, piece index)
  static Key KeyOf(const protocol::PieceHeader& header) { return {header.seq, header.piece}; }

  const uint32_t world_;
  const DataType wire_;
  const std::shared_ptr<MemoryBudget> budget_;
  std::map<Key, std::shared_ptr<Piece>> pending_;
  RecentSeqSet completed_ops_;
};

}  // namespace rs::server
