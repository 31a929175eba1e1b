// A stream's view of its TCP path, fed samples as TCP_INFO would give them
// and no socket (the floor of the retransmission timeout is left at the
// kernel's, so none is touched): the automatic window follows the path and
// the user's does not move, samples are taken at most every few
// milliseconds, and TCP's waits are totalled for the metrics across
// connections and warned about, naming the stream, once a buffer holds it
// back.
#include "client/path_sampler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

namespace rs::client {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr size_t kPiece = 1 << 20;
constexpr milliseconds kKernelFloor{0};
const char* const kSampledPeer = "reducer 10.0.0.5:7450 (stream 1)";

// A short path (under kIdleRestartRoundTrip: no warning about idle restarts,
// which depends on the host) and a fast one.
TcpPath FastPath() {
  TcpPath path;
  path.min_rtt_us = 2000;
  path.delivery_rate_bps = 5'000'000'000;
  return path;
}

TEST(PathSampler, TheAutomaticWindowFollowsThePath) {
  PathSampler sampler(kSampledPeer, std::nullopt, kPiece, kKernelFloor);
  const size_t unknown = AutoSendWindow(kPiece, 0, {});
  EXPECT_EQ(sampler.window_now(), unknown) << "before any sample: the window for an unknown path";
  const TcpPath path = FastPath();
  EXPECT_TRUE(sampler.OnPath(path, Clock::now(), -1).empty());
  const size_t want = AutoSendWindow(kPiece, path.delivery_rate_bps, microseconds(path.min_rtt_us));
  ASSERT_GT(want, unknown) << "the path's bandwidth-delay product calls for more";
  EXPECT_EQ(sampler.window_bytes(), want);
  EXPECT_EQ(sampler.window_now(), want) << "what the client's metrics read";
  EXPECT_EQ(sampler.write_slice(), AutoWriteSlice(path.delivery_rate_bps));
}

TEST(PathSampler, TheUsersWindowNeverMoves) {
  PathSampler sampler(kSampledPeer, size_t{3} << 20, kPiece, kKernelFloor);
  EXPECT_EQ(sampler.window_now(), size_t{3} << 20);
  const TcpPath path = FastPath();
  sampler.OnPath(path, Clock::now(), -1);
  EXPECT_EQ(sampler.window_bytes(), size_t{3} << 20);
  EXPECT_EQ(sampler.window_now(), size_t{3} << 20);
  EXPECT_EQ(sampler.write_slice(), AutoWriteSlice(path.delivery_rate_bps)) << "the slice follows the path all the same";
}

TEST(PathSampler, SamplesAreTakenAtMostOncePerInterval) {
  PathSampler sampler(kSampledPeer, std::nullopt, kPiece, kKernelFloor);
  const Clock::time_point t0 = Clock::now();
  EXPECT_TRUE(sampler.due(t0));
  sampler.OnPath(FastPath(), t0, -1);
  EXPECT_FALSE(sampler.due(t0 + milliseconds(1))) << "results arrive far more often than the path changes";
  EXPECT_TRUE(sampler.due(t0 + SendWindow::kSampleInterval));
}

TEST(PathSampler, TcpWaitsAreTotalledAcrossConnectionsAndABufferHoldingTheStreamBackIsNamed) {
  PathSampler sampler(kSampledPeer, std::nullopt, kPiece, kKernelFloor);
  Clock::time_point t = Clock::now();
  TcpPath path = FastPath();
  EXPECT_TRUE(sampler.Connected(-1).empty());
  // The connection's first period is not judged (its receive buffer is
  // still growing), even with waits in it.
  path.busy_us = 2'000'000;
  path.rwnd_limited_us = 1'000'000;
  EXPECT_TRUE(sampler.OnPath(path, t, -1).empty());
  // The next one is: half of it waiting on the reducer's receive window.
  t += milliseconds(10);
  path.busy_us = 4'000'000;
  path.rwnd_limited_us = 2'000'000;
  const std::vector<PathSampler::LogLine> lines = sampler.OnPath(path, t, -1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].level, LogLevel::kWarn);
  EXPECT_EQ(lines[0].message.rfind(std::string(kSampledPeer) + ": ", 0), 0u) << lines[0].message;
  EXPECT_NE(lines[0].message.find("the reducer's receive window"), std::string::npos) << lines[0].message;
  EXPECT_EQ(sampler.tcp_waits().busy_us, 4'000'000u);
  EXPECT_EQ(sampler.tcp_waits().rwnd_limited_us, 2'000'000u);
  // A new connection's counters start from 0; the totals go on.
  EXPECT_TRUE(sampler.Connected(-1).empty());
  t += milliseconds(10);
  path.busy_us = 500'000;
  path.rwnd_limited_us = 0;
  path.sndbuf_limited_us = 100'000;
  EXPECT_TRUE(sampler.OnPath(path, t, -1).empty());
  EXPECT_EQ(sampler.tcp_waits().busy_us, 4'500'000u);
  EXPECT_EQ(sampler.tcp_waits().rwnd_limited_us, 2'000'000u);
  EXPECT_EQ(sampler.tcp_waits().sndbuf_limited_us, 100'000u);
}

TEST(PathSampler, NoWarningWhileTheWaitsStayASmallShare) {
  PathSampler sampler(kSampledPeer, std::nullopt, kPiece, kKernelFloor);
  Clock::time_point t = Clock::now();
  TcpPath path = FastPath();
  for (uint64_t period = 1; period <= 4; ++period) {
    path.busy_us = period * 2'000'000;
    path.rwnd_limited_us = period * 200'000;  // 10 %
    EXPECT_TRUE(sampler.OnPath(path, t, -1).empty()) << "period " << period;
    t += milliseconds(10);
  }
}

}  // namespace
}  // namespace rs::client
