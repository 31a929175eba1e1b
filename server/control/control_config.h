// What the control plane needs from reducerd's options: where to serve gRPC
// and Prometheus, and how much per-session detail the metrics may carry.
// A plain value, so options parsing does not depend on gRPC.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace rs::server {

struct ControlConfig {
  std::string grpc_listen;     // HOST:PORT, empty: no gRPC service
  std::string metrics_listen;  // HOST:PORT, empty: no /metrics
  // Cardinality bounds of the per-session series: at most this many
  // sessions (live ones first, then the most recently ended), and per
  // session at most this many ranks (those most often last to arrive).
  size_t metrics_max_sessions = 16;
  size_t metrics_max_ranks = 8;
  bool metrics_session_ids = false;  // label per-session series with the ids (else opaque labels)
  std::chrono::milliseconds drain_timeout{30'000};  // reported by Drain
};

}  // namespace rs::server
