#include "server/core/roster.h"

#include <algorithm>

namespace rs::server {

std::string RankList(const std::vector<uint32_t>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) out += ", ";
    if (i == 16 && ranks.size() > 17) {
      out += "and " + std::to_string(ranks.size() - 16) + " more";
      break;
    }
    out += std::to_string(ranks[i]);
  }
  return out;
}

Roster::Roster(std::string name, uint32_t world, uint16_t streams, uint32_t flags, DataType wire)
    : name_(std::move(name)),
      world_(world),
      streams_(streams),
      flags_(flags),
      wire_(wire),
      members_(size_t{world} * streams),
      departed_(world) {}

Status Roster::Disagreement(const protocol::Hello& hello) const {
  const std::string who = "rank " + std::to_string(hello.rank) + " joined session " + name_;
  if (hello.world != world_ || hello.streams != streams_) {
    return Status(Code::kMismatch, who + " with world size " + std::to_string(hello.world) + " and " +
                                       std::to_string(hello.streams) +
                                       " streams, but the session was opened with world size " +
                                       std::to_string(world_) + " and " + std::to_string(streams_) + " streams");
  }
  if (((hello.flags ^ flags_) & protocol::kHelloFailover) != 0) {
    auto failover = [](uint32_t flags) { return (flags & protocol::kHelloFailover) ? "on" : "off"; };
    return Status(Code::kMismatch, who + " with failover " + failover(hello.flags) +
                                       ", but the session was opened with failover " + failover(flags_) +
                                       ": every rank must use the same setting");
  }
  if (hello.wire != wire_) {
    return Status(Code::kMismatch, who + " with wire type " + std::string(protocol::WireTypeName(hello.wire)) +
                                       ", but the session was opened with wire type " +
                                       std::string(protocol::WireTypeName(wire_)) +
                                       ": every rank must use the same REDUCER_WIRE_DTYPE");
  }
  return Status::Ok();
}

Roster::JoinOutcome Roster::Join(const protocol::Hello& hello, std::shared_ptr<SessionMember> member) {
  using Kind = JoinOutcome::Kind;
  const Status disagreement = Disagreement(hello);
  const std::string stream = "rank " + std::to_string(hello.rank) + " stream " + std::to_string(hello.stream);
  const std::string why = disagreement.ok() ? " (two processes with the same rank?)" : ": " + disagreement.message();
  const Code refused = disagreement.ok() ? Code::kInvalidArgument : Code::kMismatch;
  // A running session is never failed by a join, whatever it says (anyone
  // who learns its id may send one): only the late joiner is refused.
  if (ready_) {
    return {Kind::kRefused, Status(refused, stream + " cannot join session " + name_ +
                                                ": it is already running with all its " + std::to_string(world_) +
                                                " ranks" + why)};
  }
  const bool in_range = hello.rank < world_ && hello.stream < streams_;
  if (in_range && members_[StreamIndex(hello.rank, hello.stream)].member != nullptr) {
    return {Kind::kRefused, Status(refused, stream + " has already joined session " + name_ + why)};
  }
  // Before it runs, ranks that disagree are a job's misconfiguration: every
  // rank hears of it now rather than at --join-timeout.
  if (!disagreement.ok()) return {Kind::kDisagrees, disagreement};
  if (!in_range) {  // the handshake refuses these; a session never indexes past its slots
    return {Kind::kRefused, Status(Code::kInvalidArgument, stream + " is outside session " + name_ + "'s " +
                                                               std::to_string(world_) + " ranks of " +
                                                               std::to_string(streams_) + " streams")};
  }
  members_[StreamIndex(hello.rank, hello.stream)].member = std::move(member);
  ++joined_;
  // Results in parts only if every rank takes them (older clients do not).
  if (!rank_without_parts_ && (hello.flags & protocol::kHelloResultParts) == 0) rank_without_parts_ = hello.rank;
  if (joined_ < members_.size()) return {Kind::kJoined, Status::Ok()};
  ready_ = true;
  return {Kind::kReady, Status::Ok()};
}

bool Roster::Leave(uint32_t rank, uint16_t stream) {
  Stream& slot = members_[StreamIndex(rank, stream)];
  if (slot.member == nullptr) return false;
  slot.member.reset();
  --joined_;
  return true;
}

void Roster::Departed(uint32_t rank, Departure how, std::string why) {
  if (!departed_[rank]) departed_[rank] = Left{how, std::move(why)};
}

std::vector<std::shared_ptr<SessionMember>> Roster::TakeMembers() {
  std::vector<std::shared_ptr<SessionMember>> members;
  for (Stream& s : members_) members.push_back(std::move(s.member));
  joined_ = 0;
  return members;
}

uint32_t Roster::ranks_joined() const {
  uint32_t ranks = 0;
  for (uint32_t r = 0; r < world_; ++r) {
    bool any = false;
    for (uint16_t s = 0; s < streams_; ++s) any = any || members_[StreamIndex(r, s)].member != nullptr;
    ranks += any ? 1 : 0;
  }
  return ranks;
}

std::vector<std::shared_ptr<SessionMember>> Roster::Members() const {
  std::vector<std::shared_ptr<SessionMember>> members;
  for (const Stream& s : members_) {
    if (s.member) members.push_back(s.member);
  }
  return members;
}

std::shared_ptr<SessionMember> Roster::FirstMember(uint32_t rank) const {
  for (uint16_t st = 0; st < streams_; ++st) {
    if (const auto& m = members_[StreamIndex(rank, st)].member) return m;
  }
  return nullptr;
}

std::string Roster::MissingRanks() const {
  std::vector<uint32_t> missing;
  for (uint32_t r = 0; r < world_; ++r) {
    bool all = true;
    for (uint16_t s = 0; s < streams_; ++s) all = all && members_[StreamIndex(r, s)].member != nullptr;
    if (!all) missing.push_back(r);
  }
  return RankList(missing);
}

void Roster::ReportRoundTrip(uint32_t rank, uint16_t stream, uint32_t min_rtt_us) {
  if (rank >= world_ || stream >= streams_) return;
  members_[StreamIndex(rank, stream)].min_rtt_us = min_rtt_us;
  paths_short_ = std::all_of(members_.begin(), members_.end(), [](const Stream& st) {
    return st.member == nullptr || (st.min_rtt_us != 0 && st.min_rtt_us <= kWholePiecesMaxRtt.count());
  });
}

Status Roster::OutOfOrder(uint32_t rank, uint16_t stream, const protocol::PieceHeader& header) const {
  const Stream& s = members_[StreamIndex(rank, stream)];
  if (!s.sent_any || StreamKey{header.epoch, header.seq, header.piece} > s.last) return Status::Ok();
  return Status(Code::kProtocol, "rank " + std::to_string(rank) + " sent operation " + std::to_string(header.seq) +
                                     " piece " + std::to_string(header.piece) + " out of order or twice");
}

void Roster::Sent(uint32_t rank, uint16_t stream, const protocol::PieceHeader& header) {
  Stream& s = members_[StreamIndex(rank, stream)];
  s.last = StreamKey{header.epoch, header.seq, header.piece};
  s.sent_any = true;
}

std::optional<uint32_t> Roster::DepartedFrom(uint32_t rank, const Piece* piece) const {
  for (uint32_t r = 0; r < world_; ++r) {
    if (r != rank && departed_[r] && (piece == nullptr || !piece->EndedLocked(r))) return r;
  }
  return std::nullopt;
}

std::string Roster::ClosedWithoutGoodbye() const {
  std::string ranks;
  size_t count = 0;
  for (uint32_t r = 0; r < world_; ++r) {
    if (!departed_[r] || departed_[r]->how != Departure::kClosed) continue;
    ranks += (count++ ? ", " : "") + std::to_string(r);
  }
  return count == 0 ? "" : (count == 1 ? "rank " : "ranks ") + ranks;
}

}  // namespace rs::server
