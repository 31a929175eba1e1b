#include "server/core/failover_coordinator.h"

#include <algorithm>

namespace rs::server {

using protocol::MembershipFrame;
using protocol::MembershipKind;
using protocol::ReducerSet;

MembershipFrame FailoverCoordinator::Frame(MembershipKind kind, uint32_t epoch, const Epoch& e) {
  MembershipFrame f;
  f.kind = kind;
  f.epoch = epoch;
  f.seq = e.start;
  f.live = e.live;
  return f;
}

void FailoverCoordinator::Remember(uint32_t epoch, const Epoch& e) {
  history_[epoch] = e;
  while (history_.size() > kEpochHistory) history_.erase(history_.begin());
}

Status FailoverCoordinator::Forgotten(uint32_t rank, const char* what, uint32_t epoch) const {
  if (history_.size() < kEpochHistory || epoch >= history_.begin()->first) return Status::Ok();
  return Status(Code::kProtocol, "rank " + std::to_string(rank) + " " + what + " epoch " + std::to_string(epoch) +
                                     ", older than the " + std::to_string(kEpochHistory) +
                                     " epochs this reducer remembers (from " +
                                     std::to_string(history_.begin()->first) + ")");
}

const FailoverCoordinator::Epoch* FailoverCoordinator::Find(uint32_t epoch) const {
  auto it = history_.find(epoch);
  return it == history_.end() ? nullptr : &it->second;
}

FailoverCoordinator::Actions FailoverCoordinator::OnReport(uint32_t rank, const MembershipFrame& report) {
  Actions actions;
  const uint32_t t = report.epoch;
  if (rank >= world_ || t == 0) {
    actions.error = Status(Code::kProtocol, "rank " + std::to_string(rank) + " reported for epoch " +
                                                std::to_string(t));
    return actions;
  }
  if (const Epoch* decided = Find(t)) {
    // Decided already (here or elsewhere): this rank missed the install.
    actions.to_rank.emplace_back(rank, Frame(MembershipKind::kInstall, t, *decided));
    return actions;
  }
  if (actions.error = Forgotten(rank, "reported for", t); !actions.error.ok()) return actions;
  if (target_ && t < *target_) {
    // A rank one epoch behind the others; its install comes with the announce.
    if (catch_ups_.size() >= kEpochHistory && catch_ups_.count(t) == 0) {
      actions.error = Status(Code::kProtocol, "rank " + std::to_string(rank) + " reported for epoch " +
                                                  std::to_string(t) + ", while ranks already wait on " +
                                                  std::to_string(kEpochHistory) + " other epochs");
      return actions;
    }
    catch_ups_[t].insert(rank);
    return actions;
  }
  if (!target_ || t > *target_) {
    target_ = t;
    reports_.assign(world_, std::nullopt);
    proposed_.reset();
  }
  reports_[rank] = Report{report.live, report.seq};

  std::optional<ReducerSet> merged;
  bool everyone = true;
  for (const auto& r : reports_) {
    if (!r) {
      everyone = false;
      continue;
    }
    if (r->live.size() != report.live.size()) {
      actions.error = Status(Code::kMismatch, "ranks report reducer sets of different sizes (" +
                                                  std::to_string(r->live.size()) + " and " +
                                                  std::to_string(report.live.size()) +
                                                  "): every rank must be given the same reducer list");
      return actions;
    }
    merged = merged ? merged->Intersect(r->live) : r->live;
  }
  if (!proposed_ || !(*proposed_ == *merged)) {
    proposed_ = *merged;
    actions.to_all = Frame(MembershipKind::kPropose, t, Epoch{*merged, 0});
  }
  if (!everyone) return actions;
  for (const auto& r : reports_) {
    if (!(r->live == *merged)) return actions;  // they report again after the proposal
  }
  Epoch decided{*merged, UINT64_MAX};
  for (const auto& r : reports_) decided.start = std::min(decided.start, r->watermark);
  Remember(t, decided);
  target_.reset();
  reports_.clear();
  proposed_.reset();
  actions.to_all = Frame(MembershipKind::kInstall, t, decided);
  return actions;
}

FailoverCoordinator::Actions FailoverCoordinator::OnAnnounce(uint32_t rank, const MembershipFrame& announce) {
  Actions actions;
  const uint32_t t = announce.epoch;
  const Epoch e{announce.live, announce.seq};
  if (const Epoch* known = Find(t)) {
    if (!(known->live == e.live) || known->start != e.start) {
      actions.error = Status(
          Code::kMismatch, "ranks installed different memberships for epoch " + std::to_string(t) +
                               ": reducers " + known->live.ToString() + " from operation " +
                               std::to_string(known->start) + ", and (rank " + std::to_string(rank) + ") " +
                               e.live.ToString() + " from operation " + std::to_string(e.start) +
                               " (reducers lost at the same time, seen differently by different ranks)");
      return actions;
    }
  } else {
    if (actions.error = Forgotten(rank, "announced", t); !actions.error.ok()) return actions;
    Remember(t, e);
  }
  if (t > epoch_) {
    epoch_ = t;
    actions.installed = e;
  }
  if (target_ && *target_ <= t) {
    // Decided elsewhere (this reducer's coordinator died after installing
    // it for some ranks): the ranks that reported here get that install.
    for (uint32_t r = 0; r < reports_.size(); ++r) {
      if (reports_[r]) catch_ups_[*target_].insert(r);
    }
    target_.reset();
    reports_.clear();
    proposed_.reset();
  }
  AnswerCatchUps(&actions);
  return actions;
}

void FailoverCoordinator::AnswerCatchUps(Actions* actions) {
  for (auto it = catch_ups_.begin(); it != catch_ups_.end();) {
    const Epoch* e = Find(it->first);
    if (e == nullptr) {
      ++it;
      continue;
    }
    for (uint32_t rank : it->second) {
      actions->to_rank.emplace_back(rank, Frame(MembershipKind::kInstall, it->first, *e));
    }
    it = catch_ups_.erase(it);
  }
}

}  // namespace rs::server
