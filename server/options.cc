#include "server/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <limits>

#include "common/cli_parse.h"
#include "common/cluster_spec.h"
#include "common/host_capacity.h"
#include "common/pem_file.h"
#include "common/units.h"
#include "protocol/auth.h"
#include "protocol/wire.h"
#include "server/reducerd_settings.h"

namespace rs::server {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kForever = milliseconds::max();
constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

// The I/O threads when --io-threads is not given (common/host_capacity.h):
// the link is the interface holding the listen address, or for a wildcard
// the fastest one; the reason is for main() to log.
IoThreadChoice ReducerIoThreads(const std::string& listen_host) {
  return AutoIoThreads(CapacityWith(InterfaceForLocalAddress(listen_host),
                                    "no interface that is up reports a speed, or none holds " + listen_host));
}

// Validates an optional HOST:PORT setting and writes it the way gRPC and the
// HTTP server take it ("[v6]:port" for IPv6). Empty stays empty (off).
StatusOr<std::string> ListenAddress(const Settings& s, const SettingKey<std::string>& key) {
  const SettingValue& v = s.Get(key);
  if (v.text.empty()) return std::string();
  auto hp = ParseHostPort(v.text);
  if (!hp.ok()) return hp.status().Prefixed(v.source);
  const bool v6 = hp->host.find(':') != std::string::npos;
  return (v6 ? "[" + hp->host + "]" : hp->host) + ":" + std::to_string(hp->port);
}

// Stores a parsed value, or passes its error on (after `context`, if given).
template <typename T, typename U>
Status Assign(StatusOr<U> value, T* dest, std::string_view context = {}) {
  if (!value.ok()) return context.empty() ? value.status() : value.status().Prefixed(context);
  *dest = static_cast<T>(*value);
  return Status::Ok();
}

// The data-plane address: --listen or REDUCER_LISTEN when given. Otherwise,
// on Vertex AI, a replica of the reducers' pool (workerpool2) listens on all
// interfaces at the port of its own CLUSTER_SPEC entry, where the workers
// will look for it (Vertex lists every replica as host:2222); a replica of
// another pool keeps the default, with a warning. A CLUSTER_SPEC that cannot
// be read is an error then: listening on a guess would leave every worker
// waiting for the join timeout.
Status ResolveListen(const Settings& s, Options* out) {
  const SettingValue& listen = s.Get(setting::kListen);
  std::string text = listen.text;
  std::string source = listen.source;
  const SettingValue& spec_text = s.Get(setting::kClusterSpec);
  if (listen.is_default && !spec_text.text.empty()) {
    StatusOr<ClusterSpec> spec = ClusterSpec::Parse(spec_text.text);
    if (!spec.ok()) return spec.status();
    const std::string task =
        spec->task_type + (spec->task_index < 0 ? " (no task.index)" : "[" + std::to_string(spec->task_index) + "]");
    if (spec->task_type == ClusterSpec::kReducerPool) {
      const std::string* self = spec->Self();
      if (self == nullptr) {
        const std::vector<std::string>* pool = spec->Pool(ClusterSpec::kReducerPool);
        const size_t n = pool ? pool->size() : 0;
        return Status(Code::kInvalidArgument, "CLUSTER_SPEC: this replica is " + task + " but cluster.workerpool2 has " +
                                                  std::to_string(n) + (n == 1 ? " entry" : " entries") +
                                                  ", so its port is unknown; give --listen or REDUCER_LISTEN");
      }
      StatusOr<HostPort> own = ParseHostPort(*self);
      if (!own.ok()) return own.status().Prefixed("CLUSTER_SPEC: cluster." + task);
      text = "0.0.0.0:" + std::to_string(own->port);
      source = "CLUSTER_SPEC";
      out->listen_origin = "CLUSTER_SPEC " + task + " (" + *self + ")";
    } else {
      out->notices.push_back("CLUSTER_SPEC: this replica is " +
                             (spec->task_type.empty() ? std::string("not named (no task)") : task) +
                             ", not a reducer (workerpool2); listening on the default " + text);
    }
  }
  StatusOr<HostPort> hp = ParseHostPort(text);
  if (!hp.ok()) return hp.status().Prefixed(source);
  out->net.listen_host = hp->host;
  out->net.listen_port = hp->port;
  return Status::Ok();
}

// The gRPC port's TLS: a certificate and its key give TLS, a client CA on top
// mutual TLS. The files are read and checked here, so that a wrong one stops
// reducerd with its name before anything listens.
Status ResolveGrpcTls(const Settings& s, Options* out) {
  const SettingValue& cert = s.Get(setting::kGrpcTlsCert);
  const SettingValue& key = s.Get(setting::kGrpcTlsKey);
  const SettingValue& ca = s.Get(setting::kGrpcTlsClientCa);
  if (cert.text.empty() && key.text.empty() && ca.text.empty()) return Status::Ok();
  if (out->control.grpc_listen.empty()) {
    for (const SettingValue* v : {&cert, &key, &ca}) {
      if (v->text.empty()) continue;
      out->notices.push_back(v->source + " is ignored: the gRPC control plane is off (no --grpc-listen)");
    }
    return Status::Ok();
  }
  if (cert.text.empty() != key.text.empty()) {
    const std::string given = cert.text.empty() ? key.source : cert.source;
    const std::string missing = cert.text.empty() ? "--grpc-tls-cert (REDUCER_GRPC_TLS_CERT)"
                                                  : "--grpc-tls-key (REDUCER_GRPC_TLS_KEY)";
    return Status(Code::kInvalidArgument,
                  given + " is set but " + missing + " is not: TLS needs the certificate and its private key");
  }
  if (cert.text.empty()) {
    return Status(Code::kInvalidArgument,
                  ca.source + " (mutual TLS) needs --grpc-tls-cert and --grpc-tls-key too: reducerd presents its own "
                  "certificate before it asks clients for theirs");
  }
  GrpcTls& tls = out->control.grpc_tls;
  tls.cert_file = cert.text;
  tls.key_file = key.text;
  RS_RETURN_IF_ERROR(Assign(ReadPemFile(cert.text, PemContent::kCertificates), &tls.cert_chain, cert.source));
  RS_RETURN_IF_ERROR(Assign(ReadPemFile(key.text, PemContent::kPrivateKey), &tls.private_key, key.source));
  RS_RETURN_IF_ERROR(CheckKeyMatchesCertificate(tls.cert_chain, cert.text, tls.private_key, key.text));
  if (!ca.text.empty()) {
    tls.client_ca_file = ca.text;
    RS_RETURN_IF_ERROR(Assign(ReadPemFile(ca.text, PemContent::kCertificates), &tls.client_ca, ca.source));
  }
  return Status::Ok();
}

StatusOr<Options> Validate(const Settings& s) {
  Options out;
  RS_RETURN_IF_ERROR(ResolveListen(s, &out));

  if (s.IsSet(setting::kIoThreads)) {
    RS_RETURN_IF_ERROR(Assign(s.Int(setting::kIoThreads, 1, 256), &out.net.io_threads));
  } else {
    const IoThreadChoice threads = ReducerIoThreads(out.net.listen_host);
    out.net.io_threads = threads.threads;
    out.io_threads_origin = "automatic: " + threads.reason + "; --io-threads sets them";
  }
  RS_RETURN_IF_ERROR(Assign(s.Size(setting::kMemoryLimit, 0, kNoLimit), &out.net.memory_limit));
  RS_RETURN_IF_ERROR(Assign(s.Size(setting::kMaxPiece, kMinPieceBytes, kNoLimit), &out.net.max_piece_bytes));
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kCrc, 0, 1), &out.net.crc));
  if (s.IsSet(setting::kResultPart)) {
    RS_RETURN_IF_ERROR(Assign(s.Size(setting::kResultPart, 0, kNoLimit), &out.net.result_part_bytes));
  }
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kWholePiecesFrom, 0, 1 << 20), &out.net.whole_pieces_from));
  out.net.tcp.congestion = s.Get(setting::kTcpCongestion).text;
  RS_RETURN_IF_ERROR(ValidateTcpCongestion(s.Get(setting::kTcpCongestion).source, out.net.tcp.congestion));
  RS_RETURN_IF_ERROR(Assign(s.Duration(setting::kTcpRtoMin, milliseconds(0), milliseconds(200)), &out.net.tcp.rto_min));
  RS_RETURN_IF_ERROR(Assign(s.Duration(setting::kOpTimeout, milliseconds(1), kForever), &out.net.op_timeout));
  RS_RETURN_IF_ERROR(Assign(s.Duration(setting::kJoinTimeout, milliseconds(1), kForever), &out.net.join_timeout));
  RS_RETURN_IF_ERROR(Assign(s.Duration(setting::kDrainTimeout, milliseconds(0), kForever), &out.drain_timeout));
  RS_RETURN_IF_ERROR(
      Assign(s.Duration(setting::kHandshakeTimeout, milliseconds(1), kForever), &out.net.handshake_timeout));
  RS_RETURN_IF_ERROR(Assign(s.Duration(setting::kIdleTimeout, milliseconds(1), kForever), &out.net.idle_timeout));
  AdmissionLimits& limits = out.net.limits;
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kMaxConnections, 1, 1 << 20), &limits.max_connections));
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kMaxConnectionsPerSource, 1, 1 << 20), &limits.max_connections_per_source));
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kMaxHandshakesPerSource, 1, 1 << 20), &limits.max_handshakes_per_source));
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kMaxPendingSessions, 1, 1 << 20), &limits.max_pending_sessions));
  RS_RETURN_IF_ERROR(
      Assign(s.Int(setting::kMaxPendingSessionsPerSource, 1, 1 << 20), &limits.max_pending_sessions_per_source));

  if (const SettingValue& file = s.Get(setting::kJobTokenFile); !file.is_default) {
    auto token = protocol::ReadTokenFile(file.text);
    if (!token.ok()) return token.status().Prefixed(file.source);
    out.net.job_token = *token;
  } else {
    out.net.job_token = s.Get(setting::kJobToken).text;
  }
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kTls, 0, 1), &out.net.tls));
  if (out.net.tls && out.net.job_token.empty()) {
    return Status(Code::kInvalidArgument, s.Get(setting::kTls).source +
                                              ": TLS on the data plane is keyed by the job token, and none is set "
                                              "(--job-token-file)");
  }

  RS_RETURN_IF_ERROR(Assign(ListenAddress(s, setting::kGrpcListen), &out.control.grpc_listen));
  RS_RETURN_IF_ERROR(ResolveGrpcTls(s, &out));
  RS_RETURN_IF_ERROR(Assign(ListenAddress(s, setting::kMetricsListen), &out.control.metrics_listen));
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kMetricsMaxSessions, 0, 1024), &out.control.metrics_max_sessions));
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kMetricsMaxRanks, 0, 1024), &out.control.metrics_max_ranks));
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kMetricsSessionIds, 0, 1), &out.control.metrics_session_ids));
  out.control.drain_timeout = out.drain_timeout;

  RS_RETURN_IF_ERROR(
      Assign(s.OneOf(setting::kLogLevel, {"trace", "debug", "info", "warn", "error"}), &out.log_level));
  RS_RETURN_IF_ERROR(Assign(s.OneOf(setting::kLogFormat, {"text", "json"}), &out.log_format));
  out.port_file = s.Get(setting::kPortFile).text;
  out.grpc_port_file = s.Get(setting::kGrpcPortFile).text;
  out.metrics_port_file = s.Get(setting::kMetricsPortFile).text;
  out.notices.insert(out.notices.begin(), s.notices().begin(), s.notices().end());
  return out;
}

}  // namespace

StatusOr<Options> ParseOptions(int argc, char** argv, const EnvLookup& env) {
  CLI::App app{
      "reducerd: the Reduction Server's reducer daemon. Workers send it their pieces of each\n"
      "all-reduce; it sums them in rank order and sends the result back to every worker.\n"
      "Every flag can also be set through the environment variable shown with it (the flag wins).\n"
      "Sizes take units (4096, 64KiB, 16M, 1G); durations must (500ms, 30s, 2m)."};
  app.set_version_flag("--version", "reducerd 0.1.0 (protocol " + std::to_string(protocol::kProtocolVersion) + ")");
  SettingFlags flags(app, ReducerdSettings());
  RS_RETURN_IF_ERROR(ParseCommandLine(app, argc, argv));
  return Validate(Settings::Resolve(ReducerdSettings(), flags.Given(), env));
}

}  // namespace rs::server
