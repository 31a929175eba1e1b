// The judgements of `reducerctl doctor`, as pure functions from what it
// found (libraries, tables, settings, reducers' answers) to one checklist
// line each: OK, NOTE, WARN or FAIL, what was seen, and for a problem the
// exact setting to change. A FAIL means NCCL will not use the reducers; the
// verdict names the first one. The facts per NCCL release are
// nccl_plugin/nccl_releases.h's.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "client/reducer_probe.h"
#include "nccl_plugin/config/plugin_config.h"
#include "nccl_plugin/nccl_releases.h"
#include "tools/reducerctl/doctor_libraries.h"

namespace rs::reducerctl {

enum class CheckLevel { kOk, kNote, kWarn, kFail };
const char* CheckLevelName(CheckLevel level);  // "OK", "NOTE", "WARN", "FAIL"

struct Check {
  CheckLevel level = CheckLevel::kOk;
  std::string name;  // "plugin", "NCCL", "reducer 10.0.0.5:7450", ...
  std::string text;  // what was found
  std::string fix;   // what to change; empty when nothing needs to
};

// What NCCL_ALGO leaves all-reduce, as `release` reads it.
struct AlgoAllowance {
  bool allows_collnet = true;  // some CollNet algorithm stays enabled
  bool only_collnet = false;   // nothing else does: the tuner is not asked
};
AlgoAllowance ReadNcclAlgo(const std::string& value, const plugin::NcclRelease& release);

// The NCCL variables the doctor reads, as NCCL will see them (nullopt: unset).
struct NcclSettings {
  std::optional<std::string> net_plugin;    // NCCL_NET_PLUGIN
  std::optional<std::string> tuner_plugin;  // NCCL_TUNER_PLUGIN
  std::optional<std::string> algo;          // NCCL_ALGO
  plugin::NcclCollNetSettings collnet;      // NCCL_COLLNET_ENABLE, NCCL_COLLNET_NODE_THRESHOLD
  std::vector<std::string> preloaded;       // LD_PRELOAD entries that are NCCL net plugins
};

// The NCCL library, or why none was found (`nccl` holds the error).
Check NcclCheck(const StatusOr<plugin::NcclVersion>& nccl, const std::string& path,
                const plugin::NcclRelease* release);

// The plugin NCCL would load. `from_flag`: --plugin named it, NCCL's own
// search was not followed.
Check PluginCheck(const NetPluginSearch& search, const NcclSettings& settings, const plugin::NcclRelease& rules,
                  bool from_flag);

// The net and CollNet tables the release takes from the plugin.
Check TablesCheck(const PluginTables& tables, const plugin::NcclVersion& nccl, const plugin::NcclRelease& release);

Check CollNetEnableCheck(const plugin::NcclCollNetSettings& collnet);

// Whether NCCL will choose CollNet for all-reduce: NCCL_ALGO, else the
// tuner (which must be the plugin's). `plugin_path` names the plugin in
// fixes; empty when NCCL loads none.
Check AlgorithmCheck(const NcclSettings& settings, const plugin::NcclVersion& nccl,
                     const plugin::NcclRelease& release, const TunerLookup& tuner, const PluginTables& tables,
                     const std::string& plugin_path);

Check NodesCheck(const plugin::NcclCollNetSettings& collnet);

// The reducers and token the plugin's settings give (plugin_config.h).
Check ReducerSettingsCheck(const StatusOr<plugin::CollNetConfig>& config, const plugin::Env& env);

// One reducer's answer to the probe.
Check ReducerCheck(const client::Endpoint& endpoint, const StatusOr<client::ProbeResult>& probe,
                   const plugin::CollNetConfig& config);

struct Verdict {
  bool will_be_used = false;
  std::string line;  // "reducers: WILL be used" / "reducers: will NOT be used: <reason>"
};
Verdict Decide(const std::vector<Check>& checks);

}  // namespace rs::reducerctl
