// A program's settings registry, for the programs with a command line
// (reducerd, reducer-bench, rs-train) and for those read from the
// environment alone (the NCCL plugin, the Python package). Each setting has
// a flag, an environment variable that supplies its value when the flag is
// absent (for containers), a default, a description, and the names it had
// before, kept working as deprecated aliases. The one list feeds the
// command-line parser (cli_parse.h: SettingFlags), the resolution of every
// value, the deprecation notices and the reference tables, so none of them
// can drift.
//
// Code names a setting by a typed key, declared once per setting beside its
// program's registry, so that a misspelt name or a value read as the wrong
// type does not compile:
//
//   inline constexpr SettingKey<std::chrono::milliseconds> kOpTimeout{"--op-timeout", "REDUCER_OP_TIMEOUT"};
//   registry:  Entry(kOpTimeout, "DUR", kDefaultOpTimeout.text, "", "An all-reduce with no answer ...")
//   reading:   s.Duration(kOpTimeout, 1ms, 24h)    // s.Int(kOpTimeout, ...) does not compile
//
// A key left out of its program's registry still compiles; each program's
// keys test (tests/support/setting_keys.h) fails on it in CI, and reading it
// aborts (Settings::Get), as a last resort.
//
// The key's type says which reader takes it: int64_t whole numbers (Int),
// uint64_t byte sizes (Size), milliseconds durations (Duration), std::string
// text (Get, OneOf). Names as text remain only where they come from outside
// the code: the command line, the environment, tables walked in a loop.
//
// Naming (the same in reducerd, reducer-bench and the NCCL plugin): flags
// `--thing`, variables `REDUCER_THING`, no unit in the name; sizes and
// durations are written with units and read by common/units.h.
//
// Precedence for one setting: its flag, an old flag, its variable, an old
// variable, the default. Every old name that is set yields one notice: that
// it is deprecated and which name replaces it, or that it was ignored because
// the new name (or a flag) is also set.
//
// Thread-safety: Settings is an immutable value after Resolve. The process
// environment is read only through ProcessEnv(), by Resolve's caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace rs {

// An old name kept as a deprecated alias. `bare_unit` is how it read a
// number written without a unit ("ms" for an old *_MS variable, "s" for an
// old flag that took seconds); the unit is appended before parsing, so old
// values keep their meaning. Empty: read like the new name.
struct SettingAlias {
  std::string name;  // "--threads" or "REDUCER_THREADS"
  std::string bare_unit = {};
};

struct SettingInfo {
  std::string flag;                // "--io-threads"; empty: environment only
  std::string env = {};            // "REDUCER_IO_THREADS"; empty: flag only
  std::string value_name = {};     // "N", "SIZE", "DUR", "HOST:PORT", "FILE"
  std::string default_value = {};  // the value when nothing is set; empty: unset
  std::string default_doc = {};    // the table's default column when the default is
                                   // computed or means "off"; empty: default_value
  std::string doc = {};            // one line; Markdown backticks allowed
  std::vector<SettingAlias> old_flags = {};
  std::vector<SettingAlias> old_envs = {};
  unsigned tables = 1;             // bit mask: which documentation tables list it
};

// A setting's names as code holds them, whatever its type: for lists of
// settings of several types (SettingKey slices to it).
struct SettingName {
  std::string_view flag;      // "--io-threads"; empty: environment only
  std::string_view env = {};  // "REDUCER_IO_THREADS"; empty: flag only

  constexpr std::string_view name() const { return flag.empty() ? env : flag; }
};

// A setting as code reads it: its names and the type of its value. Explicit,
// so that a bare string cannot stand in for a key.
template <typename T>
struct SettingKey : SettingName {
  constexpr explicit SettingKey(std::string_view flag_name, std::string_view env_name = {})
      : SettingName{flag_name, env_name} {}
};

// The registry entry of `key`: its names from the key, the rest as in
// SettingInfo, in the same order.
inline SettingInfo Entry(const SettingName& key, std::string value_name, std::string default_value,
                         std::string default_doc, std::string doc, std::vector<SettingAlias> old_flags = {},
                         std::vector<SettingAlias> old_envs = {}, unsigned tables = 1) {
  return SettingInfo{std::string(key.flag), std::string(key.env), std::move(value_name), std::move(default_value),
                     std::move(default_doc), std::move(doc), std::move(old_flags), std::move(old_envs), tables};
}

// The entry of `key` in `registry` (by its flag or, environment only, its
// variable), for a front end to read or change its copy; aborts when absent
// (a programming error, like Settings::Get).
const SettingInfo& FindSetting(const std::vector<SettingInfo>& registry, const SettingName& key);
SettingInfo& FindSetting(std::vector<SettingInfo>& registry, const SettingName& key);

// getenv's contract: the value or nullptr.
using EnvLookup = std::function<const char*(const char* name)>;
// The process environment: the one place a program's settings read it.
EnvLookup ProcessEnv();

// One setting's text and where it came from.
struct SettingValue {
  std::string text;      // with an old name's bare unit appended
  std::string source;    // the flag or variable it came from; "default"
  bool is_default = true;
};

class Settings {
 public:
  // `given`: the flags that appeared on the command line (new and old
  // names) with their text.
  static Settings Resolve(const std::vector<SettingInfo>& registry,
                          const std::map<std::string, std::string>& given, const EnvLookup& env);

  // A setting's text and source. By key: the registry may hold it by its
  // flag or, environment only, by its variable (the plugin's registry holds
  // the client's settings so). By name: for names from a table. A setting
  // the registry lacks is a programming error (aborts).
  const SettingValue& Get(const SettingName& key) const;
  const SettingValue& Get(std::string_view name) const;
  bool IsSet(const SettingName& key) const { return !Get(key).is_default; }

  // Typed values; an error names the flag or variable the text came from
  // and the expected format, e.g. "REDUCER_OP_TIMEOUT: 'soon' is not a
  // duration (examples: 500ms, 30s, 2m)".
  StatusOr<int64_t> Int(const SettingKey<int64_t>& key, int64_t min, int64_t max) const;
  StatusOr<uint64_t> Size(const SettingKey<uint64_t>& key, uint64_t min, uint64_t max) const;
  StatusOr<std::chrono::milliseconds> Duration(const SettingKey<std::chrono::milliseconds>& key,
                                               std::chrono::milliseconds min, std::chrono::milliseconds max) const;
  StatusOr<std::string> OneOf(const SettingKey<std::string>& key, const std::vector<std::string>& choices) const;

  // One line per old name that was set, in registry order.
  const std::vector<std::string>& notices() const { return notices_; }

 private:
  const SettingValue* Find(std::string_view name) const;

  std::map<std::string, SettingValue, std::less<>> values_;
  std::vector<std::string> notices_;
};

// "| flag | environment | default | meaning |" for the settings whose
// `tables` has `table_bit`; old names are listed in the meaning column.
std::string SettingsMarkdownTable(const std::vector<SettingInfo>& registry, unsigned table_bit);

// The description for --help: doc without Markdown, the variable and the old
// names appended.
std::string SettingHelp(const SettingInfo& info);

}  // namespace rs
