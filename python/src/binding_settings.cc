#include "python/src/binding_settings.h"

#include <array>
#include <set>

#include "nccl_plugin/config/env_registry.h"
#include "nccl_plugin/config/plugin_config.h"
#include "protocol/auth.h"
#include "protocol/wire.h"

namespace rs::python {
namespace {

namespace ps = plugin::setting;

// The plugin's variables that configure the client (the rest are its
// point-to-point transport's and NCCL's own). A variable added to the
// plugin's registry reaches Python once it is listed here.
constexpr std::array<SettingName, 22> kClientKeys = {
    ps::kReducerAddrs,    ps::kClusterSpec, ps::kJobToken,  ps::kJobTokenFile,   ps::kStreams,
    ps::kIoThreads,       ps::kMaxPiece,    ps::kMinPiece,  ps::kSendWindow,     ps::kWriteSlice,
    ps::kOpTimeout,       ps::kConnectTimeout, ps::kLivenessTimeout, ps::kCrc,   ps::kTls,
    ps::kWireDtype,       ps::kFailover,    ps::kMinReducers, ps::kRetention,    ps::kTcpCongestion,
    ps::kTcpRtoMin,       ps::kTcpPacing,
};

// The package's own settings: what NCCL gives the plugin and the package
// must be told.
namespace setting {
inline constexpr SettingKey<int64_t> kRank{"", "RANK"};
inline constexpr SettingKey<int64_t> kWorldSize{"", "WORLD_SIZE"};
inline constexpr SettingKey<std::string> kSession{"", "REDUCER_SESSION"};
}  // namespace setting

// Pairs where one given by argument hides the other's variable.
const std::vector<std::set<std::string>>& Alternatives() {
  static const std::vector<std::set<std::string>> kPairs = {
      {"REDUCER_ADDRS", "CLUSTER_SPEC"},
      {"REDUCER_JOB_TOKEN", "REDUCER_JOB_TOKEN_FILE"},
  };
  return kPairs;
}

EnvLookup Overlay(const std::map<std::string, std::string>& given, const EnvLookup& env) {
  return [&given, env](const char* name) -> const char* {
    if (auto it = given.find(name); it != given.end()) return it->second.c_str();
    for (const std::set<std::string>& pair : Alternatives()) {
      if (!pair.count(name)) continue;
      for (const std::string& other : pair) {
        if (given.count(other)) return nullptr;
      }
    }
    return env(name);
  };
}

Status RankAndWorld(const Settings& own, client::ClientOptions* o) {
  for (const auto& [key, argument] :
       {std::pair{setting::kRank, "rank"}, std::pair{setting::kWorldSize, "world_size"}}) {
    if (!own.IsSet(key)) {
      return Status(Code::kInvalidArgument,
                    std::string(key.env) + " is not set: pass " + argument + "=... or set it (torchrun does)");
    }
  }
  StatusOr<int64_t> world = own.Int(setting::kWorldSize, 1, protocol::kMaxWorld);
  if (!world.ok()) return world.status();
  StatusOr<int64_t> rank = own.Int(setting::kRank, 0, protocol::kMaxWorld - 1);
  if (!rank.ok()) return rank.status();
  if (*rank >= *world) {
    return Status(Code::kInvalidArgument, "RANK=" + std::to_string(*rank) + " is not below WORLD_SIZE=" +
                                              std::to_string(*world));
  }
  o->rank = static_cast<uint32_t>(*rank);
  o->world = static_cast<uint32_t>(*world);
  return Status::Ok();
}

}  // namespace

const std::vector<SettingInfo>& OwnRegistry() {
  static const std::vector<SettingInfo> kRegistry = {
      Entry(setting::kRank, "N", "", "", "This process's rank, 0 to WORLD_SIZE-1 (set by torchrun)"),
      Entry(setting::kWorldSize, "N", "", "", "Number of ranks (set by torchrun)"),
      Entry(setting::kSession, "NAME", "", "",
            "A name every rank of this session shares and no other running session uses; the session id is "
            "derived from it (reduction_server.torch.ReducerState makes one up on rank 0 when unset)"),
  };
  return kRegistry;
}

const std::vector<BindingVariable>& BindingVariables() {
  static const std::vector<BindingVariable> kVars = [] {
    std::vector<BindingVariable> out;
    for (const SettingName& key : kClientKeys) {
      const SettingInfo& info = FindSetting(plugin::PluginSettings(), key);
      out.push_back({info.env, info.default_value, info.doc});
    }
    for (const SettingInfo& info : OwnRegistry()) out.push_back({info.env, info.default_value, info.doc});
    return out;
  }();
  return kVars;
}

StatusOr<BindingOptions> OptionsFromSettings(const std::map<std::string, std::string>& given,
                                             const EnvLookup& env) {
  std::set<std::string> known;
  for (const BindingVariable& v : BindingVariables()) known.insert(v.name);
  for (const auto& [name, value] : given) {
    if (!known.count(name)) return Status(Code::kInvalidArgument, "'" + name + "' is not a client setting");
  }
  const EnvLookup lookup = Overlay(given, env);
  const plugin::Env plugin_env = plugin::Env::FromLookup(lookup);
  StatusOr<plugin::CollNetConfig> cfg = plugin::CollNetConfigFromEnv(plugin_env);
  if (!cfg.ok()) return cfg.status();
  if (cfg->reducers.empty()) {
    return Status(Code::kInvalidArgument,
                  "no reducers: " + cfg->off_reason + " (pass addrs=\"host:port,...\" or set REDUCER_ADDRS)");
  }
  BindingOptions out;
  out.client = cfg->client;  // reducers, token and the shared settings (client/client_settings.h)
  client::ClientOptions& o = out.client;
  out.reducers_source = cfg->source;

  const Settings own = Settings::Resolve(OwnRegistry(), {}, lookup);
  RS_RETURN_IF_ERROR(RankAndWorld(own, &o));
  if (!own.IsSet(setting::kSession)) {
    return Status(Code::kInvalidArgument,
                  "REDUCER_SESSION is not set: pass session=\"NAME\" (the same on every rank, unique among "
                  "running sessions) or set it");
  }
  out.session_name = own.Get(setting::kSession).text;
  o.session = protocol::SessionIdFromName(out.session_name);
  return out;
}

}  // namespace rs::python
