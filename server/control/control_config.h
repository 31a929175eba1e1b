// What the control plane needs from reducerd's options: where to serve gRPC
// and Prometheus, the gRPC port's TLS, and how much per-session detail the
// metrics may carry. A plain value, so options parsing does not depend on gRPC.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "server/core/server_defaults.h"

namespace rs::server {

// The gRPC port's TLS: the files' PEM text, read and checked by the options
// parser (so a bad file stops reducerd before it listens), and their names
// for the log. No certificate: plaintext.
struct GrpcTls {
  enum class Mode { kPlaintext, kTls, kMutualTls };

  std::string cert_file;
  std::string cert_chain;      // the server's certificate, then its intermediates
  std::string key_file;
  std::string private_key;
  std::string client_ca_file;  // set: mutual TLS, clients must present a
  std::string client_ca;       // certificate that one of these CAs signed

  Mode mode() const {
    if (cert_chain.empty()) return Mode::kPlaintext;
    return client_ca.empty() ? Mode::kTls : Mode::kMutualTls;
  }
};

struct ControlConfig {
  std::string grpc_listen;     // HOST:PORT, empty: no gRPC service
  GrpcTls grpc_tls;
  std::string metrics_listen;  // HOST:PORT, empty: no /metrics
  // Cardinality bounds of the per-session series: at most this many
  // sessions (live ones first, then the most recently ended), and per
  // session at most this many ranks (those most often last to arrive).
  size_t metrics_max_sessions = kDefaultMetricsMaxSessions;
  size_t metrics_max_ranks = kDefaultMetricsMaxRanks;
  bool metrics_session_ids = false;  // label per-session series with the ids (else opaque labels)
  std::chrono::milliseconds drain_timeout = kDefaultDrainTimeout.value;  // reported by Drain
};

}  // namespace rs::server
