// The plugin's configuration, derived once from the environment registry
// (env_registry.h): the point-to-point transport's settings and the CollNet
// settings, including reducer discovery (REDUCER_ADDRS, else CLUSTER_SPEC's
// workerpool2) and the job token (REDUCER_JOB_TOKEN, else a file).
//
// Each part is validated separately, because a broken CollNet setting must
// not take point-to-point down: the ABI layer reports a misconfiguration from
// the first call that needs the broken part (as InvalidUsage), and `init`
// itself never fails.
//
// Thread-safety: immutable value types; the parse functions are reentrant.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "common/cluster_spec.h"
#include "nccl_plugin/config/env_registry.h"
#include "common/status.h"

namespace rs::plugin {

struct P2pConfig {
  std::string ifname_spec;    // NCCL syntax; empty: automatic choice
  std::string ifname_source;  // which variable ifname_spec came from
  int threads = kDefaultSocketThreads.value;            // helper threads per comm
  int socks_per_thread = kDefaultSocksPerThread.value;  // data sockets per helper thread
  std::chrono::milliseconds connect_timeout = client::kDefaultConnectTimeout.value;
  // REDUCER_LIVENESS_TIMEOUT, for the sockets' keepalive probes and their
  // TCP_USER_TIMEOUT (twice it): a dead peer host or a cut link fails a
  // transfer instead of leaving NCCL waiting on TCP's own 15-minute retries
  // (or 2 hours of keepalive idle). 0: the system's keepalive, no timeout.
  std::chrono::milliseconds liveness_timeout = client::kDefaultLivenessTimeout.value;
  // REDUCER_NIC_SPEED: what every device reports to NCCL instead of the
  // interface's own speed; unset: the interface's.
  std::optional<int> nic_speed_mbps;
  // REDUCER_TCP_CONGESTION, REDUCER_TCP_RTO_MIN, as the CollNet streams
  // have them (common/tcp_tuning.h).
  TcpTuning tcp;

  int data_sockets() const { return threads * socks_per_thread; }
};

struct CollNetConfig {
  // Empty: CollNet is off (reports 0 devices); off_reason says why for the
  // one INFO line.
  std::vector<client::Endpoint> reducers;
  std::string source;  // "REDUCER_ADDRS" or "CLUSTER_SPEC workerpool2"
  std::string off_reason;
  bool off_is_warning = false;  // off because of a problem, not by choice
  std::string job_token;  // empty: no authentication
  // The client's options: the reducers and token above, and the shared
  // transport and reliability settings (client/client_settings.h). The
  // session, rank and world come from NCCL at connect.
  client::ClientOptions client;
  // REDUCER_COLLNET_TRACE: where each communicator writes its timeline
  // (collnet/collnet_trace.h); empty: none. May differ between nodes.
  std::string trace_dir;
};

// NCCL's own CollNet switches, read as NCCL 2.28 reads them (strtol with
// base 0; NCCL_COLLNET_ENABLE is on only when that gives 1, an unreadable
// threshold is the default), so the plugin can tell when NCCL will leave
// CollNet off.
struct NcclCollNetSettings {
  std::string enable_text;  // NCCL_COLLNET_ENABLE as set; empty when unset
  bool enabled = false;
  int node_threshold = kDefaultNcclCollNetNodeThreshold.value;  // NCCL_COLLNET_NODE_THRESHOLD
  std::string algo;         // NCCL_ALGO as set
  bool algo_forces_collnet = false;  // it names CollNet for all-reduce
  std::string tuner_plugin;  // NCCL_TUNER_PLUGIN as set
};

// Whether an NCCL_ALGO value lets NCCL run all-reduce on CollNet without a
// tuner: it names CollNet for all-reduce (or for every collective), and
// does not exclude it ("^collnet..."). NCCL's syntax: a list of algorithms,
// or from 2.24 "func:list;func:list".
bool AlgoForcesCollNet(std::string_view value);

StatusOr<P2pConfig> P2pConfigFromEnv(const Env& env);
NcclCollNetSettings NcclCollNetSettingsFromEnv(const Env& env);

// A link speed with its unit ("800Mbit", "25Gbit", "1.5Gbit/s", "100Gbps"),
// in Mbit/s as NCCL's device properties carry it: at least 1, at most what
// an int holds. `name` is the variable, for the error.
StatusOr<int> ParseLinkSpeedMbps(std::string_view name, std::string_view text);

// REDUCER_ADDRS is parsed by rs::client::ParseEndpoints (the client
// library's own syntax: "host:port,[v6addr]:port").
// Errors (kInvalidArgument) only for settings that clearly meant to enable
// CollNet but are broken: a malformed REDUCER_ADDRS or workerpool2 entry, an
// unreadable token file, a bad number. A CLUSTER_SPEC that does not parse is
// not an error here (Vertex sets it on every job, reducers or not): CollNet
// is off and off_reason carries the parse error for a WARN line.
StatusOr<CollNetConfig> CollNetConfigFromEnv(const Env& env);

// The reducers listed in a CLUSTER_SPEC (workerpool2); empty when the spec
// has no such pool; an error for an entry that is not host:port.
StatusOr<std::vector<client::Endpoint>> ReducersFromClusterSpec(const ClusterSpec& spec);

// REDUCER_JOB_TOKEN, else the contents of REDUCER_JOB_TOKEN_FILE without
// trailing whitespace; empty when neither is set.
StatusOr<std::string> ReadJobToken(const Env& env);

}  // namespace rs::plugin
