// The transport settings a user gets without setting any (client/
// transport_plan.h), through real reducerd processes: every rank derives the
// same streams and piece size from the reducer list, so a session forms and
// its results are right; the send window starts at 4 pieces and only grows
// from there; the I/O threads follow the machine (loopback reports no speed,
// so the cores decide, at most one per stream) and the log says why; TCP
// pacing stays off for a job this small and comes on, saying why, when
// enough streams meet at a reducer; settings given explicitly are used as
// given, pacing included; a job of many ranks cuts its small all-reduces
// into smaller pieces, and the reducers its results into smaller parts, each
// saying so, and they still sum right.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "client/transport_plan.h"
#include "common/host_capacity.h"
#include "tests/support/test_cluster.h"
#include "tests/support/test_data.h"

namespace rs::testing {
namespace {

constexpr uint32_t kTransportWorld = 3;

// Runs one float32 sum of `count` elements on every rank and checks it;
// returns rank 0's stats afterwards.
client::ClientStats RunOnce(const std::vector<client::Endpoint>& reducers, const std::string& session,
                            const std::function<void(client::ClientOptions*)>& tweak, size_t count,
                            uint32_t world = kTransportWorld) {
  std::vector<std::vector<uint8_t>> inputs;
  for (uint32_t r = 0; r < world; ++r) inputs.push_back(RandomInput(DataType::kFloat32, count, 40 + r));
  const auto want = RankOrderReference(DataType::kFloat32, ReduceOp::kSum, count, inputs);
  client::ClientStats stats;
  RunRanks(world, [&](uint32_t rank) {
    client::ClientOptions o = Options(reducers, session, rank, world, "");
    tweak(&o);
    auto c = client::Client::Create(std::move(o));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::vector<uint8_t> recv(inputs[rank].size());
    auto op = (*c)->AllReduce(inputs[rank].data(), recv.data(), count, DataType::kFloat32, ReduceOp::kSum);
    ASSERT_TRUE(op->Wait(std::chrono::seconds(60)).ok()) << op->status().ToString();
    EXPECT_TRUE(recv == want) << "rank " << rank << ": result differs from the rank-order reduction";
    if (rank == 0) stats = (*c)->stats();
  });
  return stats;
}

// The lines of every rank's log that contain `wanted`, gathered while the
// ranks run.
class LinesWith {
 public:
  explicit LinesWith(std::string wanted) : wanted_(std::move(wanted)) {}
  void Attach(client::ClientOptions* o) {
    o->log = [this](client::LogLevel, const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      if (line.find(wanted_) != std::string::npos) lines_.push_back(line);
    };
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  const std::string wanted_;
  std::mutex mu_;
  std::vector<std::string> lines_;
};

TEST(TransportDefaults, UnsetSettingsAreChosenAlikeOnEveryRank) {
  ReducerProcess a, b;
  ASSERT_TRUE(a.ok()) << a.Log();
  ASSERT_TRUE(b.ok()) << b.Log();
  LinesWith threads("I/O thread");
  const client::ClientStats st = RunOnce(
      {a.endpoint(), b.endpoint()}, "transport-auto", [&](client::ClientOptions* o) { threads.Attach(o); },
      3'000'001);
  const std::vector<std::string> thread_lines = threads.lines();
  EXPECT_EQ(st.streams_per_reducer, client::AutoStreams(2));
  HostCapacity loopback;
  loopback.cores = UsableCores();
  const int streams = 2 * client::AutoStreams(2);
  EXPECT_EQ(st.io_threads, AutoIoThreads(loopback, streams).threads);
  ASSERT_EQ(thread_lines.size(), kTransportWorld) << "one line per rank";
  EXPECT_NE(thread_lines[0].find("(automatic: the link's speed is unknown (lo reports no speed)"), std::string::npos)
      << thread_lines[0];
  EXPECT_EQ(st.piece_bytes, client::AutoPieceBytes(2));
  // At least 4 pieces (more only where TCP measured a long path).
  EXPECT_GE(st.send_window_min, 4 * client::AutoPieceBytes(2));
  EXPECT_LE(st.send_window_max, client::kMaxAutoWindow);
  EXPECT_FALSE(st.tcp_paced) << "3 ranks: a reducer hears 3 streams, below the 16 that turn pacing on";
}

// 3 ranks with 6 streams each: every reducer hears 18 streams, so pacing
// comes on by itself, each rank says so once and why, and the results are
// right.
TEST(TransportDefaults, ManyStreamsIntoAReducerArePacedAndTheLogSaysWhy) {
  ReducerProcess a, b;
  ASSERT_TRUE(a.ok()) << a.Log();
  ASSERT_TRUE(b.ok()) << b.Log();
  LinesWith pacing("TCP pacing");
  const client::ClientStats st = RunOnce(
      {a.endpoint(), b.endpoint()}, "transport-paced",
      [&](client::ClientOptions* o) {
        o->streams_per_reducer = 6;
        pacing.Attach(o);
      },
      1'000'003);
  const std::vector<std::string> pacing_lines = pacing.lines();
  ASSERT_TRUE(client::AutoTcpPacing(kTransportWorld, 6));
  EXPECT_TRUE(st.tcp_paced);
  ASSERT_EQ(pacing_lines.size(), kTransportWorld) << "one line per rank";
  EXPECT_NE(pacing_lines[0].find("automatic: each reducer hears 18 streams, at least 16"), std::string::npos)
      << pacing_lines[0];
  EXPECT_NE(pacing_lines[0].find("REDUCER_TCP_PACING=0"), std::string::npos) << pacing_lines[0];
}

// 8 ranks: the smallest piece is 256 KiB / 8 = 32 KiB instead of 64 KiB, so
// a 128 KiB all-reduce reaches all 4 reducers, not 2; each rank says so once
// and why, and the sum is right. 3 ranks keep 64 KiB and say nothing of it.
// The reducers say the results' smaller parts: 8 KiB at 8 ranks, 20 at 3.
TEST(TransportDefaults, SmallAllReducesOfManyRanksReachMoreReducers) {
  constexpr uint32_t kWorld = 8;
  ReducerProcess a, b, c, d;
  for (const ReducerProcess* r : {&a, &b, &c, &d}) ASSERT_TRUE(r->ok()) << r->Log();
  const std::vector<client::Endpoint> reducers = {a.endpoint(), b.endpoint(), c.endpoint(), d.endpoint()};
  LinesWith pieces("small all-reduces");
  const client::ClientStats st = RunOnce(
      reducers, "transport-small-pieces", [&](client::ClientOptions* o) { pieces.Attach(o); }, (128 << 10) / 4,
      kWorld);
  const std::vector<std::string> piece_lines = pieces.lines();
  EXPECT_EQ(st.min_piece_bytes, size_t{32} << 10);
  ASSERT_EQ(piece_lines.size(), kWorld) << "one line per rank";
  EXPECT_NE(piece_lines[0].find("pieces down to 32 KiB to reach more reducers (automatic: 256 KiB / 8 ranks"),
            std::string::npos)
      << piece_lines[0];
  EXPECT_NE(piece_lines[0].find("REDUCER_MIN_PIECE"), std::string::npos) << piece_lines[0];
  // The reducers cut the results of many ranks into smaller parts, saying so
  // in the session's opening line.
  const std::string opened =
      "results in parts of at least 8 KiB, automatic: 64 KiB / 8 ranks (--result-part sets it)";
  EXPECT_NE(a.Log().find(opened), std::string::npos) << a.Log();

  LinesWith quiet("small all-reduces");
  const client::ClientStats few = RunOnce(
      reducers, "transport-small-pieces-3", [&](client::ClientOptions* o) { quiet.Attach(o); }, (128 << 10) / 4);
  EXPECT_EQ(few.min_piece_bytes, size_t{64} << 10);
  EXPECT_TRUE(quiet.lines().empty()) << quiet.lines()[0];
  const std::string log = a.Log();
  const size_t small_job = log.find("(world 3,");
  ASSERT_NE(small_job, std::string::npos) << log;
  EXPECT_NE(log.find("results in parts of at least 20 KiB, automatic: 64 KiB / 3 ranks", small_job), std::string::npos)
      << log;
}

TEST(TransportDefaults, ExplicitSettingsWin) {
  ReducerProcess a, b;
  ASSERT_TRUE(a.ok()) << a.Log();
  ASSERT_TRUE(b.ok()) << b.Log();
  const client::ClientStats st = RunOnce(
      {a.endpoint(), b.endpoint()}, "transport-explicit",
      [](client::ClientOptions* o) {
        o->streams_per_reducer = 2;
        o->max_piece_bytes = 96 << 10;
        o->send_window_bytes = 0;  // no limit
        o->io_threads = 3;
        o->tcp_pacing = true;  // 3 ranks would leave it off
        o->min_piece_bytes = 8 << 10;
      },
      1'000'003);
  EXPECT_EQ(st.streams_per_reducer, 2);
  EXPECT_EQ(st.io_threads, 3);
  EXPECT_EQ(st.piece_bytes, size_t{96} << 10);
  EXPECT_EQ(st.min_piece_bytes, size_t{8} << 10);
  EXPECT_EQ(st.send_window_min, 0u);
  EXPECT_EQ(st.send_window_max, 0u);
  EXPECT_TRUE(st.tcp_paced);  // and the results are right (RunOnce), paced
}

}  // namespace
}  // namespace rs::testing
