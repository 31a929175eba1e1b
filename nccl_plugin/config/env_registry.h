// The one registry of environment variables the plugin reads. Each variable
// has a name, a default and a one-line description; the README table is
// generated from this list (EnvMarkdownTable, tool nccl_plugin_env_table), so
// documentation cannot drift from the code. The process environment is read
// once, on first use, into an immutable snapshot; nothing else in the plugin
// calls getenv, and the plugin never sets variables.
//
// Thread-safety: Env is immutable after construction; Env::Process() is safe
// to call from any thread (initialised once).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

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
  kStreams,
  kIoThreads,
  kPieceBytes,
  kMinPieceBytes,
  kOpTimeoutMs,
  kConnectTimeoutMs,
  kLivenessTimeout,
  kCrc,
  kFailover,
  kMinReducers,
  kRetention,
  kCount,
};
inline constexpr int kNumEnvVars = static_cast<int>(EnvKey::kCount);

struct EnvVarInfo {
  EnvKey key;
  const char* name;
  const char* default_value;  // "" means "unset / empty"
  const char* doc;
};

// All variables, in the order the README lists them.
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

  // True when the variable is set to a non-empty value.
  bool IsSet(EnvKey key) const;
  // The value, or the default when unset or empty.
  std::string Get(EnvKey key) const;
  // A decimal integer in [min, max]; the default when unset. An unparsable or
  // out-of-range value is an kInvalidArgument naming the variable.
  StatusOr<int64_t> GetInt(EnvKey key, int64_t min, int64_t max) const;

 private:
  std::array<std::optional<std::string>, kNumEnvVars> values_;
};

// "| Variable | Default | Meaning |" table for the README.
std::string EnvMarkdownTable();

}  // namespace rs::plugin
