// The one registry of environment variables the plugin reads. Each variable
// has a key, a name, a default, a one-line description and, if it was
// renamed, its old name, still read as a deprecated alias (the new name wins when both are
// set; notices() says so, for the plugin to log once). Sizes and durations
// are written with units (common/units.h), as in reducerd and reducer-bench.
// The table in docs/reference/settings.md is generated from this list (EnvMarkdownTable, tool
// nccl_plugin_env_table), so documentation cannot drift from the code. The
// process environment is read once, on first use, into an immutable snapshot;
// nothing else in the plugin calls getenv, and the plugin never sets
// variables, with one documented exception: when preloaded (LD_PRELOAD), a
// load-time constructor fills in NCCL's own NCCL_NET_PLUGIN,
// NCCL_COLLNET_ENABLE, NCCL_NET_PLUGIN_REF_COUNT and NCCL_TUNER_PLUGIN where unset, before main
// (abi/preload.cc says why). Resolution and parsing are common/settings.h's,
// shared with the daemon.
//
// Thread-safety: Env is immutable after construction; Env::Process() is safe
// to call from any thread (initialised once).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "client/client_settings.h"
#include "common/default_value.h"
#include "common/settings.h"
#include "common/status.h"

namespace rs::plugin {

// The defaults of the plugin's own numeric settings, written once: the
// registry shows them, P2pConfig and NcclCollNetSettings (plugin_config.h)
// start from them. The client's are in client/client_defaults.h.
inline constexpr Default<int> kDefaultSocketThreads{2, "2"};
inline constexpr Default<int> kDefaultSocksPerThread{2, "2"};
inline constexpr Default<int> kDefaultNcclCollNetNodeThreshold{2, "2"};  // NCCL's own

// Every variable's key (common/settings.h), declared once; the plugin reads
// a value through its key (env.Get(setting::kReducerAddrs)). The client's
// shared settings are the client's own keys (client/client_settings.h),
// listed here so that plugin code names every variable the same way.
namespace setting {
inline constexpr SettingKey<std::string> kReducerAddrs{"", "REDUCER_ADDRS"};
inline constexpr SettingKey<std::string> kClusterSpec{"", "CLUSTER_SPEC"};
inline constexpr SettingKey<std::string> kJobToken{"", "REDUCER_JOB_TOKEN"};
inline constexpr SettingKey<std::string> kJobTokenFile{"", "REDUCER_JOB_TOKEN_FILE"};
inline constexpr SettingKey<std::string> kSocketIfname{"", "REDUCER_SOCKET_IFNAME"};
inline constexpr SettingKey<std::string> kNcclSocketIfname{"", "NCCL_SOCKET_IFNAME"};
inline constexpr SettingKey<int64_t> kSocketThreads{"", "REDUCER_SOCKET_NTHREADS"};
inline constexpr SettingKey<int64_t> kSocksPerThread{"", "REDUCER_NSOCKS_PERTHREAD"};
inline constexpr SettingKey<std::string> kNicSpeed{"", "REDUCER_NIC_SPEED"};
using client::setting::kStreams;
using client::setting::kIoThreads;
using client::setting::kMaxPiece;
using client::setting::kMinPiece;
using client::setting::kSendWindow;
using client::setting::kWriteSlice;
using client::setting::kOpTimeout;
using client::setting::kConnectTimeout;
using client::setting::kLivenessTimeout;
using client::setting::kCrc;
using client::setting::kTls;
using client::setting::kWireDtype;
using client::setting::kFailover;
using client::setting::kMinReducers;
using client::setting::kRetention;
using client::setting::kTcpCongestion;
using client::setting::kTcpRtoMin;
using client::setting::kTcpPacing;
inline constexpr SettingKey<std::string> kLog{"", "REDUCER_LOG"};
inline constexpr SettingKey<std::string> kRequired{"", "REDUCER_REQUIRED"};
inline constexpr SettingKey<std::string> kCollNetTrace{"", "REDUCER_COLLNET_TRACE"};
// NCCL's own variables, read to tell the user when NCCL would leave
// CollNet off (report/collnet_watch.h).
inline constexpr SettingKey<std::string> kNcclCollNetEnable{"", "NCCL_COLLNET_ENABLE"};
inline constexpr SettingKey<std::string> kNcclAlgo{"", "NCCL_ALGO"};
inline constexpr SettingKey<std::string> kNcclTunerPlugin{"", "NCCL_TUNER_PLUGIN"};
inline constexpr SettingKey<std::string> kNcclCollNetNodeThreshold{"", "NCCL_COLLNET_NODE_THRESHOLD"};
}  // namespace setting

// All variables, in the order docs/reference/settings.md lists them, as
// common/settings.h's entries: environment only. The client's shared
// settings (REDUCER_STREAMS, ..., REDUCER_TCP_RTO_MIN) are their entries in
// client/client_settings.h, taken by key, with their flags dropped and a
// sentence of the plugin's own appended where it does more with one.
const std::vector<SettingInfo>& PluginSettings();

class Env {
 public:
  // Returns the value of a variable or nullptr (getenv's contract).
  using Lookup = std::function<const char*(const char* name)>;

  // A snapshot taken through `lookup` (tests pass a map).
  static Env FromLookup(const Lookup& lookup);
  // The process environment, read on the first call and never again.
  static const Env& Process();

  // True when the variable (or its old name) is set to a non-empty value.
  bool IsSet(const SettingName& key) const { return settings_.IsSet(key); }
  // The value, or the default when unset or empty.
  const std::string& Get(const SettingName& key) const { return settings_.Get(key).text; }
  // The variable the value came from: its name, its old name, or "default".
  const std::string& Source(const SettingName& key) const { return settings_.Get(key).source; }
  // Typed values; the default when unset. An unparsable or out-of-range
  // value is a kInvalidArgument naming the variable and the expected format.
  StatusOr<int64_t> GetInt(const SettingKey<int64_t>& key, int64_t min, int64_t max) const {
    return settings_.Int(key, min, max);
  }
  StatusOr<uint64_t> GetSize(const SettingKey<uint64_t>& key, uint64_t min, uint64_t max) const {
    return settings_.Size(key, min, max);
  }
  StatusOr<std::chrono::milliseconds> GetDuration(const SettingKey<std::chrono::milliseconds>& key,
                                                  std::chrono::milliseconds min, std::chrono::milliseconds max) const {
    return settings_.Duration(key, min, max);
  }

  // One line per deprecated name that is set, for one WARN line each.
  const std::vector<std::string>& notices() const { return settings_.notices(); }
  // The resolved values, for the client's shared settings
  // (client::ApplyClientSettings).
  const Settings& settings() const { return settings_; }

 private:
  Settings settings_;
};

// "| Variable | Default | Meaning |" table for docs/reference/settings.md.
std::string EnvMarkdownTable();

}  // namespace rs::plugin
