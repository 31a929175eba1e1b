#include "tools/reducerctl/doctor_checks.h"

#include <strings.h>

#include <algorithm>

namespace rs::reducerctl {
namespace {

// Our plugin's net table name (nccl_plugin/abi/abi_support.h, kPluginName).
constexpr const char* kOurPluginName = "Reducer";
constexpr const char* kPluginSetup =
    "export NCCL_NET_PLUGIN=reducer with libnccl-net-reducer.so on the loader's path (LD_LIBRARY_PATH), or "
    "LD_PRELOAD=/path/to/libnccl-net-reducer.so";

std::string Trim(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

std::vector<std::string> Split(const std::string& s, char separator) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t end = std::min(s.find(separator, pos), s.size());
    parts.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return parts;
}

std::string Join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

bool SameName(const std::string& a, const std::string& b) { return ::strcasecmp(a.c_str(), b.c_str()) == 0; }

// The algorithm names NCCL_ALGO knows for all-reduce in this release.
std::vector<std::string> AlgorithmNames(const plugin::NcclRelease& release) {
  std::vector<std::string> names = {"Tree", "Ring"};
  names.insert(names.end(), release.collnet_algos.begin(), release.collnet_algos.end());
  if (release.first_minor >= 14) names.insert(names.end(), {"NVLS", "NVLSTree", "PAT"});
  return names;
}

// The part of NCCL_ALGO that applies to all-reduce; nullopt: none does.
std::optional<std::string> AllReduceList(const std::string& value, const plugin::NcclRelease& release) {
  if (!release.algo_per_collective || value.find(':') == std::string::npos) return value;
  std::optional<std::string> list;
  for (const std::string& entry : Split(value, ';')) {
    const size_t colon = entry.find(':');
    if (colon == std::string::npos) {
      if (!Trim(entry).empty()) list = entry;  // for every collective
      continue;
    }
    for (const std::string& collective : Split(entry.substr(0, colon), ',')) {
      if (SameName(Trim(collective), "allreduce")) list = entry.substr(colon + 1);
    }
  }
  return list;
}

std::string Describe(const std::optional<std::string>& value, const char* name) {
  return value.has_value() ? std::string(name) + "=" + *value : std::string(name) + " unset";
}

}  // namespace

const char* CheckLevelName(CheckLevel level) {
  switch (level) {
    case CheckLevel::kOk: return "OK";
    case CheckLevel::kNote: return "NOTE";
    case CheckLevel::kWarn: return "WARN";
    case CheckLevel::kFail: return "FAIL";
  }
  return "?";
}

AlgoAllowance ReadNcclAlgo(const std::string& value, const plugin::NcclRelease& release) {
  AlgoAllowance out;
  const std::optional<std::string> list = AllReduceList(value, release);
  if (!list.has_value()) return out;  // all-reduce keeps every algorithm
  std::string text = Trim(*list);
  const bool exclude = !text.empty() && text[0] == '^';
  if (exclude) text = text.substr(1);
  const std::vector<std::string> names = AlgorithmNames(release);
  std::vector<bool> enabled(names.size(), exclude);
  for (const std::string& token : Split(text, ',')) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (SameName(Trim(token), names[i])) enabled[i] = !exclude;
    }
  }
  out.allows_collnet = false;
  bool others = false;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!enabled[i]) continue;
    const bool collnet = std::find(release.collnet_algos.begin(), release.collnet_algos.end(), names[i]) !=
                         release.collnet_algos.end();
    (collnet ? out.allows_collnet : others) = true;
  }
  out.only_collnet = out.allows_collnet && !others;
  return out;
}

Check NcclCheck(const StatusOr<plugin::NcclVersion>& nccl, const std::string& path,
                const plugin::NcclRelease* release) {
  Check c{CheckLevel::kOk, "NCCL", "", ""};
  if (!nccl.ok()) {
    c.level = CheckLevel::kFail;
    c.text = "no NCCL found (" + nccl.status().message() + "): the plugin cannot be checked against it";
    c.fix = "run this in the training image, or give --nccl PATH to the job's libnccl.so.2 (a pip-installed "
            "PyTorch keeps it in site-packages/nvidia/nccl/lib)";
    return c;
  }
  c.text = "NCCL " + nccl->ToString() + " (" + path + ")";
  if (release == nullptr) {
    c.level = CheckLevel::kFail;
    c.text += ": the plugin needs NCCL 2.12 or newer";
    c.fix = "a framework release with NCCL 2.12 or newer (docs/guide/frameworks.md)";
  } else if (nccl->minor > release->last_minor) {
    c.level = CheckLevel::kWarn;
    c.text += ": newer than the releases this reducerctl knows (up to 2." + std::to_string(release->last_minor) +
              "); judged as 2." + std::to_string(release->last_minor);
  }
  return c;
}

Check PluginCheck(const NetPluginSearch& search, const NcclSettings& settings, const plugin::NcclRelease& rules,
                  bool from_flag) {
  Check c{CheckLevel::kOk, "plugin", "", ""};
  std::string how = from_flag ? "--plugin; NCCL's own search not followed"
                              : Describe(settings.net_plugin, "NCCL_NET_PLUGIN");
  if (!settings.preloaded.empty()) how += ", LD_PRELOAD";
  if (search.library == nullptr) {
    c.level = CheckLevel::kFail;
    c.text = "NCCL would load no network plugin (" + how + "): " + Join(search.problems, "; ");
    const bool path_given = settings.net_plugin.has_value() && settings.net_plugin->find('/') != std::string::npos;
    if (path_given && !rules.net_plugin_as_given) {
      c.fix = "this NCCL takes a plugin name only: export NCCL_NET_PLUGIN=reducer and put the library's folder "
              "on LD_LIBRARY_PATH";
    } else if (!settings.preloaded.empty() && settings.net_plugin.has_value()) {
      c.fix = "unset NCCL_NET_PLUGIN (the preloaded plugin sets it), or export NCCL_NET_PLUGIN=reducer";
    } else {
      c.fix = kPluginSetup;
    }
    return c;
  }
  const PluginTables& t = search.tables;
  c.text = search.library->path() + " (" + how + "): net " + plugin::TableList(t.net) + ", CollNet " +
           plugin::TableList(t.collnet) + ", tuner " + plugin::TableList(t.tuner);
  if (t.net_name != kOurPluginName) {
    c.level = CheckLevel::kFail;
    c.text = "NCCL loads the '" + t.net_name + "' plugin, not the reducers': " + c.text;
    c.fix = "NCCL takes CollNet only from the library that gives it the network: " + std::string(kPluginSetup);
  }
  return c;
}

Check TablesCheck(const PluginTables& tables, const plugin::NcclVersion& nccl, const plugin::NcclRelease& release) {
  Check c{CheckLevel::kOk, "tables", "", ""};
  const int net = NewestAccepted(tables.net, release);
  const int coll = NewestAccepted(tables.collnet, release);
  const std::string accepts = plugin::TableRange(release.net_newest, release.net_oldest);
  if (net == 0 || coll == 0) {
    c.level = CheckLevel::kFail;
    c.text = "NCCL " + nccl.ToString() + " accepts " + accepts + "; the plugin exports no " +
             (net == 0 ? "net" : "CollNet") + " table among them (net " + plugin::TableList(tables.net) +
             ", CollNet " + plugin::TableList(tables.collnet) + ")";
    c.fix = "a plugin release built for NCCL " + std::to_string(nccl.major) + "." + std::to_string(nccl.minor) +
            " (docs/guide/frameworks.md lists the tables each NCCL takes)";
    return c;
  }
  c.text = "NCCL " + nccl.ToString() + " takes ncclNetPlugin_v" + std::to_string(net) + " and ncclCollNetPlugin_v" +
           std::to_string(coll);
  return c;
}

Check CollNetEnableCheck(const plugin::NcclCollNetSettings& collnet) {
  Check c{CheckLevel::kOk, "CollNet", "NCCL_COLLNET_ENABLE=" + collnet.enable_text, ""};
  if (!collnet.enabled) {
    c.level = CheckLevel::kFail;
    c.text = collnet.enable_text.empty() ? "NCCL_COLLNET_ENABLE is unset: NCCL leaves CollNet, and so the reducers, off"
                                         : "NCCL_COLLNET_ENABLE=" + collnet.enable_text +
                                               " leaves CollNet, and so the reducers, off";
    c.fix = "export NCCL_COLLNET_ENABLE=1";
  }
  return c;
}

Check AlgorithmCheck(const NcclSettings& settings, const plugin::NcclVersion& nccl,
                     const plugin::NcclRelease& release, const TunerLookup& tuner, const PluginTables& tables,
                     const std::string& plugin_path) {
  Check c{CheckLevel::kOk, "algorithm", "", ""};
  const std::string force = "export NCCL_ALGO=" + release.force_collnet + " (every all-reduce to the reducers)";
  const bool tuner_ours = tuner.found && tuner.in_net_plugin;
  std::string prefix;
  if (settings.algo.has_value()) {
    const AlgoAllowance allow = ReadNcclAlgo(*settings.algo, release);
    if (!allow.allows_collnet) {
      c.level = CheckLevel::kFail;
      c.text = "NCCL_ALGO=" + *settings.algo + " leaves all-reduce no CollNet algorithm";
      c.fix = tuner_ours ? "unset NCCL_ALGO (the plugin's tuner chooses), or " + force : force;
      return c;
    }
    if (allow.only_collnet) {
      c.text = "NCCL_ALGO=" + *settings.algo + " sends every all-reduce to CollNet (the tuner is not asked)";
      return c;
    }
    prefix = "NCCL_ALGO=" + *settings.algo + " leaves the choice to the tuner: ";
  }
  const std::string release_name = "NCCL " + std::to_string(nccl.major) + "." + std::to_string(nccl.minor);
  if (tuner_ours) {
    c.text = prefix + release_name + " asks the plugin's tuner (ncclTunerPlugin_v" + std::to_string(tuner.version) +
             "), which sends all-reduces to the reducers where its cost model finds them faster";
    return c;
  }
  c.level = CheckLevel::kFail;
  if (release.tuner_search == plugin::TunerSearch::kNone) {
    c.text = prefix + release_name + " has no tuner interface: it uses CollNet only when NCCL_ALGO forces it";
    c.fix = force;
    return c;
  }
  if (tuner.found) {
    c.text = prefix + release_name + " asks the tuner in " + tuner.library + " (ncclTunerPlugin_v" +
             std::to_string(tuner.version) + "), not the plugin's: CollNet only if that tuner chooses it";
    c.fix = (release.tuner_search == plugin::TunerSearch::kTunerLibraryThenNet ? "unset NCCL_TUNER_PLUGIN, or "
                                                                                : "") +
            force;
    return c;
  }
  c.text = prefix + release_name + " finds no tuner (" + tuner.problem + "); without one it never chooses CollNet";
  if (plugin_path.empty()) {
    c.fix = "load the plugin (above): its tuner answers, or " + force;
    return c;
  }
  const bool exports_one = std::any_of(release.tuners.begin(), release.tuners.end(), [&](int v) {
    return std::find(tables.tuner.begin(), tables.tuner.end(), v) != tables.tuner.end();
  });
  if (exports_one && release.tuner_search == plugin::TunerSearch::kTunerLibraryOnly) {
    c.fix = "export NCCL_TUNER_PLUGIN=" + plugin_path + " (" + release_name +
            " looks for a tuner only there), or " + force;
  } else if (exports_one) {
    c.fix = "unset NCCL_TUNER_PLUGIN (the plugin's own tuner then answers), or " + force;
  } else {
    c.fix = "a plugin that exports ncclTunerPlugin_v" + std::to_string(release.tuners.front()) + ", or " + force;
  }
  return c;
}

Check NodesCheck(const plugin::NcclCollNetSettings& collnet) {
  return Check{CheckLevel::kNote, "nodes",
               "CollNet needs at least " + std::to_string(collnet.node_threshold) +
                   " nodes (NCCL_COLLNET_NODE_THRESHOLD); a job on fewer runs on NCCL's own algorithms",
               ""};
}

Check ReducerSettingsCheck(const StatusOr<plugin::CollNetConfig>& config, const plugin::Env& env) {
  Check c{CheckLevel::kOk, "reducers", "", ""};
  if (!config.ok()) {
    c.level = CheckLevel::kFail;
    c.text = config.status().message();
    c.fix = "correct that setting (docs/reference/settings.md)";
    return c;
  }
  if (config->reducers.empty()) {
    c.level = CheckLevel::kFail;
    c.text = "no reducers configured: " + config->off_reason;
    c.fix = "export REDUCER_ADDRS=host:port,... (the reducers' data-plane addresses), or run under Vertex AI "
            "with the reducers as workerpool2";
    return c;
  }
  c.text = std::to_string(config->reducers.size()) + (config->reducers.size() == 1 ? " reducer" : " reducers") +
           " from " + config->source + "; ";
  if (config->job_token.empty()) {
    c.text += "no job token";
  } else {
    const SettingName& key =
        env.IsSet(plugin::setting::kJobToken) ? plugin::setting::kJobToken : plugin::setting::kJobTokenFile;
    c.text += "job token from " + env.Source(key);
  }
  return c;
}

Check ReducerCheck(const client::Endpoint& endpoint, const StatusOr<client::ProbeResult>& probe,
                   const plugin::CollNetConfig& config) {
  Check c{CheckLevel::kOk, "reducer " + endpoint.ToString(), "", ""};
  const std::string list = config.source.empty() ? "REDUCER_ADDRS" : config.source;
  if (probe.ok()) {
    const std::string ms = " (" + std::to_string(probe->elapsed.count()) + " ms)";
    if (probe->token_checked) {
      c.text = std::string(config.client.tls ? "answers over TLS (REDUCER_TLS=1) and accepts the job token"
                                             : "answers and accepts the job token") +
               ms;
    } else if (config.job_token.empty()) {
      c.text = "answers; neither side uses a job token" + ms;
    } else {
      c.level = CheckLevel::kWarn;
      c.text = "answers, but does not check job tokens: any process that reaches it may join its sessions" + ms;
      c.fix = "start reducerd with --job-token-file holding the workers' token";
    }
    return c;
  }
  c.level = CheckLevel::kFail;
  const Status& st = probe.status();
  const std::string prefix = "reducer " + endpoint.ToString() + ": ";
  c.text = st.message().rfind(prefix, 0) == 0 ? st.message().substr(prefix.size()) : st.message();
  switch (st.code()) {
    case Code::kIo:
      c.fix = "start reducerd there, or correct " + list;
      break;
    case Code::kTimeout:
      c.fix = "check the address in " + list + ", that the reducer's host is up, and that its port is open to "
              "the workers";
      break;
    case Code::kAuth:
      if (c.text.find("REDUCER_TLS=1") != std::string::npos) {
        c.fix = "export REDUCER_TLS=1 (the reducer has --tls)";
        break;
      }
      if (c.text.find("no TLS on its data plane") != std::string::npos) {
        c.fix = "start every reducerd with --tls 1, or unset REDUCER_TLS";
        break;
      }
      c.fix = config.job_token.empty()
                  ? "export REDUCER_JOB_TOKEN_FILE=<a file holding the reducers' token>"
                  : "REDUCER_JOB_TOKEN_FILE (or REDUCER_JOB_TOKEN) must hold the same token as reducerd's "
                    "--job-token-file";
      break;
    case Code::kVersion:
      c.fix = "use the plugin and reducerd of the same release";
      break;
    default:
      c.fix = "see the reducer's log";
      break;
  }
  return c;
}

Verdict Decide(const std::vector<Check>& checks) {
  int fails = 0;
  const Check* first = nullptr;
  for (const Check& c : checks) {
    if (c.level != CheckLevel::kFail) continue;
    ++fails;
    if (first == nullptr) first = &c;
  }
  if (first == nullptr) return Verdict{true, "reducers: WILL be used"};
  std::string line = "reducers: will NOT be used: " + first->name + ": " + first->text;
  if (fails > 1) line += " (and " + std::to_string(fails - 1) + " more FAIL)";
  return Verdict{false, line};
}

}  // namespace rs::reducerctl
