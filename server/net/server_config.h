// What the data plane needs to know from the daemon's options. Defaults:
// server/core/server_defaults.h, as reducerd's registry has them (except
// the port, 0 here: a free one, for tests and tools).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/tcp_tuning.h"
#include "server/core/admission.h"
#include "server/core/server_defaults.h"

namespace rs::server {

struct ServerConfig {
  std::string listen_host = "0.0.0.0";
  uint16_t listen_port = 0;
  int io_threads = 2;
  size_t memory_limit = kDefaultMemoryLimit.value;
  size_t max_piece_bytes = kDefaultMaxPiece.value;
  std::string job_token;  // empty: no authentication
  // TLS 1.3 on every connection, keyed by job_token (common/data_tls.h);
  // workers without it are refused, naming REDUCER_TLS.
  bool tls = false;
  std::chrono::milliseconds op_timeout = kDefaultOpTimeout.value;
  std::chrono::milliseconds join_timeout = kDefaultJoinTimeout.value;
  // Hostile or broken clients: a connection must finish its handshake
  // within handshake_timeout; connections, handshakes and sessions waiting
  // for their ranks are bounded in all and per source address.
  std::chrono::milliseconds handshake_timeout = kDefaultHandshakeTimeout.value;
  // A joined stream whose worker turned liveness off (HELLO liveness 0)
  // sends nothing while idle, and nothing else would ever close it: it
  // fails its session after this long without a byte from the worker.
  std::chrono::milliseconds idle_timeout = kDefaultIdleTimeout.value;
  AdmissionLimits limits;
  // Check the CRC32C of contributions that carry one, and send one with
  // results; off: neither (no CPU spent on it).
  bool crc = kDefaultCrc.value;
  // Send a piece's result in parts of at least this many bytes as they are
  // reduced, to ranks that take parts; 0: whole pieces only; unset: each
  // session's own, from its ranks (AutoResultPartBytes).
  std::optional<size_t> result_part_bytes;
  // ... except for operations cut into at least this many pieces per rank,
  // whose pieces go out whole (SessionLimits::whole_pieces_from); 0: never.
  uint32_t whole_pieces_from = kDefaultWholePiecesFrom;
  // TCP on every accepted connection (--tcp-congestion, --tcp-rto-min;
  // common/tcp_tuning.h): the results travel on them.
  TcpTuning tcp;
};

}  // namespace rs::server
