#include "server/core/piece_table.h"

namespace rs::server {

PieceTable::PieceTable(uint32_t world, DataType wire, std::shared_ptr<MemoryBudget> budget)
    : world_(world), wire_(wire), budget_(std::move(budget)) {}

std::shared_ptr<Piece> PieceTable::Find(const protocol::PieceHeader& header) const {
  auto it = pending_.find(KeyOf(header));
  return it == pending_.end() ? nullptr : it->second;
}

std::shared_ptr<Piece> PieceTable::Create(uint32_t rank, const protocol::PieceHeader& header,
                                          uint64_t part_elements, std::function<void()> wake,
                                          Clock::time_point now) {
  // A wide sum's slots fit either type, and two more hold its result.
  const bool wide = (header.flags & protocol::kPieceWideSum) != 0;
  const size_t slot = Piece::SlotBytes(header);
  auto buffer = budget_->TryAllocate(slot * PieceSlots(world_, wide ? wire_ : DataType::kFloat32), std::move(wake));
  if (buffer == nullptr) return nullptr;
  auto piece = std::make_shared<Piece>(header, rank, world_, std::move(buffer), slot, part_elements, now);
  pending_.emplace(KeyOf(header), piece);
  return piece;
}

bool PieceTable::Complete(const Piece& piece) {
  pending_.erase(KeyOf(piece.header()));
  return completed_ops_.Insert(piece.header().seq);
}

const Piece* PieceTable::FirstAwaiting(uint32_t rank) const {
  for (const auto& [key, piece] : pending_) {
    if (!piece->EndedLocked(rank)) return piece.get();
  }
  return nullptr;
}

const Piece* PieceTable::FirstOlderThan(Clock::time_point now, std::chrono::milliseconds limit) const {
  for (const auto& [key, piece] : pending_) {
    if (now - piece->first_arrival() > limit) return piece.get();
  }
  return nullptr;
}

void PieceTable::DropAll() { pending_.clear(); }

void PieceTable::FailAll() {
  for (const auto& [key, piece] : pending_) piece->ReleaseReplies();
  pending_.clear();
}

std::vector<std::shared_ptr<Piece>> PieceTable::TakeAll() {
  std::vector<std::shared_ptr<Piece>> pieces;
  pieces.reserve(pending_.size());
  for (auto& [key, piece] : pending_) pieces.push_back(std::move(piece));
  pending_.clear();
  return pieces;
}

}  // namespace rs::server
