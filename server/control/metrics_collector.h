// Prometheus exposition of the reducer. Nothing on the data plane knows
// Prometheus: at scrape time this collector takes snapshots of the
// reducer's atomic counters and of its sessions (short locks, no I/O) and
// turns them into metric families named reducer_<what>_<unit>. Per-session
// series are bounded: at most max_sessions sessions (live ones first, then
// the most recently ended) and per session at most max_ranks ranks (those
// most often last to arrive), so cardinality stays fixed however long the
// reducer runs.
//
// Thread-safe: Collect() runs on the HTTP server's threads, concurrently
// with the data plane; BuildMetricFamilies depends on nothing but its
// arguments and the process's label key (SessionLabel).
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <string>
#include <vector>

#include "server/core/server_defaults.h"
#include "server/net/reducer_server.h"

namespace rs::server {

struct MetricsLimits {
  size_t max_sessions = kDefaultMetricsMaxSessions;
  size_t max_ranks = kDefaultMetricsMaxRanks;
  // Label per-session series with the session's id. Off: with an opaque
  // label (SessionLabel), since whoever reads the metrics could otherwise
  // send HELLOs for the sessions it names.
  bool session_ids = false;
};

// The `session` label of a session's series: its id when `ids`, otherwise
// "h" and 12 hex digits of an HMAC-SHA256 of the id under a key drawn once
// per process: the same for a session as long as the reducer runs, distinct
// between sessions, and no help in guessing the id.
std::string SessionLabel(const protocol::SessionId& id, bool ids);

// Every family, from one snapshot of the reducer.
std::vector<prometheus::MetricFamily> BuildMetricFamilies(const ServerStats& stats,
                                                          const std::vector<SessionSnapshot>& sessions,
                                                          const MetricsLimits& limits);

class MetricsCollector final : public prometheus::Collectable {
 public:
  MetricsCollector(const ReducerServer& server, MetricsLimits limits) : server_(server), limits_(limits) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const ReducerServer& server_;
  const MetricsLimits limits_;
};

}  // namespace rs::server
