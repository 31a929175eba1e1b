#include "nccl_plugin/config/env_registry.h"

#include <cstdlib>
#include <string>

#include "client/client_settings.h"

namespace rs::plugin {
namespace {

// A shared client setting as the plugin lists it: the client's entry,
// environment only, with `more` (a sentence of the plugin's, or "")
// after its description.
SettingInfo Shared(const SettingName& key, std::string_view more) {
  SettingInfo info = client::ClientSettingInfo(key);
  info.flag.clear();
  info.old_flags.clear();
  info.doc += ".";
  if (!more.empty()) info.doc += " " + std::string(more);
  return info;
}

std::vector<SettingInfo> Registry() {
  return {
      Entry(setting::kReducerAddrs, "", "", "",
            "Reducers as `host:port,host:port` (`[v6addr]:port` for IPv6); an item may hold one range, "
            "`name-{0..3}.svc:7450`, for each index. Overrides CLUSTER_SPEC."),
      Entry(setting::kClusterSpec, "", "", "",
            "Vertex AI cluster JSON (set by Vertex); reducers are the `workerpool2` entries. Used when REDUCER_ADDRS "
            "is unset."),
      Entry(setting::kJobToken, "", "", "",
            "Shared job token proving to the reducers that this worker belongs to the job. Never logged."),
      Entry(setting::kJobTokenFile, "", "", "",
            "File holding the job token (blanks around it ignored); used when REDUCER_JOB_TOKEN is unset."),
      Entry(setting::kSocketIfname, "", "", "",
            "Interfaces for point-to-point traffic, NCCL syntax: `eth0,eth1` prefixes, `=eth0` exact, `^docker` "
            "excluded."),
      Entry(setting::kNcclSocketIfname, "", "", "",
            "NCCL's own variable, honoured when REDUCER_SOCKET_IFNAME is unset. Neither set: the first non-loopback "
            "interface that is up (`docker*` skipped), else loopback."),
      Entry(setting::kSocketThreads, "", kDefaultSocketThreads.text, "",
            "Helper threads per point-to-point connection (1-16)."),
      Entry(setting::kSocksPerThread, "", kDefaultSocksPerThread.text, "",
            "Data sockets per helper thread (1-16); large messages are split across all sockets of a connection (at "
            "most 64)."),
      Entry(setting::kNicSpeed, "", "", "",
            "The speed the plugin reports to NCCL for its network devices, with its unit (`800Mbit`, `25Gbit`). Unset: "
            "the interface's own (`/sys/class/net/IF/speed`), 10Gbit when it reports none. NCCL leaves CollNet (the "
            "reducers) off below 960Mbit, and the tuner's choice depends on it: must be equal on every node. When set, "
            "the CollNet client's automatic I/O threads follow it too."),
      // The client's settings: default, description and old name from
      // client/client_settings.h (Shared above); here only what the plugin
      // adds to the description.
      Shared(setting::kStreams, ""),
      Shared(setting::kIoThreads,
             "One set per CollNet communicator; NCCL's info log "
             "(`NCCL_DEBUG=INFO`) has the automatic choice and why."),
      Shared(setting::kMaxPiece, ""),
      Shared(setting::kMinPiece, ""),
      Shared(setting::kSendWindow, ""),
      Shared(setting::kWriteSlice, ""),
      Shared(setting::kOpTimeout, ""),
      Shared(setting::kConnectTimeout, "It also bounds point-to-point connection setup."),
      Shared(setting::kLivenessTimeout,
             "Point-to-point sockets get keepalive probes after half of it idle and a kernel timeout of twice it for "
             "unacknowledged data, so a dead peer or cut link fails NCCL's transfer."),
      Shared(setting::kCrc, ""),
      Shared(setting::kTls,
             "It covers the traffic to the reducers only: the point-to-point transport (NCCL's "
             "rings and trees) stays plain TCP, as NCCL's own socket transport is."),
      Shared(setting::kWireDtype, ""),
      Shared(setting::kFailover, ""),
      Shared(setting::kMinReducers, ""),
      Shared(setting::kRetention, "Per communicator."),
      Shared(setting::kTcpCongestion, "The point-to-point sockets get the same."),
      Shared(setting::kTcpRtoMin, "The point-to-point sockets get the same."),
      Shared(setting::kTcpPacing,
             "CollNet's streams only: a point-to-point connection has one sender per receiver, so nothing to pace "
             "against."),
      Entry(
          setting::kLog, "", "info", "",
          "What the plugin writes to stderr itself, whatever NCCL_DEBUG says (NCCL prints nothing without it): `info`, "
          "one line saying which reducers carry which all-reduce sizes, plus every warning that the reducers will not "
          "carry the traffic configured for them, with its cause and fix; `warn`, the warnings only; `off`, nothing. "
          "NCCL's own log gets the same lines either way."),
      Entry(setting::kRequired, "", "0", "",
            "`1`: fail the job when the reducers will not be used (unreachable, refused, CollNet off, no tuner), with "
            "the "
            "cause, instead of training on with NCCL's own algorithms. `0`: run on, with a warning on stderr."),
      Entry(setting::kCollNetTrace, "", "", "",
            "A directory: each CollNet communicator writes a timeline of its iallreduce calls there when NCCL closes "
            "it or the process exits (one CSV file per node head; bench/collnet_trace.py in the source tree "
            "summarises them), to see where CollNet's time goes. Unset: no trace."),
      Entry(setting::kNcclCollNetEnable, "", "", "",
            "NCCL's own switch: NCCL uses CollNet, and so the reducers, only when it is `1`. The plugin warns when "
            "reducers are configured and it is not `1`. Preloaded (`LD_PRELOAD`), the library sets it to `1` where it "
            "is unset."),
      Entry(
          setting::kNcclAlgo, "", "", "",
          "NCCL's own. Read to tell whether NCCL will use CollNet without the plugin's tuner (a value naming CollNet, "
          "e.g. `allreduce:collnetchain`, forces it)."),
      Entry(setting::kNcclTunerPlugin, "", "", "",
            "NCCL's own: the library NCCL takes its tuner from. Unset, NCCL 2.21 and later find the plugin's tuner in "
            "libnccl-net-reducer.so; NCCL 2.19 - 2.20 only here. Preloaded (`LD_PRELOAD`), the library sets it to "
            "`libnccl-net-reducer.so` where it is unset."),
      Entry(setting::kNcclCollNetNodeThreshold, "", kDefaultNcclCollNetNodeThreshold.text, "",
            "NCCL's own: a communicator on fewer nodes than this does not use CollNet. The plugin reads it and warns "
            "when a communicator falls below it."),
  };
}

}  // namespace

const std::vector<SettingInfo>& PluginSettings() {
  static const std::vector<SettingInfo> registry = Registry();
  return registry;
}

Env Env::FromLookup(const Lookup& lookup) {
  Env env;
  env.settings_ = Settings::Resolve(PluginSettings(), {}, lookup);
  return env;
}

const Env& Env::Process() {
  static const Env env = FromLookup([](const char* name) { return std::getenv(name); });
  return env;
}

std::string EnvMarkdownTable() {
  std::string out = "| Variable | Default | Meaning |\n|---|---|---|\n";
  for (const SettingInfo& var : PluginSettings()) {
    out += "| `" + var.env + "` | ";
    out += !var.default_value.empty() ? "`" + var.default_value + "`" : std::string("(unset)");
    out += " | " + var.doc;
    for (const SettingAlias& old : var.old_envs) {
      out += " Deprecated old name: `" + old.name + "`" +
             (!old.bare_unit.empty() ? " (a number without unit is " + old.bare_unit + ")" : "") + ".";
    }
    out += " |\n";
  }
  return out;
}

}  // namespace rs::plugin
