#include "nccl_plugin/config/env_registry.h"

#include <cstdlib>

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
     "File holding the job token (trailing newline ignored); used when REDUCER_JOB_TOKEN is unset."},
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
     "reducers) off below 960Mbit, and the tuner's choice depends on it: must be equal on every node."},
    {EnvKey::kStreams, "REDUCER_STREAMS", "",
     "TCP streams from each worker to each reducer (1-64); must be equal on every rank. Unset: 1."},
    {EnvKey::kIoThreads, "REDUCER_IO_THREADS", "1", "Client I/O threads per CollNet communicator (1-64)."},
    {EnvKey::kMaxPiece, "REDUCER_MAX_PIECE", "",
     "Largest piece of an all-reduce sent to one reducer (4KiB-1GiB); must be equal on every rank. Unset: 512KiB "
     "divided by the number of reducers (64KiB to 512KiB), the same on every rank.",
     "REDUCER_PIECE_BYTES"},
    {EnvKey::kMinPiece, "REDUCER_MIN_PIECE", "64KiB",
     "Below this an all-reduce is not split further to reach every reducer.", "REDUCER_MIN_PIECE_BYTES"},
    {EnvKey::kOpTimeout, "REDUCER_OP_TIMEOUT", "90s",
     "An all-reduce with no answer from a reducer for this long fails on this rank; keep above the reducers' own timeout.",
     "REDUCER_OP_TIMEOUT_MS", "ms"},
    {EnvKey::kConnectTimeout, "REDUCER_CONNECT_TIMEOUT", "60s",
     "Bound on connection setup: point-to-point connect and CollNet join of all ranks.",
     "REDUCER_CONNECT_TIMEOUT_MS", "ms"},
    {EnvKey::kLivenessTimeout, "REDUCER_LIVENESS_TIMEOUT", "5s",
     "A reducer stream on which nothing arrives for this long (frozen reducer, dead host, cut link) fails the "
     "all-reduce naming the reducer; heartbeats go both ways at a fifth of it and the reducers use it to detect a "
     "silent worker. Point-to-point sockets get keepalive probes after half of it idle and a kernel timeout of "
     "twice it for unacknowledged data, so a dead peer or cut link fails NCCL's transfer. A duration (`500ms`, "
     "`5s`); `0` turns it off."},
    {EnvKey::kCrc, "REDUCER_CRC", "0",
     "1: a CRC32C over every piece sent and every result received, checked end to end; a mismatch fails the "
     "all-reduce naming the hop. Costs the reducers 3-10 % more CPU. 0: off."},
    {EnvKey::kWireDtype, "REDUCER_WIRE_DTYPE", "off",
     "`bfloat16` or `float16`: float32 sums travel in that type, half the bytes. Each node rounds its chunk once, "
     "the reducers add the nodes' chunks in float32 and round the sum once, so an element is rounded twice "
     "whatever the number of nodes; results stay identical on every node. A chunk with a value the type cannot "
     "hold (Inf, NaN, beyond float16's 65504) goes as float32. Other types and ops are unchanged. `off`: float32. "
     "Must be equal on every node."},
    {EnvKey::kFailover, "REDUCER_FAILOVER", "1",
     "1: when a reducer is lost the job goes on with the others (invisible to NCCL unless it fails) and a "
     "restarted one is taken back; each node keeps a copy of its recent chunks for that. 0: losing a reducer fails "
     "the job. Must be equal on every node."},
    {EnvKey::kMinReducers, "REDUCER_MIN_REDUCERS", "1",
     "With failover, the job fails when fewer reducers than this are left."},
    {EnvKey::kRetention, "REDUCER_RETENTION", "256MiB",
     "With failover, memory per communicator for the copies of chunks not yet completed on every node (a size: "
     "`64MiB`, `1GiB`); when full, new chunks wait until the other nodes catch up."},
    {EnvKey::kNcclCollNetEnable, "NCCL_COLLNET_ENABLE", "",
     "NCCL's own switch: NCCL uses CollNet, and so the reducers, only when it is `1`. The plugin warns when "
     "reducers are configured and it is not `1`. Preloaded (`LD_PRELOAD`), the library sets it to `1` where it "
     "is unset."},
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

}  // namespace

const std::array<EnvVarInfo, kNumEnvVars>& EnvVars() { return kVars; }
const EnvVarInfo& EnvInfo(EnvKey key) { return kVars[static_cast<int>(key)]; }

// The registry as common/settings.h takes it: environment only.
const std::vector<SettingInfo>& AsSettings() {
  static const std::vector<SettingInfo> settings = [] {
    std::vector<SettingInfo> out;
    for (const EnvVarInfo& var : kVars) {
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
  for (const EnvVarInfo& var : kVars) {
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
