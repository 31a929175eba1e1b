#include "client/membership.h"

namespace rs::client {

using protocol::MembershipFrame;
using protocol::MembershipKind;
using protocol::ReducerSet;

Membership::Membership(std::vector<std::string> names, uint32_t min_reducers,
                       std::chrono::milliseconds change_timeout)
    : names_(std::move(names)),
      min_reducers_(min_reducers),
      change_timeout_(change_timeout),
      live_(static_cast<uint32_t>(names_.size()), /*all=*/true),
      lost_(static_cast<uint32_t>(names_.size())),
      ready_(static_cast<uint32_t>(names_.size())),
      why_lost_(names_.size()) {}

std::string Membership::NameOf(uint32_t reducer) const {
  return reducer < names_.size() ? names_[reducer] : "reducer #" + std::to_string(reducer);
}

std::string Membership::NamesOf(const ReducerSet& set) const {
  std::string out;
  for (uint32_t r : set.Members()) out += (out.empty() ? "" : ", ") + NameOf(r);
  return out.empty() ? "none" : out;
}

std::string Membership::LostWithReasons() const {
  std::string out;
  for (uint32_t r : lost_.Members()) {
    out += (out.empty() ? "" : "; ") + NameOf(r);
    if (!why_lost_[r].empty()) out += " (" + why_lost_[r] + ")";
  }
  return out.empty() ? "none" : out;
}

std::string Membership::MissingWithReasons(const ReducerSet& left) const {
  std::string out;
  for (uint32_t r = 0; r < names_.size(); ++r) {
    if (left.Has(r)) continue;
    out += (out.empty() ? "" : "; ") + NameOf(r);
    if (!why_lost_[r].empty()) out += " (" + why_lost_[r] + ")";
  }
  return out.empty() ? "none" : out;
}

std::optional<uint32_t> Membership::CoordinatorOf(const ReducerSet& proposal) const {
  const auto members = live_.Intersect(proposal).Members();
  if (members.empty()) return std::nullopt;
  return members.front();
}

void Membership::Propose(uint64_t watermark, Clock::time_point now, Actions* actions) {
  const ReducerSet wanted = live_.Union(ready_).Minus(lost_);
  proposal_ = proposal_ ? proposal_->Intersect(wanted) : wanted;
  if (proposal_->Count() < min_reducers_) {
    actions->failure = Status(
        Code::kPeerFailed, "only " + std::to_string(proposal_->Count()) + " of " + std::to_string(names_.size()) +
                               " reducers left (lost: " + MissingWithReasons(*proposal_) + "), below the minimum of " +
                               std::to_string(min_reducers_) + " (min_reducers, REDUCER_MIN_REDUCERS)");
    return;
  }
  const std::optional<uint32_t> coordinator = CoordinatorOf(*proposal_);
  if (!coordinator) {
    actions->failure = Status(Code::kPeerFailed, "every reducer of epoch " + std::to_string(epoch_) +
                                                     " is lost (" + LostWithReasons() +
                                                     "); none is left to coordinate a failover");
    return;
  }
  if (!frozen_) frozen_ = watermark;
  if (!deadline_) deadline_ = now + change_timeout_;
  if (last_report_ && last_report_->first == *coordinator && last_report_->second == *proposal_) return;
  last_report_ = std::make_pair(*coordinator, *proposal_);
  MembershipFrame report;
  report.kind = MembershipKind::kReport;
  report.epoch = epoch_ + 1;
  report.seq = *frozen_;
  report.live = *proposal_;
  actions->sends.push_back({*coordinator, report});
}

Membership::Actions Membership::OnLost(uint32_t reducer, uint64_t watermark, Clock::time_point now,
                                       const std::string& why) {
  Actions actions;
  if (reducer < why_lost_.size() && !why.empty()) why_lost_[reducer] = why;
  if (!live_.Has(reducer)) {
    ready_.Remove(reducer);
    if (proposal_) Propose(watermark, now, &actions);  // it may have been proposed
    return actions;
  }
  if (lost_.Has(reducer)) return actions;
  lost_.Add(reducer);
  actions.drop.push_back(reducer);
  Propose(watermark, now, &actions);
  return actions;
}

Membership::Actions Membership::OnReady(uint32_t reducer, uint64_t watermark, Clock::time_point now) {
  Actions actions;
  // A live reducer is only "back" if it was lost and is still to be removed.
  if (reducer >= names_.size() || (live_.Has(reducer) && !lost_.Has(reducer))) return actions;
  ready_.Add(reducer);
  // An addition waits for the next change if one is under way (proposals
  // only shrink while a change is in flight).
  if (!proposal_) Propose(watermark, now, &actions);
  return actions;
}

Membership::Actions Membership::OnPropose(uint32_t from, const MembershipFrame& frame, uint64_t watermark,
                                          Clock::time_point now) {
  Actions actions;
  if (frame.live.size() != names_.size()) {
    actions.failure = Status(Code::kMismatch, "reducer " + NameOf(from) + " proposes a set of " +
                                                  std::to_string(frame.live.size()) + " reducers, this rank has " +
                                                  std::to_string(names_.size()) +
                                                  ": every rank must be given the same reducer list");
    return actions;
  }
  if (frame.epoch <= epoch_) return actions;  // stale
  if (frame.epoch > epoch_ + 1) {
    // The others are an epoch ahead: ask `from` for the install this rank
    // missed (it answers from its history).
    MembershipFrame report;
    report.kind = MembershipKind::kReport;
    report.epoch = epoch_ + 1;
    report.seq = ReportedWatermark(watermark);
    report.live = proposal_.value_or(live_);
    actions.sends.push_back({from, report});
    return actions;
  }
  // Whatever another rank lost is lost here too.
  for (uint32_t r : live_.Minus(frame.live).Members()) {
    if (lost_.Has(r)) continue;
    lost_.Add(r);
    why_lost_[r] = "lost by another rank";
    actions.drop.push_back(r);
  }
  proposal_ = proposal_.value_or(live_.Union(ready_).Minus(lost_)).Intersect(frame.live);
  Propose(watermark, now, &actions);
  return actions;
}

Membership::Actions Membership::OnInstall(uint32_t from, const MembershipFrame& frame) {
  Actions actions;
  if (frame.epoch <= epoch_) return actions;  // stale
  if (frame.epoch > epoch_ + 1 || frame.live.size() != names_.size()) {
    actions.failure = Status(Code::kProtocol, "reducer " + NameOf(from) + " installed epoch " +
                                                  std::to_string(frame.epoch) + " of " +
                                                  std::to_string(frame.live.size()) + " reducers; this rank is at epoch " +
                                                  std::to_string(epoch_) + " of " + std::to_string(names_.size()));
    return actions;
  }
  for (uint32_t r : live_.Minus(frame.live).Members()) {
    if (!lost_.Has(r)) actions.drop.push_back(r);
  }
  epoch_ = frame.epoch;
  live_ = frame.live;
  start_ = frame.seq;
  lost_ = lost_.Intersect(live_);  // lost during the change: the next one removes them
  ready_ = ready_.Minus(live_);
  proposal_.reset();
  frozen_.reset();
  deadline_.reset();
  last_report_.reset();
  actions.install = true;
  return actions;
}

Membership::Actions Membership::AfterInstall(uint64_t watermark, Clock::time_point now) {
  Actions actions;
  if (!lost_.Empty() || !ready_.Empty()) Propose(watermark, now, &actions);
  return actions;
}

Membership::Actions Membership::Tick(Clock::time_point now) {
  Actions actions;
  if (deadline_ && now > *deadline_) {
    const auto coordinator = proposal_ ? CoordinatorOf(*proposal_) : std::nullopt;
    actions.failure = Status(
        Code::kTimeout,
        "failover to epoch " + std::to_string(epoch_ + 1) + " (reducers " + NamesOf(proposal_.value_or(live_)) +
            ", lost " + LostWithReasons() + ") did not complete within " +
            std::to_string(change_timeout_.count()) + " ms: " +
            (coordinator ? "reducer " + NameOf(*coordinator) + " did not hear from every rank" : "no coordinator"));
  }
  return actions;
}

}  // namespace rs::client
