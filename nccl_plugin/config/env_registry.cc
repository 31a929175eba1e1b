#include "nccl_plugin/config/env_registry.h"

#include <cstdlib>
#include <deque>
#include <string>

#include "client/client_settings.h"

namespace rs::plugin {
namespace {

constexpr std::array<EnvVarInfo, kNumEnvVars> kVars = {{
    {EnvKey::kReducerAddrs, "REDUCER_ADDRS", "",
     "Reducers as `host:port,host:port` (`[v6addr]:port` for IPv6); an item may hold one range, "
     "`name-{0..3}.svc:7450`, for each index. Overrides CLUSTER_SPEC."},
    {EnvKey::kClusterSpec, "CLUSTER_SPEC", "",
     "Vertex AI cluster JSON (set by Vertex); reducers are the `workerpool2` entries. Used when REDUCER_ADDRS is unset."},
    {EnvKey::kJobToken, "REDUCER_JOB_TOKEN", "",
     "Shared job token proving to the reducers that this worker belongs to the job. Never logged."},
    {EnvKey::kJobTokenFile, "REDUCER_JOB_TOKEN_FILE", "",
     "File holding the job token (blanks around it ignored); used when REDUCER_JOB_TOKEN is unset."},
    {EnvKey::kSocketIfname, "REDUCER_SOCKET_IFNAME", "",
     "Interfaces for point-to-point traffic, NCCL syntax: `eth0,eth1` prefixes, `=eth0` exact, `^docker` excluded."},
    {EnvKey::kNcclSocketIfname, "NCCL_SOCKET_IFNAME", "",
     "NCCL's own variable, honoured when REDUCER_SOCKET_IFNAME is unset. Neither set: the first non-loopback interface that is up (`docker*` skipped), else loopback."},
    {EnvKey::kSocketThreads, "REDUCER_SOCKET_NTHREADS", "2",
     "Helper threads per point-to-point connection (1-16)."},
    {EnvKey::kSocksPerThread, "REDUCER_NSOCKS_PERTHREAD", "2",
     "Data sockets per helper thread (1-16); large messages are split across all sockets of a connection (at most 64)."},
    {EnvKey::kNicSpeed, "REDUCER_NIC_SPEED", "",
     "The speed the plugin reports to NCCL for its network devices, with its unit (`800Mbit`, `25Gbit`). Unset: "
     "the interface's own (`/sys/class/net/IF/speed`), 10Gbit when it reports none. NCCL leaves CollNet (the "
     "reducers) off below 960Mbit, and the tuner's choice depends on it: must be equal on every node. When set, "
     "the CollNet client's automatic I/O threads follow it too."},
    // The client's settings: default, description and old name from
    // client/client_settings.h (Resolved below); here only what the plugin
    // adds to the description.
    {EnvKey::kStreams, "REDUCER_STREAMS", "", ""},
    {EnvKey::kIoThreads, "REDUCER_IO_THREADS", "", "One set per CollNet communicator; NCCL's info log "
     "(`NCCL_DEBUG=INFO`) has the automatic choice and why."},
    {EnvKey::kMaxPiece, "REDUCER_MAX_PIECE", "", ""},
    {EnvKey::kMinPiece, "REDUCER_MIN_PIECE", "", ""},
    {EnvKey::kSendWindow, "REDUCER_SEND_WINDOW", "", ""},
    {EnvKey::kWriteSlice, "REDUCER_WRITE_SLICE", "", ""},
    {EnvKey::kOpTimeout, "REDUCER_OP_TIMEOUT", "", ""},
    {EnvKey::kConnectTimeout, "REDUCER_CONNECT_TIMEOUT", "", "It also bounds point-to-point connection setup."},
    {EnvKey::kLivenessTimeout, "REDUCER_LIVENESS_TIMEOUT", "",
     "Point-to-point sockets get keepalive probes after half of it idle and a kernel timeout of twice it for "
     "unacknowledged data, so a dead peer or cut link fails NCCL's transfer."},
    {EnvKey::kCrc, "REDUCER_CRC", "", ""},
    {EnvKey::kTls, "REDUCER_TLS", "", "It covers the traffic to the reducers only: the point-to-point transport (NCCL's "
     "rings and trees) stays plain TCP, as NCCL's own socket transport is."},
    {EnvKey::kWireDtype, "REDUCER_WIRE_DTYPE", "", ""},
    {EnvKey::kFailover, "REDUCER_FAILOVER", "", ""},
    {EnvKey::kMinReducers, "REDUCER_MIN_REDUCERS", "", ""},
    {EnvKey::kRetention, "REDUCER_RETENTION", "", "Per communicator."},
    {EnvKey::kTcpCongestion, "REDUCER_TCP_CONGESTION", "", "The point-to-point sockets get the same."},
    {EnvKey::kTcpRtoMin, "REDUCER_TCP_RTO_MIN", "", "The point-to-point sockets get the same."},
    {EnvKey::kLog, "REDUCER_LOG", "info",
     "What the plugin writes to stderr itself, whatever NCCL_DEBUG says (NCCL prints nothing without it): `info`, "
     "one line saying which reducers carry which all-reduce sizes, plus every warning that the reducers will not "
     "carry the traffic configured for them, with its cause and fix; `warn`, the warnings only; `off`, nothing. "
     "NCCL's own log gets the same lines either way."},
    {EnvKey::kRequired, "REDUCER_REQUIRED", "0",
     "`1`: fail the job when the reducers will not be used (unreachable, refused, CollNet off, no tuner), with the "
     "cause, instead of training on with NCCL's own algorithms. `0`: run on, with a warning on stderr."},
    {EnvKey::kNcclCollNetEnable, "NCCL_COLLNET_ENABLE", "",
     "NCCL's own switch: NCCL uses CollNet, and so the reducers, only when it is `1`. The plugin warns when "
     "reducers are configured and it is not `1`. Preloaded (`LD_PRELOAD`), the library sets it to `1` where it "
     "is unset."},
    {EnvKey::kNcclAlgo, "NCCL_ALGO", "",
     "NCCL's own. Read to tell whether NCCL will use CollNet without the plugin's tuner (a value naming CollNet, "
     "e.g. `allreduce:collnetchain`, forces it)."},
    {EnvKey::kNcclTunerPlugin, "NCCL_TUNER_PLUGIN", "",
     "NCCL's own: the library NCCL takes its tuner from. Unset, NCCL 2.21 and later find the plugin's tuner in "
     "libnccl-net-reducer.so; NCCL 2.19 - 2.20 only here. Preloaded (`LD_PRELOAD`), the library sets it to "
     "`libnccl-net-reducer.so` where it is unset."},
    {EnvKey::kNcclCollNetNodeThreshold, "NCCL_COLLNET_NODE_THRESHOLD", "2",
     "NCCL's own: a communicator on fewer nodes than this does not use CollNet. The plugin reads it and warns "
     "when a communicator falls below it."},
}};

constexpr bool RegistryInKeyOrder() {
  for (int i = 0; i < kNumEnvVars; ++i) {
    if (static_cast<int>(kVars[i].key) != i) return false;
  }
  return true;
}
static_assert(RegistryInKeyOrder(), "kVars must list every EnvKey in enum order");

// kVars with the client's settings filled in from their shared list. The
// strings live as long as the process (static storage).
std::array<EnvVarInfo, kNumEnvVars> Resolved() {
  static std::deque<std::string> docs;  // grows at the end: its strings never move
  std::array<EnvVarInfo, kNumEnvVars> out = kVars;
  for (EnvVarInfo& var : out) {
    for (const client::ClientSetting& setting : client::ClientSettings()) {
      const SettingInfo& info = setting.info;
      if (info.env != var.name) continue;
      var.default_value = info.default_value.c_str();
      std::string doc = info.doc + ".";
      if (var.doc[0] != '\0') doc += std::string(" ") + var.doc;
      var.doc = docs.emplace_back(std::move(doc)).c_str();
      if (!info.old_envs.empty()) {
        var.old_name = info.old_envs.front().name.c_str();
        var.old_bare_unit = info.old_envs.front().bare_unit.c_str();
      }
    }
  }
  return out;
}

}  // namespace

const std::array<EnvVarInfo, kNumEnvVars>& EnvVars() {
  static const std::array<EnvVarInfo, kNumEnvVars> vars = Resolved();
  return vars;
}
const EnvVarInfo& EnvInfo(EnvKey key) { return EnvVars()[static_cast<int>(key)]; }

// The registry as common/settings.h takes it: environment only.
const std::vector<SettingInfo>& AsSettings() {
  static const std::vector<SettingInfo> settings = [] {
    std::vector<SettingInfo> out;
    for (const EnvVarInfo& var : EnvVars()) {
      SettingInfo info{"", var.name, "", var.default_value, "", var.doc};
      if (var.old_name != nullptr) info.old_envs.push_back({var.old_name, var.old_bare_unit});
      out.push_back(std::move(info));
    }
    return out;
  }();
  return settings;
}

Env Env::FromLookup(const Lookup& lookup) {
  Env env;
  env.settings_ = Settings::Resolve(AsSettings(), {}, lookup);
  return env;
}

const Env& Env::Process() {
  static const Env env = FromLookup([](const char* name) { return std::getenv(name); });
  return env;
}

bool Env::IsSet(EnvKey key) const { return settings_.IsSet(EnvInfo(key).name); }

std::string Env::Get(EnvKey key) const { return settings_.Get(EnvInfo(key).name).text; }

const std::string& Env::Source(EnvKey key) const { return settings_.Get(EnvInfo(key).name).source; }

StatusOr<int64_t> Env::GetInt(EnvKey key, int64_t min, int64_t max) const {
  return settings_.Int(EnvInfo(key).name, min, max);
}

StatusOr<uint64_t> Env::GetSize(EnvKey key, uint64_t min, uint64_t max) const {
  return settings_.Size(EnvInfo(key).name, min, max);
}

StatusOr<std::chrono::milliseconds> Env::GetDuration(EnvKey key, std::chrono::milliseconds min,
                                                     std::chrono::milliseconds max) const {
  return settings_.Duration(EnvInfo(key).name, min, max);
}

std::string EnvMarkdownTable() {
  std::string out = "| Variable | Default | Meaning |\n|---|---|---|\n";
  for (const EnvVarInfo& var : EnvVars()) {
    out += "| `";
    out += var.name;
    out += "` | ";
    out += var.default_value[0] ? std::string("`") + var.default_value + "`" : std::string("(unset)");
    out += " | ";
    out += var.doc;
    if (var.old_name != nullptr) {
      out += std::string(" Deprecated old name: `") + var.old_name + "`" +
             (var.old_bare_unit[0] ? std::string(" (a number without unit is ") + var.old_bare_unit + ")" : "") +
             ".";
    }
    out += " |\n";
  }
  return out;
}

}  // namespace rs::plugin
