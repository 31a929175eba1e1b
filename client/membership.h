// A worker's view of the session's membership with failover on: which
// reducers are live in which epoch, and the steps to a new epoch when this
// rank loses a reducer, hears that another rank lost one, or sees a lost
// reducer come back (docs/reliability.md has the protocol and its bounds).
//
// Every epoch has a live set and a first operation. To move on, each rank
// sends a report (its proposed live set and its completion watermark) to the
// coordinator, the lowest-numbered reducer that is live now and stays live
// in its proposal; the coordinator answers with proposals (the intersection
// of the reports) until every rank agrees, then installs the epoch for all.
// A rank's proposal only shrinks while a change is under way; from its first
// report on, the watermark it reports is frozen, so no rank drops a copy of
// an operation the new epoch may have to redo.
//
// Pure: no I/O and no clock reads (time is passed in). Not thread-safe: the
// client calls it under its mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "protocol/membership.h"

namespace rs::client {

class Membership {
 public:
  // `names` are the reducers' addresses, for messages.
  Membership(std::vector<std::string> names, uint32_t min_reducers, std::chrono::milliseconds change_timeout);

  struct Send {
    uint32_t reducer;
    protocol::MembershipFrame frame;
  };
  struct Actions {
    std::vector<Send> sends;          // frames for reducers (reports)
    std::vector<uint32_t> drop;       // live reducers to stop using and evict
    bool install = false;             // a new epoch: epoch(), live(), start()
    Status failure;                   // the session cannot go on
  };

  uint32_t epoch() const { return epoch_; }
  const protocol::ReducerSet& live() const { return live_; }
  uint64_t start() const { return start_; }  // the current epoch's first operation
  bool changing() const { return proposal_.has_value(); }
  // What this rank reports as its watermark, given its current one.
  uint64_t ReportedWatermark(uint64_t current) const { return frozen_ ? *frozen_ : current; }

  // This rank lost its connection to `reducer` (silence, reset, shutdown);
  // `why` is kept for the messages of later failures.
  Actions OnLost(uint32_t reducer, uint64_t watermark, Clock::time_point now, const std::string& why = "");
  // Every stream to a reducer that is not live is connected and its session
  // ready: propose taking it back.
  Actions OnReady(uint32_t reducer, uint64_t watermark, Clock::time_point now);
  // A reducer that is not live (being rejoined) is gone again.
  void OnNotReady(uint32_t reducer) { ready_.Remove(reducer); }
  Actions OnPropose(uint32_t from, const protocol::MembershipFrame& frame, uint64_t watermark,
                    Clock::time_point now);
  // An install for the next epoch; after applying it (the watermark is then
  // the epoch's start), call AfterInstall to go on with what is pending.
  Actions OnInstall(uint32_t from, const protocol::MembershipFrame& frame);
  Actions AfterInstall(uint64_t watermark, Clock::time_point now);
  // Fails a change that has not completed by its deadline.
  Actions Tick(Clock::time_point now);

  std::string NameOf(uint32_t reducer) const;
  std::string NamesOf(const protocol::ReducerSet& set) const;
  // The lost reducers, each with what was observed when known.
  std::string LostWithReasons() const;
  // Every reducer not in `left`, lost in this epoch or an earlier one, each
  // with what was observed when known.
  std::string MissingWithReasons(const protocol::ReducerSet& left) const;

 private:
  // (Re)computes this rank's proposal and reports it if it changed.
  void Propose(uint64_t watermark, Clock::time_point now, Actions* actions);
  std::optional<uint32_t> CoordinatorOf(const protocol::ReducerSet& proposal) const;

  const std::vector<std::string> names_;
  const uint32_t min_reducers_;
  const std::chrono::milliseconds change_timeout_;

  uint32_t epoch_ = 0;
  protocol::ReducerSet live_;
  uint64_t start_ = 0;
  protocol::ReducerSet lost_;   // live reducers this rank knows to be gone
  protocol::ReducerSet ready_;  // reducers back, not live yet
  std::vector<std::string> why_lost_;  // per reducer, the last observation

  // The change under way, to epoch_ + 1.
  std::optional<protocol::ReducerSet> proposal_;
  std::optional<uint64_t> frozen_;
  std::optional<Clock::time_point> deadline_;
  std::optional<std::pair<uint32_t, protocol::ReducerSet>> last_report_;  // (to, set)
};

}  // namespace rs::client
