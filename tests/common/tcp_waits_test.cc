// TcpWaitWatch and DescribeTcpWait (common/tcp_waits.h): a buffer that holds
// a connection back is reported once it took a fifth of a judged period (not
// in a connection's first one), with the setting that lifts it, and not again
// for ten minutes; the totals survive reconnects. ReadTcpPath (common/tcp_path.h) on a real loopback pair:
// a reader that cannot keep up shows as time waited for its receive window.
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "common/tcp_path.h"
#include "common/tcp_waits.h"
#include "tests/support/loopback_pair.h"

namespace rs {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using Clock = TcpWaitWatch::Clock;

// Counters of a connection whose first, unjudged period (2 s of busy time,
// no waits) is over: busy_ms, rwnd_ms and sndbuf_ms count from there.
TcpPath Counters(uint64_t busy_ms, uint64_t rwnd_ms, uint64_t sndbuf_ms) {
  TcpPath p;
  p.min_rtt_us = 40'200;
  p.delivery_rate_bps = 21 << 20;
  p.busy_us = (2000 + busy_ms) * 1000;
  p.rwnd_limited_us = rwnd_ms * 1000;
  p.sndbuf_limited_us = sndbuf_ms * 1000;
  return p;
}

// A watch past its connection's first period.
TcpWaitWatch Warm(Clock::time_point t) {
  TcpWaitWatch watch;
  EXPECT_FALSE(watch.OnSample(Counters(0, 0, 0), t));
  return watch;
}

TEST(TcpWaitWatch, AConnectionsFirstPeriodIsNotJudged) {
  // Receive buffers start small and grow over the first round trips: a wait
  // then is autotuning at work, not a ceiling.
  TcpWaitWatch watch;
  const Clock::time_point t0 = Clock::now();
  TcpPath first;
  first.busy_us = 2'000'000;
  first.rwnd_limited_us = 1'000'000;
  EXPECT_FALSE(watch.OnSample(first, t0));
  first.busy_us += 2'000'000;
  first.rwnd_limited_us += 1'000'000;
  EXPECT_TRUE(watch.OnSample(first, t0 + seconds(2))) << "the second period is judged";
}

TEST(TcpWaitWatch, JudgesNothingBeforeTwoSecondsOfSending) {
  const Clock::time_point t0 = Clock::now();
  TcpWaitWatch watch = Warm(t0);
  // Wholly limited, but only 1.9 s of busy time: too little to judge.
  EXPECT_FALSE(watch.OnSample(Counters(1900, 1900, 0), t0));
  EXPECT_TRUE(watch.OnSample(Counters(2100, 2000, 0), t0 + seconds(1)));
}

TEST(TcpWaitWatch, AReceiveWindowWaitOfAFifthOrMoreIsReportedWithTheSetting) {
  TcpWaitWatch watch = Warm(Clock::now());
  const auto finding = watch.OnSample(Counters(2000, 600, 100), Clock::now());
  ASSERT_TRUE(finding);
  EXPECT_EQ(finding->cause, TcpWait::kReceiveWindow);
  EXPECT_DOUBLE_EQ(finding->share, 0.3);
  const std::string line = DescribeTcpWait(*finding, "the reducer", 0);
  EXPECT_NE(line.find("30 % of the 2.0 s"), std::string::npos) << line;
  EXPECT_NE(line.find("the reducer's receive window (round trip 40.2 ms, 21 MiB/s delivered)"), std::string::npos)
      << line;
  EXPECT_NE(line.find("net.ipv4.tcp_rmem"), std::string::npos) << line;
}

TEST(TcpWaitWatch, ASendBufferWaitNamesTheBufferAndTcpWmem) {
  TcpWaitWatch watch = Warm(Clock::now());
  const auto finding = watch.OnSample(Counters(4000, 100, 2000), Clock::now());
  ASSERT_TRUE(finding);
  EXPECT_EQ(finding->cause, TcpWait::kSendBuffer);
  const std::string line = DescribeTcpWait(*finding, "rank 3", 4 << 20);
  EXPECT_NE(line.find("room in this host's send buffer"), std::string::npos) << line;
  EXPECT_NE(line.find("send buffer 4 MiB"), std::string::npos) << line;
  EXPECT_NE(line.find("net.ipv4.tcp_wmem"), std::string::npos) << line;
}

TEST(TcpWaitWatch, WaitsUnderAFifthAreNotReported) {
  TcpWaitWatch watch = Warm(Clock::now());
  EXPECT_FALSE(watch.OnSample(Counters(2000, 390, 300), Clock::now()));  // 19.5 % and 15 %
}

TEST(TcpWaitWatch, EachPeriodIsJudgedOnItsOwn) {
  const Clock::time_point t0 = Clock::now();
  TcpWaitWatch watch = Warm(t0);
  EXPECT_FALSE(watch.OnSample(Counters(2000, 0, 0), t0));
  // The second period is all waiting; the first one's clean seconds must not dilute it.
  EXPECT_TRUE(watch.OnSample(Counters(4000, 2000, 0), t0 + seconds(2)));
}

TEST(TcpWaitWatch, ACauseIsQuietForTenMinutesAfterItsReport) {
  const Clock::time_point t0 = Clock::now();
  TcpWaitWatch watch = Warm(t0);
  ASSERT_TRUE(watch.OnSample(Counters(2000, 2000, 0), t0));
  EXPECT_FALSE(watch.OnSample(Counters(4000, 4000, 0), t0 + minutes(9)));
  // The other cause has a quiet time of its own.
  EXPECT_TRUE(watch.OnSample(Counters(6000, 4000, 2000), t0 + minutes(9) + seconds(1)));
  EXPECT_TRUE(watch.OnSample(Counters(8000, 6000, 2000), t0 + minutes(11)));
}

TEST(TcpWaitWatch, TotalsAddUpOverReconnects) {
  TcpWaitWatch watch;
  const Clock::time_point t0 = Clock::now();
  auto at = [](uint64_t busy_ms, uint64_t rwnd_ms, uint64_t sndbuf_ms) {
    TcpPath p;
    p.busy_us = busy_ms * 1000;
    p.rwnd_limited_us = rwnd_ms * 1000;
    p.sndbuf_limited_us = sndbuf_ms * 1000;
    return p;
  };
  watch.OnSample(at(1000, 100, 10), t0);
  watch.OnSample(at(1500, 200, 10), t0 + seconds(1));
  watch.Reconnected();  // the new connection's counters start from 0
  watch.OnSample(at(700, 50, 5), t0 + seconds(2));
  EXPECT_EQ(watch.totals().busy_us, 2'200'000u);
  EXPECT_EQ(watch.totals().rwnd_limited_us, 250'000u);
  EXPECT_EQ(watch.totals().sndbuf_limited_us, 15'000u);
  // Counters going back without a Reconnected (a connection the watch was
  // not told about) also start again, rather than wrapping around.
  watch.OnSample(at(100, 0, 0), t0 + seconds(3));
  EXPECT_EQ(watch.totals().busy_us, 2'300'000u);
}

// A loopback pair whose reader takes 16 KiB a millisecond through a 4 KiB
// receive buffer: the writer's connection spends most of its busy time
// waiting for the reader's window.
TEST(ReadTcpPath, ASlowReaderShowsAsReceiveWindowWaits) {
  test::SlowLoopbackPair pair;
  ASSERT_TRUE(pair.ok());
  constexpr size_t kTotal = 2 << 20;
  pair.StartReading(kTotal, std::chrono::seconds(10));
  std::vector<char> data(kTotal, 'x');
  size_t sent = 0;
  while (sent < kTotal) {
    const ssize_t n = send(pair.sender(), data.data() + sent, kTotal - sent, 0);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ASSERT_EQ(sent, kTotal);
  // The send buffer takes the 2 MiB at once: the waiting happens after the
  // last send returns, while the reader drains it. Read the counters once
  // the reader has most of it (bounded: 10 s).
  for (int i = 0; i < 10000 && pair.received() < kTotal * 3 / 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const std::optional<TcpPath> path = ReadTcpPath(pair.sender());
  pair.StopReading();
  ASSERT_TRUE(path);
  if (path->busy_us == 0) GTEST_SKIP() << "this kernel's TCP_INFO has no busy time (before 4.10)";
  EXPECT_GT(path->rwnd_limited_us, path->busy_us / 4) << "busy " << path->busy_us << " us";
  EXPECT_LE(path->rwnd_limited_us, path->busy_us);
  EXPECT_EQ(path->sndbuf_limited_us, 0u) << "loopback acknowledges at once: the send buffer never holds it back";
}

}  // namespace
}  // namespace rs
