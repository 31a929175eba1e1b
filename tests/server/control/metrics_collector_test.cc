// The Prometheus exposition built from snapshots: names, help texts, the
// cardinality bounds, histograms and errors by kind, as the text format.
#include "server/control/metrics_collector.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "protocol/auth.h"

namespace rs::server {
namespace {

SessionSnapshot FakeSession(const std::string& name, uint32_t world) {
  SessionSnapshot s;
  s.id = protocol::SessionIdFromName(name);
  s.stats.world = world;
  s.stats.ranks_joined = world;
  s.stats.operations_completed = 7;
  s.stats.last_arrivals.assign(world, 0);
  for (uint32_t r = 0; r < world; ++r) s.stats.last_arrivals[r] = r;  // rank world-1 is slowest
  return s;
}

const prometheus::MetricFamily* Find(const std::vector<prometheus::MetricFamily>& families, const std::string& name) {
  for (const auto& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(MetricsCollectorTest, EveryFamilyIsNamedReducerWhatUnitAndHasHelp) {
  const auto families = BuildMetricFamilies(server::ServerStats{}, {}, MetricsLimits{});
  const std::regex name("reducer_[a-z_]+");
  std::set<std::string> seen;
  for (const auto& f : families) {
    EXPECT_TRUE(std::regex_match(f.name, name)) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
    EXPECT_TRUE(seen.insert(f.name).second) << "duplicate " << f.name;
    if (f.type == prometheus::MetricType::Counter) {
      EXPECT_TRUE(f.name.ends_with("_total")) << f.name;
    }
  }
  for (const char* required :
       {"reducer_bytes_received_total", "reducer_bytes_sent_total", "reducer_operations_completed_total",
        "reducer_pieces_completed_total", "reducer_pieces_in_parts_total", "reducer_piece_latency_seconds",
        "reducer_straggler_wait_seconds",
        "reducer_straggler_last_arrivals_total", "reducer_sessions_active", "reducer_memory_budget_in_use_bytes",
        "reducer_connections_active", "reducer_errors_total", "reducer_connections_refused_total",
        "reducer_handshakes_refused_total", "reducer_handshakes_timed_out_total", "reducer_sessions_pending",
        "reducer_tcp_send_busy_seconds_total", "reducer_tcp_send_waits_seconds_total",
        "reducer_wire_bytes_received_total", "reducer_wire_widened_bytes_received_total",
        "reducer_wire_fallbacks_total"}) {
    EXPECT_TRUE(seen.count(required)) << required;
  }
}

TEST(MetricsCollectorTest, TotalsAndHistogramsComeFromTheSnapshot) {
  server::ServerStats stats;
  stats.totals.bytes_received = 123456789;
  stats.totals.straggler_wait.upper_bounds = {0.1, 1.0};
  stats.totals.straggler_wait.cumulative = {2, 3};
  stats.totals.straggler_wait.count = 4;
  stats.totals.straggler_wait.sum_seconds = 12.5;
  stats.totals.errors[static_cast<size_t>(Code::kTimeout)] = 3;
  stats.accepting = false;
  const auto families = BuildMetricFamilies(stats, {}, MetricsLimits{});

  EXPECT_EQ(Find(families, "reducer_bytes_received_total")->metric.at(0).counter.value, 123456789.0);
  const auto& h = Find(families, "reducer_straggler_wait_seconds")->metric.at(0).histogram;
  EXPECT_EQ(h.sample_count, 4u);
  EXPECT_EQ(h.sample_sum, 12.5);
  ASSERT_EQ(h.bucket.size(), 3u);
  EXPECT_EQ(h.bucket.back().cumulative_count, 4u);  // +Inf holds everything
  EXPECT_TRUE(std::isinf(h.bucket.back().upper_bound));
  EXPECT_EQ(Find(families, "reducer_draining")->metric.at(0).gauge.value, 1.0);

  // Every kind of error is exported, zero or not, so rate() works from the start.
  const auto* errors = Find(families, "reducer_errors_total");
  EXPECT_EQ(errors->metric.size(), kErrorKinds - 1);
  bool found = false;
  for (const auto& m : errors->metric) {
    if (m.label.at(0).value == "timeout") {
      found = true;
      EXPECT_EQ(m.counter.value, 3.0);
    }
  }
  EXPECT_TRUE(found);
}

// An operator alerts on the share of send time a buffer held the results
// back: both causes are exported, in seconds, zero or not.
TEST(MetricsCollectorTest, TcpSendWaitsAreExportedInSecondsByCause) {
  server::ServerStats stats;
  stats.totals.tcp_send_busy_us = 8'000'000;
  stats.totals.tcp_rwnd_limited_us = 2'500'000;
  const auto families = BuildMetricFamilies(stats, {}, MetricsLimits{});
  EXPECT_EQ(Find(families, "reducer_tcp_send_busy_seconds_total")->metric.at(0).counter.value, 8.0);
  std::map<std::string, double> waits;
  for (const auto& m : Find(families, "reducer_tcp_send_waits_seconds_total")->metric) {
    waits[m.label.at(0).value] = m.counter.value;
  }
  EXPECT_EQ(waits, (std::map<std::string, double>{{"receive_window", 2.5}, {"send_buffer", 0.0}}));
}

TEST(MetricsCollectorTest, RefusedAndTimedOutHandshakesAreExportedByLimitAndKind) {
  server::ServerStats stats;
  stats.admission.refused[static_cast<size_t>(Limit::kMaxHandshakesPerSource)] = 5;
  stats.admission.handshakes_refused[static_cast<size_t>(Code::kProtocol)] = 7;
  stats.admission.handshakes_timed_out = 3;
  stats.admission.handshakes = 2;
  const auto families = BuildMetricFamilies(stats, {}, MetricsLimits{});
  std::map<std::string, double> refused;
  for (const auto& m : Find(families, "reducer_connections_refused_total")->metric) {
    refused[m.label.at(0).value] = m.counter.value;
  }
  EXPECT_EQ(refused, (std::map<std::string, double>{{"max_connections", 0},
                                                    {"max_connections_per_source", 0},
                                                    {"max_handshakes_per_source", 5},
                                                    {"max_pending_sessions", 0},
                                                    {"max_pending_sessions_per_source", 0}}));
  double protocol = -1;
  for (const auto& m : Find(families, "reducer_handshakes_refused_total")->metric) {
    if (m.label.at(0).value == "protocol") protocol = m.counter.value;
  }
  EXPECT_EQ(protocol, 7.0);
  EXPECT_EQ(Find(families, "reducer_handshakes_timed_out_total")->metric.at(0).counter.value, 3.0);
  EXPECT_EQ(Find(families, "reducer_handshakes_in_progress")->metric.at(0).gauge.value, 2.0);
}

TEST(MetricsCollectorTest, PerSessionSeriesAreBoundedBySessionsAndRanks) {
  std::vector<server::SessionSnapshot> sessions;
  for (int i = 0; i < 10; ++i) sessions.push_back(FakeSession("s" + std::to_string(i), 64));
  const auto families = BuildMetricFamilies(server::ServerStats{}, sessions, MetricsLimits{3, 4, true});

  const auto* last = Find(families, "reducer_straggler_last_arrivals_total");
  EXPECT_EQ(last->metric.size(), 3u * 4u);
  std::set<std::string> session_labels;
  for (const auto& m : last->metric) {
    std::map<std::string, std::string> labels;
    for (const auto& l : m.label) labels[l.name] = l.value;
    session_labels.insert(labels.at("session"));
    // Only the slowest ranks (63, 62, 61, 60) are exported.
    EXPECT_GE(std::stoi(labels.at("rank")), 60);
    EXPECT_EQ(m.counter.value, std::stod(labels.at("rank")));
  }
  // The first sessions of the list (live, newest) are the ones kept.
  EXPECT_EQ(session_labels, (std::set<std::string>{protocol::SessionIdToString(sessions[0].id),
                                                   protocol::SessionIdToString(sessions[1].id),
                                                   protocol::SessionIdToString(sessions[2].id)}));
  EXPECT_EQ(Find(families, "reducer_session_operations_completed_total")->metric.size(), 3u);
}

// Whoever reads the metrics (they listen on all addresses in the image)
// must not learn the ids a HELLO would need; the series still tell the
// sessions apart, scrape after scrape.
TEST(MetricsCollectorTest, SessionsAreLabelledOpaquelyUnlessIdsAreAskedFor) {
  std::vector<server::SessionSnapshot> sessions;
  for (int i = 0; i < 3; ++i) sessions.push_back(FakeSession("job-" + std::to_string(i), 2));
  auto labels = [&](bool ids) {
    const auto families = BuildMetricFamilies({}, sessions, MetricsLimits{16, 8, ids});
    std::vector<std::string> out;
    for (const auto& m : Find(families, "reducer_session_world_size")->metric) out.push_back(m.label.at(0).value);
    return out;
  };
  const std::vector<std::string> opaque = labels(false);
  ASSERT_EQ(opaque.size(), 3u);
  EXPECT_EQ(labels(false), opaque);  // stable
  EXPECT_EQ(std::set<std::string>(opaque.begin(), opaque.end()).size(), 3u);  // distinct
  for (size_t i = 0; i < opaque.size(); ++i) {
    const std::string id = protocol::SessionIdToString(sessions[i].id);
    EXPECT_EQ(opaque[i].size(), 13u) << opaque[i];
    EXPECT_EQ(opaque[i][0], 'h') << opaque[i];
    EXPECT_EQ(id.find(opaque[i].substr(1)), std::string::npos) << "the label is part of the id";
    EXPECT_EQ(opaque[i], SessionLabel(sessions[i].id, false));
  }
  const std::vector<std::string> ids = labels(true);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], protocol::SessionIdToString(sessions[i].id));
}

TEST(MetricsCollectorTest, SerializesToTheTextFormat) {
  server::ServerStats stats;
  stats.totals.bytes_received = 42;
  const std::string text = prometheus::TextSerializer().Serialize(
      BuildMetricFamilies(stats, {FakeSession("job", 2)}, MetricsLimits{}));
  EXPECT_NE(text.find("# TYPE reducer_bytes_received_total counter\nreducer_bytes_received_total 42\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("reducer_piece_latency_seconds_bucket{le=\"+Inf\"} 0"), std::string::npos);
  EXPECT_NE(text.find("reducer_straggler_last_arrivals_total{rank=\"1\",session=\""), std::string::npos);
}

}  // namespace
}  // namespace rs::server
