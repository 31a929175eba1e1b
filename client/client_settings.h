// The client's transport and reliability settings, listed once: streams,
// piece sizes, send window and write slice, I/O threads, the timeouts
// (operation, connect, liveness), CRC, the wire type, failover, the fewest
// reducers and retention. Each is data: its flag and variable, value name,
// default, help and old names, and how its value lands in ClientOptions.
// Every front end puts this list in its own registry (common/settings.h):
// reducer-bench and rs-train as flags with variables, the NCCL plugin and
// the Python package as variables; so a setting has the same name, default,
// bounds and message everywhere. What only one front end has (a default of
// its own, an old name it kept) it adds to its copy (FindSetting).
//
// Thread-safety: the list is immutable after the first call; Apply* are
// pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "common/settings.h"
#include "common/status.h"

namespace rs::client {

// How a front end's registry names a setting: by flag (programs with a
// command line) or by variable (the plugin and the Python package, whose
// registries are environment only).
enum class SettingKey { kFlag, kVariable };

struct ClientSetting {
  SettingInfo info;  // flag, variable, value name, default, help, old names
  // Reads the value under `name` (the flag or the variable, see SettingKey)
  // into `o`. An error names where the value came from and what it expects.
  Status (*apply)(const Settings& s, std::string_view name, ClientOptions* o);
};

const std::vector<ClientSetting>& ClientSettings();

// The list as registry entries, `doc_prefix` before each help text ("CPU
// backend: " for rs-train), for a front end to append to its registry.
std::vector<SettingInfo> ClientSettingInfos(std::string_view doc_prefix = "");

// The entry for a flag or variable in `registry`; aborts when absent (a
// programming error, like Settings::Get).
SettingInfo& FindSetting(std::vector<SettingInfo>& registry, std::string_view name);

// Reads every shared setting from `s` (resolved from a registry holding
// ClientSettingInfos) into `o`. Set `o->reducers` first: REDUCER_MIN_REDUCERS
// may not exceed their number (unchecked while the list is empty), and
// `reducers_source` names where they came from in that error.
Status ApplyClientSettings(const Settings& s, SettingKey key, ClientOptions* o,
                           std::string_view reducers_source = "");

}  // namespace rs::client
