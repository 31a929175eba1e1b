// The client's transport and reliability settings, listed once: streams,
// piece sizes, send window and write slice, I/O threads, the timeouts
// (operation, connect, liveness), CRC, the wire type, failover, the fewest
// reducers and retention. Each is data: its flag and variable, value name,
// default, help and old names, and how its value lands in ClientOptions.
// Every front end puts this list in its own registry (common/settings.h):
// reducer-bench and rs-train as flags with variables, the NCCL plugin and
// the Python package as variables; so a setting has the same name, default,
// bounds and message everywhere. What only one front end has (a default of
// its own, an old name it kept) it adds to its copy (common/settings.h:
// FindSetting).
//
// Each setting's key (common/settings.h) is declared below, once; the
// front ends read a shared setting through it, whichever name their
// registry holds it by (flag and variable, or the variable alone).
//
// Thread-safety: the list is immutable after the first call; Apply* are
// pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "common/settings.h"
#include "common/status.h"

namespace rs::client {

namespace setting {
using std::chrono::milliseconds;
inline constexpr SettingKey<int64_t> kStreams{"--streams", "REDUCER_STREAMS"};
inline constexpr SettingKey<uint64_t> kMaxPiece{"--max-piece", "REDUCER_MAX_PIECE"};
inline constexpr SettingKey<uint64_t> kMinPiece{"--min-piece", "REDUCER_MIN_PIECE"};
inline constexpr SettingKey<uint64_t> kSendWindow{"--send-window", "REDUCER_SEND_WINDOW"};
inline constexpr SettingKey<uint64_t> kWriteSlice{"--write-slice", "REDUCER_WRITE_SLICE"};
inline constexpr SettingKey<int64_t> kIoThreads{"--io-threads", "REDUCER_IO_THREADS"};
inline constexpr SettingKey<milliseconds> kOpTimeout{"--op-timeout", "REDUCER_OP_TIMEOUT"};
inline constexpr SettingKey<milliseconds> kConnectTimeout{"--connect-timeout", "REDUCER_CONNECT_TIMEOUT"};
inline constexpr SettingKey<milliseconds> kLivenessTimeout{"--liveness-timeout", "REDUCER_LIVENESS_TIMEOUT"};
inline constexpr SettingKey<int64_t> kCrc{"--crc", "REDUCER_CRC"};
inline constexpr SettingKey<int64_t> kTls{"--tls", "REDUCER_TLS"};
inline constexpr SettingKey<std::string> kWireDtype{"--wire-dtype", "REDUCER_WIRE_DTYPE"};
inline constexpr SettingKey<int64_t> kFailover{"--failover", "REDUCER_FAILOVER"};
inline constexpr SettingKey<int64_t> kMinReducers{"--min-reducers", "REDUCER_MIN_REDUCERS"};
inline constexpr SettingKey<uint64_t> kRetention{"--retention", "REDUCER_RETENTION"};
inline constexpr SettingKey<std::string> kTcpCongestion{"--tcp-congestion", "REDUCER_TCP_CONGESTION"};
inline constexpr SettingKey<milliseconds> kTcpRtoMin{"--tcp-rto-min", "REDUCER_TCP_RTO_MIN"};
inline constexpr SettingKey<std::string> kTcpPacing{"--tcp-pacing", "REDUCER_TCP_PACING"};
}  // namespace setting

struct ClientSetting {
  SettingInfo info;  // flag, variable, value name, default, help, old names
  // Reads the value into `o`, through the setting's key. An error names
  // where the value came from and what it expects.
  Status (*apply)(const Settings& s, ClientOptions* o);
};

const std::vector<ClientSetting>& ClientSettings();

// The list as registry entries, `doc_prefix` before each help text ("CPU
// backend: " for rs-train), for a front end to append to its registry.
std::vector<SettingInfo> ClientSettingInfos(std::string_view doc_prefix = "");

// The shared entry of `key`, as ClientSettingInfos() has it; aborts when
// `key` is not a shared setting (a programming error, like Settings::Get).
const SettingInfo& ClientSettingInfo(const SettingName& key);

// Reads one shared setting from `s` into `o` (the NCCL plugin's
// point-to-point transport takes two of them); aborts when `key` is not one.
Status ApplyClientSetting(const Settings& s, const SettingName& key, ClientOptions* o);

// Reads every shared setting from `s` (resolved from a registry holding
// ClientSettingInfos, by flag or by variable) into `o`. Set `o->reducers`
// first: REDUCER_MIN_REDUCERS may not exceed their number (unchecked while
// the list is empty), and `reducers_source` names where they came from in
// that error.
Status ApplyClientSettings(const Settings& s, ClientOptions* o, std::string_view reducers_source = "");

}  // namespace rs::client
