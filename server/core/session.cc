#include "server/core/session.h"

#include <algorithm>
#include <cstdio>

#include "protocol/crc32c.h"
#include "server/core/part_reducer.h"

namespace rs::server {
namespace {

std::string Seconds(std::chrono::milliseconds ms) {
  const double s = static_cast<double>(ms.count()) / 1000.0;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g s", s);
  return buf;
}
}  // namespace

std::vector<RankCount> SlowestRanks(const SessionStats& stats, size_t max) {
  std::vector<RankCount> ranks;
  for (uint32_t r = 0; r < stats.last_arrivals.size(); ++r) {
    if (stats.last_arrivals[r] > 0) ranks.push_back({r, stats.last_arrivals[r]});
  }
  const size_t n = std::min(max, ranks.size());
  std::partial_sort(ranks.begin(), ranks.begin() + static_cast<ptrdiff_t>(n), ranks.end(),
                    [](const RankCount& a, const RankCount& b) {
                      return a.count != b.count ? a.count > b.count : a.rank < b.rank;
                    });
  ranks.resize(n);
  return ranks;
}

Session::Session(const protocol::SessionId& id, uint32_t world, uint16_t streams,
                 std::shared_ptr<MemoryBudget> budget, SessionLimits limits, Clock::time_point now,
                 std::shared_ptr<ReducerStats> stats, uint32_t flags, DataType wire)
    : id_(id),
      name_(protocol::SessionIdToString(id)),
      world_(world),
      streams_(streams),
      budget_(std::move(budget)),
      limits_(limits),
      created_(now),
      flags_(flags),
      wire_(wire),
      roster_(name_, world, streams, flags, wire),
      pieces_(world, wire, budget_),
      watermarks_(world),
      coordinator_(world),
      wants_watermark_(world, 0),
      counters_(world, stats ? std::move(stats) : std::make_shared<ReducerStats>()) {}

Status Session::Join(const protocol::Hello& hello, std::shared_ptr<SessionMember> member) {
  std::vector<std::shared_ptr<SessionMember>> notify;
  Status failed;
  {
    MutexLock lock(mu_);
    if (!failure_.ok()) return failure_.Prefixed("session " + name_ + " has already failed");
    Roster::JoinOutcome joined = roster_.Join(hello, std::move(member));
    switch (joined.kind) {
      case Roster::JoinOutcome::Kind::kRefused:
        return joined.status;
      case Roster::JoinOutcome::Kind::kDisagrees:
        failed = std::move(joined.status);
        notify = FailLocked(failed);
        break;
      case Roster::JoinOutcome::Kind::kReady: {
        // Before READY, so before any DATA frame.
        const uint64_t part = limits_.result_part_bytes.value_or(AutoResultPartBytes(world_));
        part_bytes_.store(roster_.all_take_parts() ? part : 0, std::memory_order_release);
        notify = roster_.Members();
        break;
      }
      case Roster::JoinOutcome::Kind::kJoined:
        break;
    }
  }
  if (!failed.ok()) {
    for (auto& m : notify) m->SendErrorAndClose(failed);
    return failed;
  }
  for (auto& m : notify) m->SendReady();
  return Status::Ok();
}

bool Session::Leave(uint32_t rank, uint16_t stream, Departure how, const Status& why) {
  std::vector<std::shared_ptr<SessionMember>> notify;
  Status failed;
  bool empty = false;
  {
    MutexLock lock(mu_);
    if (!roster_.Leave(rank, stream)) return roster_.joined() == 0;
    memory_waits_.erase({rank, stream});
    if (failure_.ok()) {
      // Closed with a piece pending, or before the session was ready: it
      // ended in the middle of an operation, or of joining.
      if (how == Departure::kLost || (how == Departure::kClosed && (!pieces_.empty() || !roster_.ready()))) {
        failed = Status(Code::kPeerFailed, "rank " + std::to_string(rank) + " disconnected from the reducer (" +
                                               why.message() + ")");
      } else if (const Piece* waiting = pieces_.FirstAwaiting(rank)) {
        failed = Status(Code::kPeerFailed, "rank " + std::to_string(rank) + " left the session while operation " +
                                               std::to_string(waiting->header().seq) + " was waiting for it");
      } else {
        roster_.Departed(rank, how, why.message());
      }
      if (!failed.ok()) notify = FailLocked(failed);
    }
    empty = roster_.joined() == 0;
  }
  for (auto& m : notify) m->SendErrorAndClose(failed);
  return empty;
}

std::string Session::ClosedWithoutGoodbye() const {
  MutexLock lock(mu_);
  return roster_.ClosedWithoutGoodbye();
}

Contribution Session::BeginContribution(uint32_t rank, const std::shared_ptr<SessionMember>& member,
                                        uint16_t stream, const protocol::PieceHeader& header,
                                        std::function<void()> wake, Clock::time_point now) {
  Contribution result;
  std::vector<std::shared_ptr<SessionMember>> notify;
  Outbox outbox;
  {
    MutexLock lock(mu_);
    result = BeginLocked(rank, member, stream, header, std::move(wake), now, &notify, &outbox);
    if (result.kind == Contribution::Kind::kWaitForMemory) {
      memory_waits_.try_emplace({rank, stream}, MemoryWait{now, {header.seq, header.piece}});
    } else {
      memory_waits_.erase({rank, stream});
    }
  }
  for (auto& m : notify) m->SendErrorAndClose(result.status);
  for (auto& [m, frame] : outbox) m->SendControl(std::move(frame));
  return result;
}

Contribution Session::BeginLocked(uint32_t rank, const std::shared_ptr<SessionMember>& member, uint16_t stream,
                                  const protocol::PieceHeader& header, std::function<void()> wake,
                                  Clock::time_point now, std::vector<std::shared_ptr<SessionMember>>* notify,
                                  Outbox* outbox) {
  Contribution result;
  result.status = RefusalLocked(rank);
  if (!result.status.ok()) return result;
  if (header.epoch < epoch_.load(std::memory_order_relaxed)) {
    // Sent before the rank learned of the new epoch: refused, never mixed.
    result.kind = Contribution::Kind::kDiscard;
    return result;
  }
  // Each check below fails the session: the rank broke the protocol, or
  // disagrees with the others, or waits for a rank that has left.
  auto fail = [&](Status status) RS_REQUIRES(mu_) {
    *notify = FailLocked(status);
    result.status = std::move(status);
    return result;
  };
  if (Status s = UnannouncedEpochLocked(rank, header); !s.ok()) return fail(std::move(s));
  if (failover()) ReportWatermarkLocked(rank, header.watermark, outbox);
  if (Status s = roster_.OutOfOrder(rank, stream, header); !s.ok()) return fail(std::move(s));
  if (Status s = WideSumRefusedLocked(rank, header); !s.ok()) return fail(std::move(s));
  std::shared_ptr<Piece> piece = pieces_.Find(header);
  if (Status s = DepartedBeforeLocked(rank, header, piece.get()); !s.ok()) return fail(std::move(s));
  if (piece == nullptr) piece = pieces_.Create(rank, header, PartElementsLocked(header), std::move(wake), now);
  if (piece == nullptr) {
    result.kind = Contribution::Kind::kWaitForMemory;
    return result;
  }
  if (Status s = AddToPieceLocked(rank, member, header, *piece); !s.ok()) return fail(std::move(s));
  roster_.Sent(rank, stream, header);
  result.kind = Contribution::Kind::kReceive;
  result.dest = piece->slot(rank);
  result.piece = std::move(piece);
  return result;
}

Status Session::RefusalLocked(uint32_t rank) const {
  if (!failure_.ok()) return failure_;
  if (!roster_.ready()) {
    return Status(Code::kProtocol, "rank " + std::to_string(rank) + " sent data before the session was ready");
  }
  return Status::Ok();
}

Status Session::UnannouncedEpochLocked(uint32_t rank, const protocol::PieceHeader& header) const {
  const uint32_t epoch = epoch_.load(std::memory_order_relaxed);
  if (header.epoch <= epoch) return Status::Ok();
  return Status(Code::kProtocol, "rank " + std::to_string(rank) + " sent operation " + std::to_string(header.seq) +
                                     " of epoch " + std::to_string(header.epoch) + " before announcing the epoch (" +
                                     "this reducer is at epoch " + std::to_string(epoch) + ")");
}

Status Session::WideSumRefusedLocked(uint32_t rank, const protocol::PieceHeader& header) const {
  if ((header.flags & protocol::kPieceWideSum) == 0) return Status::Ok();
  std::string wrong;
  if (wire_ == DataType::kFloat32) {
    wrong = "but the session's wire type is off";
  } else if (header.dtype != DataType::kFloat32 && header.dtype != wire_) {
    wrong = "in " + std::string(DataTypeName(header.dtype)) + ", but the session's wire type is " +
            std::string(protocol::WireTypeName(wire_));
  } else if (header.count > limits_.max_piece_bytes / sizeof(float)) {
    wrong = "of " + std::to_string(header.count) + " elements, more than a piece holds in float32";
  }
  if (wrong.empty()) return Status::Ok();
  return Status(Code::kProtocol, "rank " + std::to_string(rank) + " sent operation " + std::to_string(header.seq) +
                                     " piece " + std::to_string(header.piece) +
                                     " as a float32 sum on a 16-bit wire " + wrong);
}

Status Session::DepartedBeforeLocked(uint32_t rank, const protocol::PieceHeader& header,
                                     const Piece* piece) const {
  const auto gone = roster_.DepartedFrom(rank, piece);
  if (!gone) return Status::Ok();
  // The other ranks learn that a rank has left when they need it.
  const Roster::Left& left = *roster_.departure(*gone);
  const std::string who = "rank " + std::to_string(*gone);
  const std::string before = "before operation " + std::to_string(header.seq);
  return Status(Code::kPeerFailed,
                left.how == Departure::kGoodbye
                    ? who + " left the session (it closed its client after its last operation) " + before
                    : who + " disconnected from the reducer (" + left.why + ") after its last operation, " + before);
}

uint64_t Session::PartElementsLocked(const protocol::PieceHeader& header) const {
  const bool wide = (header.flags & protocol::kPieceWideSum) != 0;
  const uint64_t part_bytes = result_part_bytes();
  const bool whole = part_bytes == 0 || (limits_.whole_pieces_from != 0 && roster_.paths_short() &&
                                         header.pieces >= uint64_t{limits_.whole_pieces_from} * world_);
  const size_t elem = DataTypeSize(wide ? wire_ : header.dtype);
  return whole ? header.count : std::max<uint64_t>(1, part_bytes / elem);
}

Status Session::AddToPieceLocked(uint32_t rank, const std::shared_ptr<SessionMember>& member,
                                 const protocol::PieceHeader& header, Piece& piece) {
  const std::string disagreement = piece.DisagreementLocked(header, rank);
  if (!disagreement.empty()) return Status(Code::kMismatch, disagreement);
  if (!piece.BeginLocked(rank, header.dtype, member)) {
    return Status(Code::kProtocol, "rank " + std::to_string(rank) + " sent operation " +
                                       std::to_string(header.seq) + " piece " + std::to_string(header.piece) +
                                       " twice");
  }
  return Status::Ok();
}

void Session::ReportRoundTrip(uint32_t rank, uint16_t stream, uint32_t min_rtt_us) {
  MutexLock lock(mu_);
  roster_.ReportRoundTrip(rank, stream, min_rtt_us);
}

void Session::ContributionProgress(uint32_t rank, const std::shared_ptr<Piece>& piece, uint64_t bytes) {
  if (!piece->in_parts()) return;
  const uint64_t elements = bytes / DataTypeSize(piece->type(rank));
  Deliver(rank, piece, std::min(elements, piece->header().count - 1));
}

void Session::EndContribution(uint32_t rank, const std::shared_ptr<Piece>& piece, Clock::time_point now) {
  counters_.OnContributionBytes(*piece, rank);
  bool last = false;
  bool first_piece_of_op = false;
  {
    MutexLock lock(mu_);
    if (!failure_.ok() || piece->EndedLocked(rank)) return;
    // Dropped while it was being received: the ranks moved to a new epoch.
    if (piece->header().epoch != epoch_.load(std::memory_order_relaxed)) return;
    if (piece->EndLocked(rank, now)) {
      last = true;
      first_piece_of_op = pieces_.Complete(*piece);
    }
  }
  // The last rank's call reduces what is left, outside the lock. The
  // latency includes that reduction, timed here because `now` is when the
  // last contribution arrived, not when its sum was ready.
  const auto reduce_start = Clock::now();
  Deliver(rank, piece, piece->header().count);
  if (!last) return;
  const auto latency = (now - piece->first_arrival()) + (Clock::now() - reduce_start);
  const auto wait = now - piece->first_end();
  // The bytes sent were counted as the parts went out (Deliver).
  counters_.OnPieceCompleted(*piece, rank, latency, wait);
  if (first_piece_of_op) counters_.OnOperationCompleted();
}

void Session::Deliver(uint32_t rank, const std::shared_ptr<Piece>& piece, uint64_t elements) {
  Piece& p = *piece;
  const std::optional<Piece::Run> run = p.Claim(rank, elements);
  if (!run) return;
  // Every rank has delivered the run and nobody writes there any more:
  // reduce it in rank order outside the lock, in parallel with other parts.
  const ReducedPart out = ReducePart(p, wire_, *run);
  protocol::PieceHeader h = p.header();
  h.offset += run->begin;
  h.count = run->end - run->begin;
  h.dtype = out.dtype;
  h.flags = p.header().flags & protocol::kPieceWideSum;
  h.crc = 0;
  if (limits_.crc && (p.header().flags & protocol::kPieceCrc) != 0) {
    h.flags |= protocol::kPieceCrc;
    h.crc = protocol::Crc32c(out.data, h.PayloadBytes());
  }
  // Counted as they go out: a part of an epoch the ranks have left, or of
  // a failed session, is dropped, and a wide sum's part has its type only
  // now.
  counters_.OnResultPartsSent(p, p.Release(run->begin, h, out.data, epoch_.load(std::memory_order_acquire)));
}

void Session::ReportWatermarkLocked(uint32_t rank, uint64_t value, Outbox* outbox) {
  if (!watermarks_.Report(rank, value)) return;
  const uint64_t g = watermarks_.watermark();
  watermark_.store(g, std::memory_order_release);
  const auto frame = protocol::EncodeHeartbeat({epoch_.load(std::memory_order_relaxed), 0, g});
  for (uint32_t r = 0; r < world_; ++r) {
    if (!wants_watermark_[r]) continue;
    wants_watermark_[r] = 0;
    if (auto m = roster_.FirstMember(r)) outbox->emplace_back(std::move(m), frame);
  }
}

std::optional<protocol::Heartbeat> Session::OnHeartbeat(uint32_t rank, const protocol::Heartbeat& heartbeat) {
  if (!failover() || rank >= world_) return std::nullopt;
  Outbox outbox;
  std::optional<protocol::Heartbeat> reply;
  {
    MutexLock lock(mu_);
    if (!failure_.ok()) return std::nullopt;
    const uint32_t epoch = epoch_.load(std::memory_order_relaxed);
    if (heartbeat.epoch == epoch) ReportWatermarkLocked(rank, heartbeat.watermark, &outbox);
    if (heartbeat.flags & protocol::kHeartbeatWantWatermark) {
      wants_watermark_[rank] = 1;
      reply = protocol::Heartbeat{epoch, 0, watermarks_.watermark()};
    }
  }
  for (auto& [m, frame] : outbox) m->SendControl(std::move(frame));
  return reply;
}

void Session::OnMembership(uint32_t rank, const protocol::MembershipFrame& frame) {
  using protocol::MembershipKind;
  Outbox outbox;
  std::vector<std::shared_ptr<SessionMember>> notify;
  Status failed;
  bool quiet = false;
  {
    MutexLock lock(mu_);
    if (!failure_.ok()) return;
    const std::string from = "rank " + std::to_string(rank);
    if (!failover()) {
      failed = Status(Code::kProtocol, from + " sent a MEMBERSHIP frame in a session without failover");
    } else if (frame.kind == MembershipKind::kEvict) {
      // The ranks go on without this reducer: leave without telling anyone
      // (an error from here would end the job the failover is saving).
      failure_ = Status(Code::kCancelled, "this reducer left session " + name_ + ": " + from +
                                              " dropped it from the session (failover to epoch " +
                                              std::to_string(frame.epoch) + ")");
      pieces_.DropAll();
      notify = roster_.Members();
      quiet = true;
    } else if (frame.kind == MembershipKind::kReport || frame.kind == MembershipKind::kAnnounce) {
      const FailoverCoordinator::Actions actions = frame.kind == MembershipKind::kReport
                                                       ? coordinator_.OnReport(rank, frame)
                                                       : coordinator_.OnAnnounce(rank, frame);
      if (!actions.error.ok()) {
        failed = actions.error;
      } else {
        if (actions.installed) InstallLocked(coordinator_.epoch(), actions.installed->start);
        QueueLocked(actions, &outbox);
      }
    } else {
      failed = Status(Code::kProtocol, from + " sent a MEMBERSHIP " + protocol::MembershipKindName(frame.kind) +
                                           " frame, which only reducers send");
    }
    if (!failed.ok()) notify = FailLocked(failed);
  }
  for (auto& [m, bytes] : outbox) m->SendControl(std::move(bytes));
  for (auto& m : notify) {
    if (quiet) {
      m->CloseQuietly();
    } else {
      m->SendErrorAndClose(failed);
    }
  }
}

void Session::InstallLocked(uint32_t epoch, uint64_t start) {
  epoch_.store(epoch, std::memory_order_release);
  // Every pending piece belongs to an older epoch: the ranks redo those
  // operations in this one. Memory comes back as the last reference goes.
  pieces_.DropAll();
  watermarks_.Reset(start);
  watermark_.store(start, std::memory_order_release);
  std::fill(wants_watermark_.begin(), wants_watermark_.end(), 0);
}

void Session::QueueLocked(const FailoverCoordinator::Actions& actions, Outbox* outbox) {
  if (actions.to_all) {
    const auto bytes = protocol::EncodeMembership(*actions.to_all);
    for (uint32_t r = 0; r < world_; ++r) {
      if (auto m = roster_.FirstMember(r)) outbox->emplace_back(std::move(m), bytes);
    }
  }
  for (const auto& [rank, frame] : actions.to_rank) {
    if (auto m = roster_.FirstMember(rank)) outbox->emplace_back(std::move(m), protocol::EncodeMembership(frame));
  }
}

void Session::CheckTimeouts(Clock::time_point now) {
  Status failed;
  std::vector<std::shared_ptr<SessionMember>> notify;
  {
    MutexLock lock(mu_);
    if (!failure_.ok()) return;
    if (!roster_.ready() && now - created_ > limits_.join_timeout) {
      failed = Status(Code::kTimeout, "session " + name_ + " was not complete after " +
                                          Seconds(limits_.join_timeout) + ": " + roster_.MissingRanks() +
                                          " never joined with all " + std::to_string(streams_) +
                                          " streams (wrong token, address or world size?)");
    }
    const Piece* late = failed.ok() ? pieces_.FirstOlderThan(now, limits_.op_timeout) : nullptr;
    if (late != nullptr) {
      failed = Status(Code::kTimeout, "operation " + std::to_string(late->header().seq) + " (piece " +
                                          std::to_string(late->header().piece) + ") timed out after " +
                                          Seconds(limits_.op_timeout) + " on this reducer: " +
                                          RankList(late->MissingLocked()) + " never contributed");
    }
    // Twice the operation timeout: memory held by a stuck piece or by
    // results a worker does not take goes back after one, and only a wait
    // that outlasts those is this session's to report.
    const auto memory_timeout = 2 * limits_.op_timeout;
    for (const auto& [stream, wait] : memory_waits_) {
      if (!failed.ok()) break;
      if (now - wait.since <= memory_timeout) continue;
      failed = Status(Code::kTimeout,
                      "operation " + std::to_string(wait.piece.first) + " (piece " +
                          std::to_string(wait.piece.second) + ") timed out after " + Seconds(memory_timeout) +
                          " (twice --op-timeout) on this reducer: rank " + std::to_string(stream.first) +
                          "'s piece waited for memory all that time (" + std::to_string(budget_->in_use()) +
                          " of the " + std::to_string(budget_->limit()) +
                          " bytes of --memory-limit held by other pieces): raise --memory-limit or run fewer "
                          "jobs on this reducer");
    }
    if (!failed.ok()) notify = FailLocked(failed);
  }
  for (auto& m : notify) m->SendErrorAndClose(failed);
}

void Session::Fail(const Status& status) {
  std::vector<std::shared_ptr<SessionMember>> notify;
  {
    MutexLock lock(mu_);
    if (!failure_.ok()) return;
    notify = FailLocked(status);
  }
  for (auto& m : notify) m->SendErrorAndClose(status);
}

void Session::DropMembers() {
  std::vector<std::shared_ptr<SessionMember>> members;
  std::vector<std::shared_ptr<Piece>> pending;
  {
    MutexLock lock(mu_);
    members = roster_.TakeMembers();
    pending = pieces_.TakeAll();
  }
  // A piece not yet sent in full holds its ranks' members, and they may hold
  // it (the piece being read, results queued): a cycle that only sending the
  // whole result breaks. No result goes out after a teardown.
  for (const auto& piece : pending) piece->ReleaseReplies();
  // Released here, outside the lock: a member's destructor may be the last
  // reference to this session's other members.
}

std::vector<std::shared_ptr<SessionMember>> Session::FailLocked(const Status& status) {
  failure_ = status;
  // Counted here, once per session, however many members are told.
  counters_.OnFailure(status.code());
  pieces_.FailAll();
  return roster_.Members();
}

bool Session::ready() const {
  MutexLock lock(mu_);
  return roster_.ready();
}

std::optional<uint32_t> Session::rank_without_parts() const {
  MutexLock lock(mu_);
  return roster_.rank_without_parts();
}

Status Session::failure() const {
  MutexLock lock(mu_);
  return failure_;
}

SessionStats Session::stats() const {
  SessionStats out;
  {
    MutexLock lock(mu_);
    out.world = world_;
    out.streams = streams_;
    out.ranks_joined = roster_.ranks_joined();
    out.ready = roster_.ready();
    out.failed = !failure_.ok();
    out.rank_without_parts = roster_.rank_without_parts();
  }
  SessionCounts counts = counters_.Snapshot();
  out.operations_completed = counts.operations_completed;
  out.pieces_completed = counts.pieces_completed;
  out.bytes_received = counts.bytes_received;
  out.bytes_sent = counts.bytes_sent;
  out.straggler_wait_seconds = counts.straggler_wait_seconds;
  out.last_arrivals = std::move(counts.last_arrivals);
  out.result_part_bytes = result_part_bytes();
  return out;
}

}  // namespace rs::server
