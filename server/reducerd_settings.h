// reducerd's settings registry: every flag with its environment variable,
// default, description and deprecated old names. options.cc builds the
// command line and Options from it; the data plane's and the control
// plane's tables in docs/reference/settings.md are generated from it
// (reducerd_settings_table) and a test checks both. Each entry is made from
// its key, declared below; options.cc reads the values through the keys.
//
// Thread-safety: an immutable list, built on first use.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/settings.h"

namespace rs::server {

// Which documentation table lists a setting (SettingInfo::tables).
inline constexpr unsigned kReadmeTable = 1;        // docs/reference/settings.md, "reducerd"
inline constexpr unsigned kControlPlaneTable = 2;  // the same page, "reducerd's control plane"

// Every setting's key, for options.cc to read it by (common/settings.h).
namespace setting {
using std::chrono::milliseconds;
inline constexpr SettingKey<std::string> kListen{"--listen", "REDUCER_LISTEN"};
inline constexpr SettingKey<std::string> kClusterSpec{"", "CLUSTER_SPEC"};
inline constexpr SettingKey<int64_t> kIoThreads{"--io-threads", "REDUCER_IO_THREADS"};
inline constexpr SettingKey<uint64_t> kMemoryLimit{"--memory-limit", "REDUCER_MEMORY_LIMIT"};
inline constexpr SettingKey<uint64_t> kMaxPiece{"--max-piece", "REDUCER_MAX_PIECE"};
inline constexpr SettingKey<std::string> kJobTokenFile{"--job-token-file", "REDUCER_JOB_TOKEN_FILE"};
inline constexpr SettingKey<std::string> kJobToken{"", "REDUCER_JOB_TOKEN"};
inline constexpr SettingKey<milliseconds> kOpTimeout{"--op-timeout", "REDUCER_OP_TIMEOUT"};
inline constexpr SettingKey<milliseconds> kJoinTimeout{"--join-timeout", "REDUCER_JOIN_TIMEOUT"};
inline constexpr SettingKey<milliseconds> kHandshakeTimeout{"--handshake-timeout", "REDUCER_HANDSHAKE_TIMEOUT"};
inline constexpr SettingKey<milliseconds> kIdleTimeout{"--idle-timeout", "REDUCER_IDLE_TIMEOUT"};
inline constexpr SettingKey<int64_t> kMaxConnections{"--max-connections", "REDUCER_MAX_CONNECTIONS"};
inline constexpr SettingKey<int64_t> kMaxConnectionsPerSource{
    "--max-connections-per-source", "REDUCER_MAX_CONNECTIONS_PER_SOURCE"};
inline constexpr SettingKey<int64_t> kMaxHandshakesPerSource{
    "--max-handshakes-per-source", "REDUCER_MAX_HANDSHAKES_PER_SOURCE"};
inline constexpr SettingKey<int64_t> kMaxPendingSessions{"--max-pending-sessions", "REDUCER_MAX_PENDING_SESSIONS"};
inline constexpr SettingKey<int64_t> kMaxPendingSessionsPerSource{
    "--max-pending-sessions-per-source", "REDUCER_MAX_PENDING_SESSIONS_PER_SOURCE"};
inline constexpr SettingKey<int64_t> kCrc{"--crc", "REDUCER_CRC"};
inline constexpr SettingKey<int64_t> kTls{"--tls", "REDUCER_TLS"};
inline constexpr SettingKey<uint64_t> kResultPart{"--result-part", "REDUCER_RESULT_PART"};
inline constexpr SettingKey<int64_t> kWholePiecesFrom{"--whole-pieces-from", "REDUCER_WHOLE_PIECES_FROM"};
inline constexpr SettingKey<std::string> kTcpCongestion{"--tcp-congestion", "REDUCER_TCP_CONGESTION"};
inline constexpr SettingKey<milliseconds> kTcpRtoMin{"--tcp-rto-min", "REDUCER_TCP_RTO_MIN"};
inline constexpr SettingKey<milliseconds> kDrainTimeout{"--drain-timeout", "REDUCER_DRAIN_TIMEOUT"};
inline constexpr SettingKey<std::string> kLogLevel{"--log-level", "REDUCER_LOG_LEVEL"};
inline constexpr SettingKey<std::string> kLogFormat{"--log-format", "REDUCER_LOG_FORMAT"};
inline constexpr SettingKey<std::string> kPortFile{"--port-file", "REDUCER_PORT_FILE"};
inline constexpr SettingKey<std::string> kGrpcListen{"--grpc-listen", "REDUCER_GRPC_LISTEN"};
inline constexpr SettingKey<std::string> kGrpcPortFile{"--grpc-port-file", "REDUCER_GRPC_PORT_FILE"};
inline constexpr SettingKey<std::string> kGrpcTlsCert{"--grpc-tls-cert", "REDUCER_GRPC_TLS_CERT"};
inline constexpr SettingKey<std::string> kGrpcTlsKey{"--grpc-tls-key", "REDUCER_GRPC_TLS_KEY"};
inline constexpr SettingKey<std::string> kGrpcTlsClientCa{"--grpc-tls-client-ca", "REDUCER_GRPC_TLS_CLIENT_CA"};
inline constexpr SettingKey<std::string> kMetricsListen{"--metrics-listen", "REDUCER_METRICS_LISTEN"};
inline constexpr SettingKey<std::string> kMetricsPortFile{"--metrics-port-file", "REDUCER_METRICS_PORT_FILE"};
inline constexpr SettingKey<int64_t> kMetricsMaxSessions{"--metrics-max-sessions", "REDUCER_METRICS_MAX_SESSIONS"};
inline constexpr SettingKey<int64_t> kMetricsMaxRanks{"--metrics-max-ranks", "REDUCER_METRICS_MAX_RANKS"};
inline constexpr SettingKey<int64_t> kMetricsSessionIds{"--metrics-session-ids", "REDUCER_METRICS_SESSION_IDS"};
}  // namespace setting

const std::vector<SettingInfo>& ReducerdSettings();

}  // namespace rs::server
