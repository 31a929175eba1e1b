// ClientImpl, continued: what happens when a reducer is lost or comes back
// (docs/reliability.md, "Reducer failover"). Membership decides (pure,
// membership.h); this file carries its decisions out on the streams, the
// operations and the retained copies.

#include "client/client_impl.h"

namespace rs::client {
namespace {

// Between attempts to reach a lost reducer again.
constexpr auto kRejoinInterval = std::chrono::seconds(1);

}  // namespace

protocol::Heartbeat ClientImpl::HeartbeatNow() {
  MutexLock lock(mu_);
  protocol::Heartbeat hb;
  if (!membership_) return hb;
  hb.epoch = membership_->epoch();
  hb.watermark = ReportedLocked();
  if (!waiting_.empty()) hb.flags |= protocol::kHeartbeatWantWatermark;
  return hb;
}

void ClientImpl::OnHeartbeat(StreamId id, const protocol::Heartbeat& heartbeat) {
  (void)OnWatermark(id, heartbeat.epoch, heartbeat.watermark);
}

bool ClientImpl::OnWatermark(StreamId id, uint32_t epoch, uint64_t watermark) {
  MutexLock lock(mu_);
  // Only a live reducer's, in this rank's epoch: a watermark counts
  // completions within one epoch.
  if (!membership_ || !Current(id) || slots_[id.reducer].state != Slot::State::kLive) return false;
  if (epoch != membership_->epoch()) return false;
  AdvanceGlobalLocked(watermark);  // never lowers it: the same value again changes nothing
  return true;
}

void ClientImpl::OnMembership(StreamId id, const protocol::MembershipFrame& frame) {
  Status fail;
  {
    MutexLock lock(mu_);
    if (!Current(id) || !health_.ok()) return;
    const auto now = Clock::now();
    if (!membership_) {
      fail = Status(Code::kProtocol, "reducer " + names_[id.reducer] +
                                         " sent a MEMBERSHIP frame, but this rank has failover off");
    } else if (slots_[id.reducer].state != Slot::State::kLive) {
      return;  // only live reducers speak for the session
    } else if (frame.kind == protocol::MembershipKind::kPropose) {
      fail = ApplyLocked(membership_->OnPropose(id.reducer, frame, ReportedLocked(), now), now);
    } else if (frame.kind == protocol::MembershipKind::kInstall) {
      fail = ApplyLocked(membership_->OnInstall(id.reducer, frame), now);
    } else {
      fail = Status(Code::kProtocol, "reducer " + names_[id.reducer] + " sent a MEMBERSHIP " +
                                         protocol::MembershipKindName(frame.kind) +
                                         " frame, which only workers send");
    }
  }
  FlushLogs();
  if (!fail.ok()) Fail(fail);
}

void ClientImpl::LostLocked(uint32_t reducer, const Status& why, Clock::time_point now, Status* fail) {
  Slot& slot = slots_[reducer];
  switch (slot.state) {
    case Slot::State::kLost:
      return;
    case Slot::State::kRejoining:
    case Slot::State::kReady:
      // Not back after all: try again later.
      for (auto& s : slot.streams) s->Close(/*bye=*/false);
      slot.streams.clear();
      ++slot.generation;
      slot.state = Slot::State::kLost;
      slot.next_attempt = now + kRejoinInterval;
      *fail = ApplyLocked(membership_->OnLost(reducer, ReportedLocked(), now, why.message()), now);
      return;
    case Slot::State::kLive:
      LogLocked(LogLevel::kWarn, why.message() + "; failing over to the other reducers");
      *fail = ApplyLocked(membership_->OnLost(reducer, ReportedLocked(), now, why.message()), now);
      return;
  }
}

Status ClientImpl::ApplyLocked(Membership::Actions actions, Clock::time_point now) {
  for (uint32_t r : actions.drop) DropReducerLocked(r, now);
  for (const Membership::Send& send : actions.sends) {
    Slot& slot = slots_[send.reducer];
    if (slot.state == Slot::State::kLive && !slot.streams.empty()) {
      slot.streams[0]->WriteUrgentFrame(protocol::EncodeMembership(send.frame));
    }
  }
  if (!actions.failure.ok()) return actions.failure;
  if (actions.install) return InstallLocked(now);
  return Status::Ok();
}

void ClientImpl::DropReducerLocked(uint32_t reducer, Clock::time_point now) {
  Slot& slot = slots_[reducer];
  // Tell it to leave quietly, where it can still hear: an error from it to
  // the ranks that have not dropped it yet would end the job.
  protocol::MembershipFrame evict;
  evict.kind = protocol::MembershipKind::kEvict;
  evict.epoch = membership_->epoch() + 1;
  evict.live = protocol::ReducerSet(static_cast<uint32_t>(slots_.size()));
  const auto bytes = protocol::EncodeMembership(evict);
  for (auto& s : slot.streams) s->Evict(bytes);
  slot.streams.clear();
  ++slot.generation;
  slot.state = Slot::State::kLost;
  slot.next_attempt = now + kRejoinInterval;
}

Status ClientImpl::InstallLocked(Clock::time_point now) {
  const uint32_t epoch = membership_->epoch();
  const protocol::ReducerSet& live = membership_->live();
  const uint64_t start = membership_->start();
  for (uint32_t r = 0; r < slots_.size(); ++r) {
    Slot& slot = slots_[r];
    if (live.Has(r)) {
      // One this rank lost while the epoch was being decided stays lost: the
      // next change, which AfterInstall starts, removes it.
      if (slot.state == Slot::State::kReady) slot.state = Slot::State::kLive;
    } else if (slot.state == Slot::State::kLive) {
      DropReducerLocked(r, now);
    }
  }
  // Every operation from `start` on is redone in this epoch: those not done
  // here restart; those done here are redone by shadows, for the others.
  Batches batches;
  uint64_t redone = 0;
  for (auto& [seq, retained] : retained_) {
    if (seq < start || !retained.done || ops_.count(seq) != 0) continue;
    auto shadow = std::make_shared<OperationImpl>(seq, retained.data, nullptr, retained.count, retained.dtype,
                                                  retained.op, epoch, std::vector<protocol::PieceSpan>{},
                                                  static_cast<uint32_t>(slots_.size()), now, opts_.wire_dtype);
    shadow->HoldSourceLease(retained.lease, retained.narrowed);
    ops_.emplace(seq, OpEntry{shadow, true});
  }
  for (auto& [seq, entry] : ops_) {
    if (seq < start || !entry.issued) continue;
    entry.op->Restart(epoch, PartitionLocked(seq, entry.op->count(), entry.op->dtype()));
    IssueLocked(entry.op, &batches);
    ++redone;
  }
  // Every stream of the epoch's reducers: the announcement, then the pieces.
  protocol::MembershipFrame announce;
  announce.kind = protocol::MembershipKind::kAnnounce;
  announce.epoch = epoch;
  announce.seq = start;
  announce.live = live;
  const auto announce_bytes = protocol::EncodeMembership(announce);
  for (uint32_t r : live.Members()) {
    Slot& slot = slots_[r];
    if (slot.state != Slot::State::kLive) continue;
    for (uint32_t s = 0; s < slot.streams.size(); ++s) {
      auto it = batches.find({r, s});
      std::vector<PieceSend> sends;
      if (it != batches.end()) {
        sends = std::move(it->second);
        batches.erase(it);
      }
      slot.streams[s]->Reset(epoch, announce_bytes, std::move(sends));
    }
  }
  PostLocked(&batches);  // pieces for reducers lost meanwhile: their leases go back
  ++counters_.epochs_installed;
  counters_.operations_redone += redone;
  LogLocked(LogLevel::kWarn, "epoch " + std::to_string(epoch) + " installed: reducers " + membership_->NamesOf(live) +
                                 ", redoing " + std::to_string(redone) + " operation(s) from operation " +
                                 std::to_string(start));
  // Below `start` every operation has completed on every rank.
  AdvanceGlobalLocked(start);
  return ApplyLocked(membership_->AfterInstall(ReportedLocked(), now), now);
}

void ClientImpl::AdvanceGlobalLocked(uint64_t watermark) {
  if (watermark <= global_watermark_) return;
  global_watermark_ = watermark;
  retention_.ReleaseBelow(watermark);
  retained_.erase(retained_.begin(), retained_.lower_bound(watermark));
  IssuePendingLocked();
}

void ClientImpl::IssuePendingLocked() {
  Batches batches;
  while (!waiting_.empty()) {
    auto it = ops_.find(waiting_.front());
    if (it == ops_.end()) {  // failed meanwhile
      waiting_.pop_front();
      continue;
    }
    const std::shared_ptr<OperationImpl>& op = it->second.op;
    const RetainedCopy copy = retention_.Allocate(op->seq(), op->RetainedBytes(), membership_->changing());
    if (copy.data == nullptr) break;
    waiting_.pop_front();
    // Copied whole, under the lock: this path is the rare one.
    op->RetainInto(copy);
    op->CopyInput();
    retained_[op->seq()] =
        Retained{copy.data, copy.lease, op->narrowed(), op->count(), op->dtype(), op->op(), false};
    if (op->epoch() != membership_->epoch()) {
      op->Restart(membership_->epoch(), PartitionLocked(op->seq(), op->count(), op->dtype()));
    }
    it->second.issued = true;
    IssueLocked(op, &batches);
  }
  PostLocked(&batches);
}

void ClientImpl::SendWatermarkLocked() {
  // To every live reducer at once, asking for the session's watermark back
  // as soon as it moves (see HeartbeatNow for the contents).
  protocol::Heartbeat hb;
  hb.epoch = membership_->epoch();
  hb.watermark = ReportedLocked();
  hb.flags = waiting_.empty() ? 0u : static_cast<uint32_t>(protocol::kHeartbeatWantWatermark);
  const auto bytes = protocol::EncodeHeartbeat(hb);
  for (Slot& slot : slots_) {
    if (slot.state == Slot::State::kLive && !slot.streams.empty()) slot.streams[0]->WriteUrgentFrame(bytes);
  }
}

Status ClientImpl::SweepLocked(Clock::time_point now) {
  if (!health_.ok()) return Status::Ok();
  Status fail = ApplyLocked(membership_->Tick(now), now);
  if (!fail.ok()) return fail;
  for (uint32_t r = 0; r < slots_.size(); ++r) {
    Slot& slot = slots_[r];
    if (slot.state == Slot::State::kLost && now >= slot.next_attempt) {
      // A restarted reducer at the same address: join its (new) session;
      // once every rank has, it is READY and the ranks take it back.
      slot.attempt_deadline = now + opts_.connect_timeout;
      OpenStreamsLocked(r, slot.attempt_deadline);
      slot.state = Slot::State::kRejoining;
    } else if (slot.state == Slot::State::kRejoining && now > slot.attempt_deadline) {
      LostLocked(r, Status(Code::kTimeout, "rejoin timed out"), now, &fail);
      if (!fail.ok()) return fail;
    }
  }
  return Status::Ok();
}

}  // namespace rs::client
