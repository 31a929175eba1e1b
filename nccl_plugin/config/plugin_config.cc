#include "nccl_plugin/config/plugin_config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "client/client_settings.h"
#include "common/cluster_spec.h"
#include "common/units.h"
#include "protocol/auth.h"

namespace rs::plugin {
namespace {

constexpr std::chrono::milliseconds kMinTimeout{1};
using client::kMaxTimeout;

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

StatusOr<std::vector<client::Endpoint>> ReducersFromClusterSpec(const ClusterSpec& spec) {
  std::vector<client::Endpoint> out;
  const std::vector<std::string>* pool = spec.Pool(ClusterSpec::kReducerPool);
  if (pool == nullptr) return out;
  for (const std::string& entry : *pool) {
    // One address per entry: a comma inside would be two reducers in one.
    StatusOr<std::vector<client::Endpoint>> ep = client::ParseEndpoints(entry);
    if (!ep.ok() || ep->size() != 1 || entry.find(',') != std::string::npos) {
      return Status(Code::kInvalidArgument,
                    "CLUSTER_SPEC workerpool2: '" + entry + "' is not HOST:PORT");
    }
    out.push_back(ep->front());
  }
  return out;
}

StatusOr<std::string> ReadJobToken(const Env& env) {
  if (env.IsSet(setting::kJobToken)) return env.Get(setting::kJobToken);
  if (!env.IsSet(setting::kJobTokenFile)) return std::string();
  // The reader reducerd and the other tools use: the same file, the same token.
  StatusOr<std::string> token = protocol::ReadTokenFile(env.Get(setting::kJobTokenFile));
  if (!token.ok()) return token.status().Prefixed("REDUCER_JOB_TOKEN_FILE");
  return token;
}

// REDUCER_LIVENESS_TIMEOUT: 0 turns liveness off; anything else must leave
// room for heartbeats.
StatusOr<std::chrono::milliseconds> LivenessFromEnv(const Env& env) {
  StatusOr<std::chrono::milliseconds> liveness =
      env.GetDuration(setting::kLivenessTimeout, std::chrono::milliseconds(0), kMaxTimeout);
  if (!liveness.ok()) return liveness.status();
  if (liveness->count() != 0 && *liveness < client::kMinLivenessTimeout) {
    return Status(Code::kInvalidArgument, "REDUCER_LIVENESS_TIMEOUT=" + env.Get(setting::kLivenessTimeout) +
                                              " must be 0 (off) or at least 100ms");
  }
  return liveness;
}

StatusOr<P2pConfig> P2pConfigFromEnv(const Env& env) {
  P2pConfig cfg;
  if (env.IsSet(setting::kSocketIfname)) {
    cfg.ifname_spec = env.Get(setting::kSocketIfname);
    cfg.ifname_source = std::string(setting::kSocketIfname.env);
  } else if (env.IsSet(setting::kNcclSocketIfname)) {
    cfg.ifname_spec = env.Get(setting::kNcclSocketIfname);
    cfg.ifname_source = std::string(setting::kNcclSocketIfname.env);
  }
  StatusOr<int64_t> threads = env.GetInt(setting::kSocketThreads, 1, 16);
  if (!threads.ok()) return threads.status();
  StatusOr<int64_t> socks = env.GetInt(setting::kSocksPerThread, 1, 16);
  if (!socks.ok()) return socks.status();
  if (*threads * *socks > 64) {
    return Status(Code::kInvalidArgument, "REDUCER_SOCKET_NTHREADS x REDUCER_NSOCKS_PERTHREAD = " +
                                              std::to_string(*threads * *socks) + " exceeds 64 sockets");
  }
  StatusOr<std::chrono::milliseconds> connect = env.GetDuration(setting::kConnectTimeout, kMinTimeout, kMaxTimeout);
  if (!connect.ok()) return connect.status();
  StatusOr<std::chrono::milliseconds> liveness = LivenessFromEnv(env);
  if (!liveness.ok()) return liveness.status();
  cfg.threads = static_cast<int>(*threads);
  cfg.socks_per_thread = static_cast<int>(*socks);
  cfg.connect_timeout = *connect;
  cfg.liveness_timeout = *liveness;
  // The same two settings as CollNet's client reads, through the same readers.
  client::ClientOptions tuned;
  RS_RETURN_IF_ERROR(client::ApplyClientSetting(env.settings(), setting::kTcpCongestion, &tuned));
  RS_RETURN_IF_ERROR(client::ApplyClientSetting(env.settings(), setting::kTcpRtoMin, &tuned));
  cfg.tcp.congestion = tuned.tcp.congestion;
  cfg.tcp.rto_min = tuned.tcp.rto_min;
  if (env.IsSet(setting::kNicSpeed)) {
    StatusOr<int> mbps = ParseLinkSpeedMbps(setting::kNicSpeed.env, env.Get(setting::kNicSpeed));
    if (!mbps.ok()) return mbps.status();
    cfg.nic_speed_mbps = *mbps;
  }
  return cfg;
}

StatusOr<int> ParseLinkSpeedMbps(std::string_view name, std::string_view text) {
  const std::string t(Trim(text));
  const auto bad = [&](const std::string& why) {
    return Status(Code::kInvalidArgument, std::string(name) + ": '" + t + "' " + why);
  };
  char* end = nullptr;
  const double value = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) return bad("is not a link speed (examples: 800Mbit, 25Gbit, 100Gbit)");
  std::string unit(Trim(std::string_view(end)));
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.size() > 2 && unit.compare(unit.size() - 2, 2, "/s") == 0) unit.resize(unit.size() - 2);
  double mbps_per_unit = 0;
  if (unit == "mbit" || unit == "mbps") mbps_per_unit = 1;
  if (unit == "gbit" || unit == "gbps") mbps_per_unit = 1e3;
  if (unit == "tbit" || unit == "tbps") mbps_per_unit = 1e6;
  if (unit.empty()) return bad("has no unit (examples: 800Mbit, 25Gbit)");
  if (mbps_per_unit == 0) return bad("has an unknown unit (Mbit, Gbit or Tbit)");
  const double mbps = std::round(value * mbps_per_unit);
  if (!(mbps >= 1) || mbps > INT_MAX) return bad("is outside [1Mbit, 2147Tbit]");
  return static_cast<int>(mbps);
}

NcclCollNetSettings NcclCollNetSettingsFromEnv(const Env& env) {
  NcclCollNetSettings out;
  // NCCL reads both with strtol/strtoll and base 0 (init.cc, misc/param.cc):
  // "0x1" is 1, "1abc" is 1, "yes" is 0.
  if (env.IsSet(setting::kNcclCollNetEnable)) {
    out.enable_text = env.Get(setting::kNcclCollNetEnable);
    out.enabled = std::strtol(out.enable_text.c_str(), nullptr, 0) == 1;
  }
  const std::string threshold = env.Get(setting::kNcclCollNetNodeThreshold);
  errno = 0;
  const long long value = std::strtoll(threshold.c_str(), nullptr, 0);
  if (errno == 0 && value >= INT_MIN && value <= INT_MAX) out.node_threshold = static_cast<int>(value);
  out.algo = env.Get(setting::kNcclAlgo);
  out.algo_forces_collnet = AlgoForcesCollNet(out.algo);
  out.tuner_plugin = env.Get(setting::kNcclTunerPlugin);
  return out;
}

bool AlgoForcesCollNet(std::string_view value) {
  std::string lower;
  for (char c : value) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // Each ';'-separated part is "list" (every collective) or "func:list".
  size_t pos = 0;
  while (pos <= lower.size()) {
    const size_t end = std::min(lower.find(';', pos), lower.size());
    std::string part = lower.substr(pos, end - pos);
    pos = end + 1;
    const size_t colon = part.find(':');
    if (colon != std::string::npos) {
      if (part.substr(0, colon) != "allreduce") continue;
      part = part.substr(colon + 1);
    }
    if (!part.empty() && part[0] == '^') continue;  // an exclusion list
    if (part.find("collnet") != std::string::npos) return true;
  }
  return false;
}

StatusOr<CollNetConfig> CollNetConfigFromEnv(const Env& env) {
  CollNetConfig cfg;
  if (env.IsSet(setting::kReducerAddrs)) {
    StatusOr<std::vector<client::Endpoint>> list = client::ParseEndpoints(env.Get(setting::kReducerAddrs));
    if (!list.ok()) return list.status().Prefixed("REDUCER_ADDRS");
    cfg.reducers = std::move(list).value();
    cfg.source = "REDUCER_ADDRS";
  } else if (env.IsSet(setting::kClusterSpec)) {
    // A spec we cannot read at all says nothing about reducers (Vertex sets
    // it on every job): CollNet is off, with a warning. A malformed
    // workerpool2 entry does say someone meant reducers: that one fails.
    StatusOr<ClusterSpec> spec = ClusterSpec::Parse(env.Get(setting::kClusterSpec));
    if (!spec.ok()) {
      cfg.off_reason = spec.status().message();
      cfg.off_is_warning = true;
      return cfg;
    }
    StatusOr<std::vector<client::Endpoint>> list = ReducersFromClusterSpec(*spec);
    if (!list.ok()) return list.status();
    cfg.reducers = std::move(list).value();
    cfg.source = "CLUSTER_SPEC workerpool2";
    if (cfg.reducers.empty()) cfg.off_reason = "CLUSTER_SPEC lists no workerpool2 (reducer) replicas";
  } else {
    cfg.off_reason = "neither REDUCER_ADDRS nor CLUSTER_SPEC is set";
  }
  if (cfg.reducers.empty()) return cfg;

  StatusOr<std::string> token = ReadJobToken(env);
  if (!token.ok()) return token.status();
  cfg.job_token = std::move(token).value();
  cfg.client.reducers = cfg.reducers;
  cfg.client.job_token = cfg.job_token;
  RS_RETURN_IF_ERROR(client::ApplyClientSettings(env.settings(), &cfg.client, cfg.source));
  cfg.trace_dir = env.Get(setting::kCollNetTrace);
  return cfg;
}

}  // namespace rs::plugin
