// reducerd's Prometheus metrics as real tools see them: promtool accepts
// the exposition, a real Prometheus server scrapes the bytes the clients
// sent, and a deliberately slow rank is named the straggler.
#include <gtest/gtest.h>
#include <unistd.h>

#include <asio.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "protocol/auth.h"
#include "tests/support/control_helpers.h"
#include "tests/support/http_get.h"

namespace rs::testing {
namespace {

constexpr char kPromtool[] = "/usr/bin/promtool";
constexpr char kPrometheus[] = "/usr/bin/prometheus";

bool Executable(const char* path) { return access(path, X_OK) == 0; }

std::string Scrape(const ControlledReducer& reducer) {
  auto body = HttpGet(reducer.metrics_port(), "/metrics");
  EXPECT_TRUE(body.ok()) << body.status().ToString();
  return body.ok() ? *body : std::string();
}

// A Prometheus server on 127.0.0.1 scraping one target every second, with
// its own config and storage in a temporary folder.
class PrometheusServer {
 public:
  explicit PrometheusServer(uint16_t target_port) : dir_(MakeDir()), port_(FreePort()) {
    std::ofstream(dir_ + "/prometheus.yml") << "global:\n"
                                               "  scrape_interval: 1s\n"
                                               "scrape_configs:\n"
                                               "  - job_name: reducerd\n"
                                               "    static_configs:\n"
                                               "      - targets: ['127.0.0.1:"
                                            << target_port << "']\n";
    process_ = std::make_unique<ChildProcess>(std::vector<std::string>{
        kPrometheus, "--config.file=" + dir_ + "/prometheus.yml", "--storage.tsdb.path=" + dir_ + "/data",
        "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"});
  }
  ~PrometheusServer() {
    process_->Kill();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);  // its TSDB
  }

  // Polls an instant query until its first sample's value satisfies `done`
  // (bounded); returns the last value seen, or -1.
  template <typename Pred>
  double QueryUntil(const std::string& query, Pred done, std::chrono::seconds timeout) {
    const std::regex value_re(R"re("value":\[[0-9.e+]+,"([^"]+)"\])re");
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    double last = -1;
    while (std::chrono::steady_clock::now() < deadline) {
      auto body = HttpGet(port_, "/api/v1/query?query=" + UrlEncode(query), std::chrono::seconds(5));
      std::smatch m;
      if (body.ok() && std::regex_search(*body, m, value_re)) {
        last = std::stod(m[1]);
        if (done(last)) return last;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return last;
  }
  std::string Output() const { return process_->Output(); }

 private:
  static std::string MakeDir() {
    char tmpl[] = "/tmp/rs-prometheus-XXXXXX";
    const char* dir = mkdtemp(tmpl);
    return dir ? dir : "/tmp";
  }
  std::string dir_;
  uint16_t port_;
  std::unique_ptr<ChildProcess> process_;
};

TEST(MetricsIntegrationTest, PromtoolAcceptsTheExpositionAfterARun) {
  if (!Executable(kPromtool)) GTEST_SKIP() << kPromtool << " not found (Debian package 'prometheus')";
  ControlledReducer reducer;
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  {
    auto clients = JoinSession({reducer.process().endpoint()}, "metrics-promtool", 3);
    ASSERT_EQ(clients.size(), 3u);
    RunOps(clients, 4, 300000);
  }
  // A stream that is not a worker is rejected, and counted as a protocol error.
  {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), reducer.process().port()});
    asio::write(s, asio::buffer(std::string(16, 'x')));
    std::array<char, 256> buf;
    asio::error_code ec;
    while (!ec) s.read_some(asio::buffer(buf), ec);  // until the reducer closes
  }
  const std::string text = Scrape(reducer);
  const std::string path = ::testing::TempDir() + "/reducerd-metrics.txt";
  std::ofstream(path) << text;
  const CommandResult check = RunCommand({"/bin/sh", "-c", std::string(kPromtool) + " check metrics < " + path});
  EXPECT_EQ(check.code, 0) << check.output << "\n" << text;
  EXPECT_EQ(ScrapeValue(text, "reducer_operations_completed_total"), 4);
  // How many pieces the client cuts a 1.2 MB operation into is its business: at least 2.
  EXPECT_GE(ScrapeValue(text, "reducer_pieces_completed_total"), 4 * 2);
  EXPECT_GT(ScrapeValue(text, "reducer_piece_latency_seconds_count"), 0);
  EXPECT_EQ(ScrapeValue(text, "reducer_sessions_started_total"), 1);
  EXPECT_EQ(ScrapeValue(text, "reducer_errors_total{kind=\"protocol\"}"), 1) << text;
  EXPECT_EQ(ScrapeValue(text, "reducer_errors_total{kind=\"timeout\"}"), 0);
}

TEST(MetricsIntegrationTest, ARealPrometheusScrapesTheBytesTheClientsSent) {
  if (!Executable(kPrometheus)) GTEST_SKIP() << kPrometheus << " not found (Debian package 'prometheus')";
  ControlledReducer reducer;
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  constexpr uint32_t kWorld = 4;
  constexpr int kOps = 6;
  constexpr size_t kCount = 500000;
  {
    auto clients = JoinSession({reducer.process().endpoint()}, "metrics-prometheus", kWorld);
    ASSERT_EQ(clients.size(), kWorld);
    RunOps(clients, kOps, kCount);
  }
  const double sent_by_clients = double{kWorld} * kOps * kCount * sizeof(float);
  PrometheusServer prometheus(reducer.metrics_port());
  const double seen = prometheus.QueryUntil(
      "reducer_bytes_received_total", [&](double v) { return v == sent_by_clients; }, std::chrono::seconds(90));
  EXPECT_EQ(seen, sent_by_clients) << prometheus.Output();
  // The scrape itself is healthy: Prometheus' own view of the target.
  EXPECT_EQ(prometheus.QueryUntil(
                "up{job=\"reducerd\"}", [](double v) { return v == 1; }, std::chrono::seconds(30)),
            1.0);
}

TEST(MetricsIntegrationTest, ADelayedRankIsNamedTheStragglerAndItsDelayShows) {
  ControlledReducer reducer({"--metrics-session-ids", "1"});
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  constexpr int kSlowRank = 2;
  constexpr int kOps = 8;
  constexpr auto kDelay = std::chrono::milliseconds(60);
  const std::string id = protocol::SessionIdToString(protocol::SessionIdFromName("metrics-straggler"));
  auto clients = JoinSession({reducer.process().endpoint()}, "metrics-straggler", 4);
  ASSERT_EQ(clients.size(), 4u);
  RunOps(clients, kOps, 1024, kSlowRank, kDelay);  // one piece per operation

  const std::string text = Scrape(reducer);
  double slowest = -1;
  for (int r = 0; r < 4; ++r) {
    const double v = ScrapeValue(text, "reducer_straggler_last_arrivals_total{rank=\"" + std::to_string(r) +
                                           "\",session=\"" + id + "\"}");
    if (r == kSlowRank) {
      slowest = v;
    } else {
      EXPECT_LT(v, 2) << "rank " << r << "\n" << text;  // absent (-1) or rarely last
    }
  }
  EXPECT_GE(slowest, kOps - 1) << text;
  // Nearly every piece waited about the delay for its last contribution.
  const double count = ScrapeValue(text, "reducer_straggler_wait_seconds_count");
  const double quick = ScrapeValue(text, "reducer_straggler_wait_seconds_bucket{le=\"0.025\"}");
  EXPECT_EQ(count, kOps);
  EXPECT_LE(quick, 1) << text;
  EXPECT_GE(ScrapeValue(text, "reducer_straggler_wait_seconds_sum"), 0.8 * kOps * 0.060);

  // The same answer over gRPC.
  v1::SessionInfo info;
  ASSERT_TRUE(reducer.GetSession(id, &info).ok());
  ASSERT_GE(info.slowest_ranks_size(), 1);
  EXPECT_EQ(info.slowest_ranks(0).rank(), static_cast<uint32_t>(kSlowRank));
  EXPECT_GE(info.straggler_wait_seconds(), 0.8 * kOps * 0.060);
}

// The time the reducer spent sending results counts whatever the ranks'
// liveness setting: with liveness off (no ticks) and in a session shorter
// than one tick (a 60 s timeout ticks every 6 s), the last interval is
// sampled when the streams leave.
double SendBusySecondsAfterARun(std::chrono::milliseconds liveness, const std::string& name) {
  ControlledReducer reducer;
  EXPECT_TRUE(reducer.ok()) << reducer.process().Log();
  if (!reducer.ok()) return -1;
  {
    auto clients = JoinSession({reducer.process().endpoint()}, name, 3,
                               [&](client::ClientOptions& o) { o.liveness_timeout = liveness; });
    EXPECT_EQ(clients.size(), 3u);
    if (clients.size() != 3u) return -1;
    RunOps(clients, 20, 1 << 20);  // 4 MiB results to each rank
  }
  // The streams leave as the clients close; the reducer counts then.
  double busy = 0;
  for (int i = 0; i < 50 && busy <= 0; ++i) {
    busy = ScrapeValue(Scrape(reducer), "reducer_tcp_send_busy_seconds_total");
    if (busy <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return busy;
}

TEST(MetricsIntegrationTest, TheTimeSpentSendingResultsIsCountedWithLivenessOff) {
  const double busy = SendBusySecondsAfterARun(std::chrono::milliseconds(0), "metrics-busy-no-liveness");
  EXPECT_GE(busy, 0.005) << "seconds";
}

TEST(MetricsIntegrationTest, TheTimeSpentSendingResultsIsCountedInASessionShorterThanATick) {
  const double busy = SendBusySecondsAfterARun(std::chrono::seconds(60), "metrics-busy-short");
  EXPECT_GE(busy, 0.005) << "seconds";
}

TEST(MetricsIntegrationTest, ScrapersThatNeverFinishTheirRequestDoNotStallTheDataPlane) {
  ControlledReducer reducer;
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  // Half-sent requests hold every HTTP worker of the metrics endpoint.
  asio::io_context io;
  std::vector<asio::ip::tcp::socket> slow;
  for (int i = 0; i < 4; ++i) {
    slow.emplace_back(io);
    slow.back().connect({asio::ip::make_address("127.0.0.1"), reducer.metrics_port()});
    asio::write(slow.back(), asio::buffer(std::string("GET /metr")));
  }
  const auto start = std::chrono::steady_clock::now();
  {
    auto clients = JoinSession({reducer.process().endpoint()}, "metrics-slow-scrapers", 4);
    ASSERT_EQ(clients.size(), 4u);
    RunOps(clients, 20, 1 << 18);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  v1::ServerStatus status;
  ASSERT_TRUE(reducer.GetStatus(&status).ok());  // gRPC has threads of its own
  EXPECT_EQ(status.operations_completed(), 20u);
  slow.clear();
  EXPECT_EQ(ScrapeValue(Scrape(reducer), "reducer_operations_completed_total"), 20);
}

}  // namespace
}  // namespace rs::testing
