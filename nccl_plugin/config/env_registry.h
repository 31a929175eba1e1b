// The one registry of environment variables the plugin reads. Each variable
// has a name, a default, a one-line description and, if it was renamed, its
// old name, still read as a deprecated alias (the new name wins when both are
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

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/settings.h"
#include "common/status.h"

namespace rs::plugin {

enum class EnvKey : int {
  kReducerAddrs,
  kClusterSpec,
  kJobToken,
  kJobTokenFile,
  kSocketIfname,
  kNcclSocketIfname,
  kSocketThreads,
  kSocksPerThread,
  kNicSpeed,
  kStreams,
  kIoThreads,
  kMaxPiece,
  kMinPiece,
  kSendWindow,
  kWriteSlice,
  kOpTimeout,
  kConnectTimeout,
  kLivenessTimeout,
  kCrc,
  kTls,
  kWireDtype,
  kFailover,
  kMinReducers,
  kRetention,
  kTcpCongestion,
  kTcpRtoMin,
  kLog,
  kRequired,
  // NCCL's own variables, read to tell the user when NCCL would leave
  // CollNet off (report/collnet_watch.h).
  kNcclCollNetEnable,
  kNcclAlgo,
  kNcclTunerPlugin,
  kNcclCollNetNodeThreshold,
  kCount,
};
inline constexpr int kNumEnvVars = static_cast<int>(EnvKey::kCount);

// The client's settings (REDUCER_STREAMS, REDUCER_MAX_PIECE, ...,
// REDUCER_RETENTION) take their default, description and old name from
// their one list, client/client_settings.h, shared with reducer-bench and
// rs-train; the plugin adds a sentence of its own where it does more with one.
struct EnvVarInfo {
  EnvKey key;
  const char* name;
  const char* default_value;  // "" means "unset / empty"
  const char* doc;
  // The name before the rename to units-in-the-value, or nullptr.
  const char* old_name = nullptr;
  // How the old name read a number without a unit ("ms" for *_MS); "": as
  // the new name does.
  const char* old_bare_unit = "";
};

// All variables, in the order docs/reference/settings.md lists them.
const std::array<EnvVarInfo, kNumEnvVars>& EnvVars();
const EnvVarInfo& EnvInfo(EnvKey key);

class Env {
 public:
  // Returns the value of a variable or nullptr (getenv's contract).
  using Lookup = std::function<const char*(const char* name)>;

  // A snapshot taken through `lookup` (tests pass a map).
  static Env FromLookup(const Lookup& lookup);
  // The process environment, read on the first call and never again.
  static const Env& Process();

  // True when the variable (or its old name) is set to a non-empty value.
  bool IsSet(EnvKey key) const;
  // The value, or the default when unset or empty.
  std::string Get(EnvKey key) const;
  // The variable the value came from: its name, its old name, or "default".
  const std::string& Source(EnvKey key) const;
  // Typed values; the default when unset. An unparsable or out-of-range
  // value is a kInvalidArgument naming the variable and the expected format.
  StatusOr<int64_t> GetInt(EnvKey key, int64_t min, int64_t max) const;
  StatusOr<uint64_t> GetSize(EnvKey key, uint64_t min, uint64_t max) const;
  StatusOr<std::chrono::milliseconds> GetDuration(EnvKey key, std::chrono::milliseconds min,
                                                  std::chrono::milliseconds max) const;

  // One line per deprecated name that is set, for one WARN line each.
  const std::vector<std::string>& notices() const { return settings_.notices(); }
  // The resolved values by variable name, for the client's shared settings
  // (client::ApplyClientSettings).
  const Settings& settings() const { return settings_; }

 private:
  Settings settings_;
};

// "| Variable | Default | Meaning |" table for docs/reference/settings.md.
std::string EnvMarkdownTable();

}  // namespace rs::plugin
