#include "server/core/piece.h"

#include <algorithm>

namespace rs::server {
namespace {

constexpr size_t kSlotAlign = 64;

// Describes the first field on which two ranks' headers for one piece differ.
std::string Disagreement(const protocol::PieceHeader& a, uint32_t rank_a, const protocol::PieceHeader& b,
                         uint32_t rank_b) {
  const std::string op = " for operation " + std::to_string(b.seq);
  auto say = [&](const std::string& what, const std::string& va, const std::string& vb) {
    return "rank " + std::to_string(rank_b) + " sent " + vb + op + ", rank " + std::to_string(rank_a) +
           " sent " + va + (what.empty() ? "" : " (" + what + ")");
  };
  // A float32 sum on a 16-bit wire may come in either type from each rank.
  const auto type = [](const protocol::PieceHeader& h) {
    return (h.flags & protocol::kPieceWideSum) ? std::string("float32 on the 16-bit wire")
                                               : std::string(DataTypeName(h.dtype));
  };
  if (type(a) != type(b)) return say("", type(a), type(b));
  if (a.op != b.op) {
    return say("", "op " + std::string(ReduceOpName(a.op)), "op " + std::string(ReduceOpName(b.op)));
  }
  if (a.total_count != b.total_count) {
    return say("", std::to_string(a.total_count) + " elements", std::to_string(b.total_count) + " elements");
  }
  if (a.pieces != b.pieces || a.offset != b.offset || a.count != b.count) {
    auto layout = [](const protocol::PieceHeader& h) {
      return "piece " + std::to_string(h.piece) + "/" + std::to_string(h.pieces) + " = elements [" +
             std::to_string(h.offset) + ", " + std::to_string(h.offset + h.count) + ")";
    };
    return say("the ranks partition differently: check that piece-size settings and client versions match", layout(a),
               layout(b));
  }
  return {};
}

}  // namespace

size_t Piece::SlotBytes(const protocol::PieceHeader& header) {
  const bool wide = (header.flags & protocol::kPieceWideSum) != 0;
  const size_t payload = wide ? header.count * sizeof(float) : header.PayloadBytes();
  return (payload + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
}

Piece::Piece(const protocol::PieceHeader& header, uint32_t first_rank, uint32_t world,
             std::unique_ptr<PieceBuffer> buffer, size_t slot_bytes, uint64_t part_elements, Clock::time_point now)
    : header_(header),
      first_rank_(first_rank),
      buffer_(std::move(buffer)),
      slot_bytes_(slot_bytes),
      part_elements_(part_elements),
      first_arrival_(now),
      begun_(world, 0),
      ended_(world, 0),
      types_(world, header.dtype),
      arrived_(world, 0),
      reply_to_(world) {}

std::string Piece::DisagreementLocked(const protocol::PieceHeader& header, uint32_t rank) const {
  return Disagreement(header_, first_rank_, header, rank);
}

bool Piece::BeginLocked(uint32_t rank, DataType type, std::shared_ptr<SessionMember> member) {
  if (begun_[rank]) return false;
  begun_[rank] = 1;
  types_[rank] = type;
  MutexLock lock(parts_mu_);
  reply_to_[rank] = std::move(member);
  return true;
}

bool Piece::EndLocked(uint32_t rank, Clock::time_point now) {
  ended_[rank] = 1;
  if (ended_count_++ == 0) first_end_ = now;
  return ended_count_ == ended_.size();
}

std::vector<uint32_t> Piece::MissingLocked() const {
  std::vector<uint32_t> missing;
  for (uint32_t r = 0; r < ended_.size(); ++r) {
    if (!ended_[r]) missing.push_back(r);
  }
  return missing;
}

std::optional<Piece::Run> Piece::Claim(uint32_t rank, uint64_t elements) {
  MutexLock lock(parts_mu_);
  if (elements <= arrived_[rank]) return std::nullopt;
  arrived_[rank] = elements;
  const uint64_t ready = *std::min_element(arrived_.begin(), arrived_.end());
  if (ready <= claimed_ || (ready < header_.count && ready - claimed_ < part_elements_)) return std::nullopt;
  const Run run{claimed_, ready};
  claimed_ = ready;
  return run;
}

Piece::Sent Piece::Release(uint64_t begin, const protocol::PieceHeader& header, const uint8_t* data,
                           uint32_t current_epoch) {
  const std::shared_ptr<Piece> self = shared_from_this();
  const bool current = header_.epoch == current_epoch;
  // Parts go out in order: under the piece's lock, so that the members get
  // them (posted to their threads) in the order they are released here.
  Sent out;
  MutexLock lock(parts_mu_);
  reduced_.emplace(begin, std::make_pair(header, data));
  while (!reduced_.empty() && reduced_.begin()->first == sent_) {
    ResultPart part{self, reduced_.begin()->second.first, reduced_.begin()->second.second};
    reduced_.erase(reduced_.begin());
    sent_ += part.header.count;
    if (!current || reply_to_.empty()) continue;
    for (const auto& member : reply_to_) member->SendResult(part);
    out.bytes += part.header.PayloadBytes() * reply_to_.size();
    out.float32_parts += part.header.dtype == DataType::kFloat32 ? 1 : 0;
  }
  // Members and pieces hold each other: let go once the result is out.
  if (sent_ == header_.count) reply_to_.clear();
  return out;
}

void Piece::ReleaseReplies() {
  MutexLock lock(parts_mu_);
  reply_to_.clear();
}

}  // namespace rs::server
