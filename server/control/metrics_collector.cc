#include "server/control/metrics_collector.h"

#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <random>
#include <string>

namespace rs::server {
namespace {

// The key of the opaque session labels, drawn once per process.
const std::array<uint8_t, 32>& LabelKey() {
  static const std::array<uint8_t, 32> key = [] {
    std::array<uint8_t, 32> k{};
    if (RAND_bytes(k.data(), static_cast<int>(k.size())) != 1) {
      std::random_device rd;  // OpenSSL without entropy: the labels stay opaque enough for a metric
      for (auto& b : k) b = static_cast<uint8_t>(rd());
    }
    return k;
  }();
  return key;
}

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Label values for reducer_errors_total{kind}: stable, snake_case.
const char* ErrorKindLabel(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kProtocol: return "protocol";
    case Code::kVersion: return "version";
    case Code::kAuth: return "auth";
    case Code::kMismatch: return "mismatch";
    case Code::kTimeout: return "timeout";
    case Code::kPeerFailed: return "peer_failed";
    case Code::kIo: return "io";
    case Code::kResourceExhausted: return "resource_exhausted";
    case Code::kCancelled: return "cancelled";
    case Code::kInternal: return "internal";
  }
  return "internal";
}

class Families {
 public:
  MetricFamily& Add(const char* name, const char* help, MetricType type) {
    out_.push_back(MetricFamily{name, help, type, {}});
    return out_.back();
  }
  // A family with one unlabelled sample.
  void Single(const char* name, const char* help, MetricType type, double value) {
    Sample(Add(name, help, type), value, {});
  }
  static void Sample(MetricFamily& family, double value, std::vector<ClientMetric::Label> labels) {
    ClientMetric m;
    m.label = std::move(labels);
    if (family.type == MetricType::Counter) {
      m.counter.value = value;
    } else {
      m.gauge.value = value;
    }
    family.metric.push_back(std::move(m));
  }
  void Histogram(const char* name, const char* help, const HistogramSnapshot& h) {
    ClientMetric m;
    m.histogram.sample_count = h.count;
    m.histogram.sample_sum = h.sum_seconds;
    for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
      m.histogram.bucket.push_back({h.cumulative[i], h.upper_bounds[i]});
    }
    m.histogram.bucket.push_back({h.count, std::numeric_limits<double>::infinity()});
    Add(name, help, MetricType::Histogram).metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> Take() {
    return std::vector<MetricFamily>(std::make_move_iterator(out_.begin()), std::make_move_iterator(out_.end()));
  }

 private:
  std::deque<MetricFamily> out_;  // a deque: Add()'s references stay valid
};

void AddSessionFamilies(Families& f, const std::vector<SessionSnapshot>& sessions,
                        const MetricsLimits& limits) {
  auto& last = f.Add("reducer_straggler_last_arrivals_total",
                     "Pieces whose last contribution came from this rank: the rank everybody waited for "
                     "(per session: live sessions first, then recently ended; top ranks only)",
                     MetricType::Counter);
  auto& ops = f.Add("reducer_session_operations_completed_total",
                    "Operations of this session with at least one piece reduced on this reducer",
                    MetricType::Counter);
  auto& joined = f.Add("reducer_session_ranks_joined", "Ranks of this session connected now", MetricType::Gauge);
  auto& world = f.Add("reducer_session_world_size", "Ranks this session expects", MetricType::Gauge);
  const size_t n = std::min(limits.max_sessions, sessions.size());
  for (size_t i = 0; i < n; ++i) {
    const SessionSnapshot& s = sessions[i];
    const std::string id = SessionLabel(s.id, limits.session_ids);
    Families::Sample(ops, static_cast<double>(s.stats.operations_completed), {{"session", id}});
    Families::Sample(joined, s.stats.ranks_joined, {{"session", id}});
    Families::Sample(world, s.stats.world, {{"session", id}});
    for (const RankCount& rc : SlowestRanks(s.stats, limits.max_ranks)) {
      Families::Sample(last, static_cast<double>(rc.count), {{"rank", std::to_string(rc.rank)}, {"session", id}});
    }
  }
}

// Hostile or broken clients: what the connection limits and the handshake
// timeout refused.
void AddAdmissionFamilies(Families& f, const AdmissionSnapshot& a) {
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  auto& refused = f.Add("reducer_connections_refused_total",
                        "Connections refused because a limit was reached, by limit (the flag of the same name)",
                        MetricType::Counter);
  for (size_t i = 0; i < kLimitKinds; ++i) {
    Families::Sample(refused, d(a.refused[i]), {{"limit", LimitName(static_cast<Limit>(i))}});
  }
  f.Single("reducer_handshakes_in_progress", "Connections in the handshake now (not yet joined to a session)",
           MetricType::Gauge, d(a.handshakes));
  auto& handshakes = f.Add("reducer_handshakes_refused_total",
                           "Handshakes the reducer refused with an ERROR frame, by kind (protocol: garbage or "
                           "malformed frames; auth: wrong job token; resource_exhausted: a limit)",
                           MetricType::Counter);
  for (size_t i = 1; i < kErrorKinds; ++i) {
    Families::Sample(handshakes, d(a.handshakes_refused[i]), {{"kind", ErrorKindLabel(static_cast<Code>(i))}});
  }
  f.Single("reducer_handshakes_timed_out_total", "Connections closed for not finishing the handshake in time "
           "(--handshake-timeout)", MetricType::Counter, d(a.handshakes_timed_out));
  f.Single("reducer_handshakes_abandoned_total", "Connections closed by their peer during the handshake",
           MetricType::Counter, d(a.handshakes_abandoned));
  f.Single("reducer_accept_errors_total", "Times accepting a connection failed (e.g. out of file descriptors)",
           MetricType::Counter, d(a.accept_errors));
  f.Single("reducer_sessions_pending", "Sessions waiting for their ranks to join", MetricType::Gauge,
           d(a.pending_sessions));
}

}  // namespace

std::string SessionLabel(const protocol::SessionId& id, bool ids) {
  if (ids) return protocol::SessionIdToString(id);
  const auto& key = LabelKey();
  uint8_t mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), id.data(), id.size(), mac, &len) == nullptr ||
      len < 6) {
    return "h-unavailable";
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "h";
  for (unsigned int i = 0; i < 6; ++i) {
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 15];
  }
  return out;
}

std::vector<MetricFamily> BuildMetricFamilies(const ServerStats& stats,
                                              const std::vector<SessionSnapshot>& sessions,
                                              const MetricsLimits& limits) {
  const ReducerStatsSnapshot& t = stats.totals;
  Families f;
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  f.Single("reducer_bytes_received_total", "Element bytes received from workers (frame headers not counted)",
           MetricType::Counter, d(t.bytes_received));
  f.Single("reducer_bytes_sent_total", "Reduced element bytes sent to workers (each rank gets every result)",
           MetricType::Counter, d(t.bytes_sent));
  f.Single("reducer_tcp_send_busy_seconds_total",
           "Time the connections to the ranks had results to send, summed over connections (TCP_INFO, sampled "
           "at the liveness ticks, every second with liveness off, and when a connection leaves its session)",
           MetricType::Counter, d(t.tcp_send_busy_us) / 1e6);
  auto& waits = f.Add("reducer_tcp_send_waits_seconds_total",
                      "Of reducer_tcp_send_busy_seconds_total, time TCP waited for a rank's receive window or for "
                      "room in the reducer's send buffer: a share of more than a few % means a buffer ceiling, not "
                      "the link, sets the pace (docs/guide/tuning.md)",
                      MetricType::Counter);
  Families::Sample(waits, d(t.tcp_rwnd_limited_us) / 1e6, {{"cause", "receive_window"}});
  Families::Sample(waits, d(t.tcp_sndbuf_limited_us) / 1e6, {{"cause", "send_buffer"}});
  f.Single("reducer_operations_completed_total",
           "Operations with at least one piece reduced on this reducer (an operation spread over several "
           "reducers counts on each)",
           MetricType::Counter, d(t.operations_completed));
  f.Single("reducer_pieces_completed_total", "Pieces reduced and sent back to every rank", MetricType::Counter,
           d(t.pieces_completed));
  f.Single("reducer_pieces_in_parts_total",
           "Of those, pieces reduced with cut-through: each part of the result sent as soon as every rank's "
           "share of it was in. The rest waited for whole pieces (ranks that do not take parts, --result-part 0, "
           "or --whole-pieces-from)",
           MetricType::Counter, d(t.pieces_in_parts));
  f.Single("reducer_wire_bytes_received_total",
           "Float32 sums on a 16-bit wire (REDUCER_WIRE_DTYPE): bytes their contributions took on the wire",
           MetricType::Counter, d(t.wire_bytes_received));
  f.Single("reducer_wire_widened_bytes_received_total",
           "The float32 bytes those contributions stand for (twice the wire bytes when nothing fell back)",
           MetricType::Counter, d(t.wire_float32_bytes_received));
  auto& fallbacks = f.Add("reducer_wire_fallbacks_total",
                          "Pieces of float32 sums sent as float32 instead of the wire type because a value did "
                          "not fit it (Inf, NaN, beyond float16's range)",
                          MetricType::Counter);
  Families::Sample(fallbacks, d(t.wire_fallback_contributions), {{"direction", "contribution"}});
  Families::Sample(fallbacks, d(t.wire_fallback_results), {{"direction", "result"}});
  f.Histogram("reducer_piece_latency_seconds",
              "Per piece: from the first rank's contribution arriving to the reduced result being ready",
              t.piece_latency);
  f.Histogram("reducer_straggler_wait_seconds",
              "Per piece: time between the first and the last rank's contribution being complete",
              t.straggler_wait);
  AddSessionFamilies(f, sessions, limits);
  f.Single("reducer_sessions_active", "Sessions with at least one rank connected", MetricType::Gauge,
           d(stats.sessions_active));
  f.Single("reducer_sessions_started_total", "Sessions opened since start", MetricType::Counter,
           d(stats.sessions_started));
  f.Single("reducer_sessions_failed_total", "Sessions that ended in failure", MetricType::Counter,
           d(stats.sessions_failed));
  f.Single("reducer_memory_budget_limit_bytes", "Memory budget for piece buffers (--memory-limit)",
           MetricType::Gauge, d(stats.memory_limit));
  f.Single("reducer_memory_budget_in_use_bytes", "Piece buffer memory in use now", MetricType::Gauge,
           d(stats.memory_in_use));
  f.Single("reducer_memory_budget_peak_bytes", "Most piece buffer memory in use at once since start",
           MetricType::Gauge, d(stats.memory_peak));
  f.Single("reducer_memory_budget_waits_total",
           "Times a contribution waited for memory (the reducer stopped reading that socket)", MetricType::Counter,
           d(stats.memory_waits));
  f.Single("reducer_connections_active", "Worker TCP streams connected now", MetricType::Gauge,
           d(stats.connections_active));
  f.Single("reducer_connections_accepted_total", "Worker TCP streams accepted since start", MetricType::Counter,
           d(stats.connections_accepted));
  AddAdmissionFamilies(f, stats.admission);
  auto& errors = f.Add("reducer_errors_total",
                       "Errors by kind: a failed session counts once, a rejected stream (handshake, "
                       "protocol) once",
                       MetricType::Counter);
  for (size_t i = 1; i < kErrorKinds; ++i) {
    Families::Sample(errors, d(t.errors[i]), {{"kind", ErrorKindLabel(static_cast<Code>(i))}});
  }
  f.Single("reducer_draining", "1 while draining (no new sessions), 0 while serving", MetricType::Gauge,
           stats.accepting ? 0.0 : 1.0);
  return f.Take();
}

std::vector<MetricFamily> MetricsCollector::Collect() const {
  return BuildMetricFamilies(server_.stats(), server_.Sessions(), limits_);
}

}  // namespace rs::server
