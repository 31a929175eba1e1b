// The reducer's part in a failover (docs/reliability.md): any live reducer
// may be asked by the ranks to coordinate the move to a new membership epoch
// (they pick the lowest-numbered reducer that stays live), and every reducer
// records the epochs the ranks announce, so that it can refuse pieces of an
// old epoch and bring a rank that missed an install up to date.
//
// As coordinator it collects one report per rank for the target epoch: a
// proposed set of live reducers and the rank's completion watermark. The
// proposal it broadcasts is the intersection of the reports (losing a
// reducer wins over adding one); when every rank has reported that very set,
// it decides: the epoch starts at the lowest reported watermark, below which
// every operation has completed on every rank, and every operation from
// there on is redone in the new epoch. It decides each epoch once.
//
// Pure: frames in, frames out; the session sends them. Not thread-safe (the
// session calls it under its mutex).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "common/status.h"
#include "protocol/membership.h"

namespace rs::server {

class FailoverCoordinator {
 public:
  explicit FailoverCoordinator(uint32_t world) : world_(world) {}

  // Epochs remembered (decided here or announced), the newest: a rank a
  // failover or two behind finds its install, and a rank that announces
  // epoch after epoch cannot grow the reducer's memory. A report or an
  // announce of an older epoch fails the session; so do ranks waiting on
  // more than this many epochs at once.
  static constexpr size_t kEpochHistory = 64;

  struct Epoch {
    protocol::ReducerSet live;
    uint64_t start = 0;
  };
  struct Actions {
    std::optional<protocol::MembershipFrame> to_all;  // to every rank
    std::vector<std::pair<uint32_t, protocol::MembershipFrame>> to_rank;
    std::optional<Epoch> installed;  // OnAnnounce: the session moves to epoch(), from this start
    Status error;                    // fail the session
  };

  // A rank's report for the epoch it wants next.
  Actions OnReport(uint32_t rank, const protocol::MembershipFrame& report);
  // A rank has installed an epoch (the reducer learns the new epoch here).
  Actions OnAnnounce(uint32_t rank, const protocol::MembershipFrame& announce);

  // The newest epoch announced to this reducer (0 before any).
  uint32_t epoch() const { return epoch_; }
  const Epoch* Find(uint32_t epoch) const;

 private:
  static protocol::MembershipFrame Frame(protocol::MembershipKind kind, uint32_t epoch, const Epoch& e);
  void AnswerCatchUps(Actions* actions);
  void Remember(uint32_t epoch, const Epoch& e);  // keeps the newest kEpochHistory
  // Set when `epoch` is older than every epoch remembered, the history full.
  Status Forgotten(uint32_t rank, const char* what, uint32_t epoch) const;

  const uint32_t world_;
  uint32_t epoch_ = 0;
  std::map<uint32_t, Epoch> history_;  // decided here or announced by a rank

  struct Report {
    protocol::ReducerSet live;
    uint64_t watermark = 0;
  };
  std::optional<uint32_t> target_;            // the epoch being collected
  std::vector<std::optional<Report>> reports_;  // per rank, for target_
  std::optional<protocol::ReducerSet> proposed_;  // last set broadcast for target_
  std::map<uint32_t, std::set<uint32_t>> catch_ups_;  // epoch -> ranks waiting for its install
};

}  // namespace rs::server
