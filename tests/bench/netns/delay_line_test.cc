// rs-delay-line's forwarding core (bench/netns/delay_line.h) over
// SOCK_SEQPACKET socket pairs standing in for tap devices: no root, no
// namespaces. What the harness relies on: no frame arrives before the delay,
// frames arrive whole and in order, both directions, on every link whatever
// the thread count; a full queue drops and counts instead of growing; Run
// returns when told to stop. Waits are bounded (poll with a timeout), never
// sleeps.
#include "bench/netns/delay_line.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

namespace rs::delay_line {
namespace {

constexpr int kWaitMs = 10000;  // a hang guard, not a timing check

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// One link: `outside_a` and `outside_b` are what the hosts would hold; the
// delay line gets the other ends.
struct TestLink {
  Fd outside_a, line_a, outside_b, line_b;

  static TestLink Make() {
    TestLink l;
    int a[2], b[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, a), 0);
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, b), 0);
    l.outside_a = Fd(a[0]);
    l.line_a = Fd(a[1]);
    l.outside_b = Fd(b[0]);
    l.line_b = Fd(b[1]);
    return l;
  }
  LinkEnds Ends(const std::string& name) const { return {line_a.get(), line_b.get(), name + "a", name + "b"}; }
};

// A frame as a tap would hand it over: at least a virtio_net_hdr's 10 bytes.
std::string MakeFrame(const std::string& tag) { return std::string(10, '\0') + tag + std::string(50, 'x'); }

void Send(const Fd& fd, const std::string& frame) {
  ASSERT_EQ(write(fd.get(), frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
}

// The next frame on `fd`, or "" when none came within kWaitMs.
std::string Receive(const Fd& fd) {
  pollfd p{fd.get(), POLLIN, 0};
  if (poll(&p, 1, kWaitMs) != 1) return "";
  char buf[4096];
  const ssize_t n = read(fd.get(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Runs a DelayLine on another thread until Stop().
class Running {
 public:
  Running(const DelayLineOptions& o, const std::vector<LinkEnds>& links) : stop_(eventfd(0, EFD_CLOEXEC)) {
    auto line = DelayLine::Create(o, links);
    EXPECT_TRUE(line.ok()) << line.status().ToString();
    if (line.ok()) line_ = std::move(*line);
    if (line_) result_ = std::async(std::launch::async, [this] { return line_->Run(stop_.get()); });
  }
  ~Running() {
    if (result_.valid()) {
      EXPECT_TRUE(Stop().ok());
    }
  }
  Status Stop() {
    const uint64_t one = 1;
    EXPECT_EQ(write(stop_.get(), &one, sizeof one), 8);
    EXPECT_EQ(result_.wait_for(std::chrono::milliseconds(kWaitMs)), std::future_status::ready);
    return result_.get();
  }
  DelayLine& line() { return *line_; }

 private:
  Fd stop_;
  std::unique_ptr<DelayLine> line_;
  std::future<Status> result_;
};

TEST(DelayLineTest, ForwardsBothWaysInOrderNeverBeforeTheDelay) {
  constexpr int64_t kDelayNs = 30'000'000;
  TestLink link = TestLink::Make();
  DelayLineOptions o;
  o.delay_ns = kDelayNs;
  Running running(o, {link.Ends("h0:eth0/")});

  std::vector<int64_t> sent;
  for (int i = 0; i < 5; ++i) {
    sent.push_back(NowNs());
    Send(link.outside_a, MakeFrame("a" + std::to_string(i)));
  }
  Send(link.outside_b, MakeFrame("b0"));
  for (int i = 0; i < 5; ++i) {
    const std::string got = Receive(link.outside_b);
    const int64_t at = NowNs();
    ASSERT_EQ(got, MakeFrame("a" + std::to_string(i))) << "frame " << i;
    EXPECT_GE(at - sent[i], kDelayNs) << "frame " << i << " came early";
  }
  EXPECT_EQ(Receive(link.outside_a), MakeFrame("b0"));

  ASSERT_TRUE(running.Stop().ok());
  const std::vector<DirectionStats> stats = running.line().Stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].name, "h0:eth0/a->h0:eth0/b");
  EXPECT_EQ(stats[0].frames, 5u);
  EXPECT_EQ(stats[0].bytes, 5 * MakeFrame("a0").size());
  EXPECT_EQ(stats[1].frames, 1u);
  EXPECT_EQ(stats[0].drops + stats[1].drops, 0u);
  EXPECT_EQ(stats[0].late.total, 5u);
}

// Links spread over threads (more threads than links included) all work.
TEST(DelayLineTest, EveryLinkForwardsWhateverTheThreadCount) {
  for (int threads : {1, 2, 4}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    std::vector<TestLink> links;
    std::vector<LinkEnds> ends;
    for (int k = 0; k < 3; ++k) {
      links.push_back(TestLink::Make());
      ends.push_back(links.back().Ends("l" + std::to_string(k)));
    }
    DelayLineOptions o;
    o.delay_ns = 1'000'000;
    o.threads = threads;
    Running running(o, ends);
    EXPECT_EQ(running.line().threads(), std::min(threads, 3));
    for (int k = 0; k < 3; ++k) {
      Send(links[k].outside_b, MakeFrame("to a on " + std::to_string(k)));
      Send(links[k].outside_a, MakeFrame("to b on " + std::to_string(k)));
    }
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(Receive(links[k].outside_a), MakeFrame("to a on " + std::to_string(k)));
      EXPECT_EQ(Receive(links[k].outside_b), MakeFrame("to b on " + std::to_string(k)));
    }
    ASSERT_TRUE(running.Stop().ok());
    const std::vector<DirectionStats> stats = running.line().Stats();
    ASSERT_EQ(stats.size(), 6u);
    for (const DirectionStats& d : stats) EXPECT_EQ(d.frames, 1u) << d.name;
  }
}

// A queue holds at most queue_limit bytes: the rest is dropped and counted.
// The delay (1 s) is far longer than sending the burst takes.
TEST(DelayLineTest, FullQueueDropsAndCounts) {
  TestLink link = TestLink::Make();
  const std::string frame = MakeFrame("f");
  DelayLineOptions o;
  o.delay_ns = 1'000'000'000;
  o.queue_limit = 4 * frame.size();
  Running running(o, {link.Ends("x")});
  for (int i = 0; i < 10; ++i) Send(link.outside_a, frame);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Receive(link.outside_b), frame) << "frame " << i;
  ASSERT_TRUE(running.Stop().ok());
  const DirectionStats d = running.line().Stats()[0];
  EXPECT_EQ(d.frames, 4u);
  EXPECT_EQ(d.drops, 6u);
  EXPECT_EQ(d.drop_bytes, 6 * frame.size());
  EXPECT_EQ(d.max_queued_bytes, 4 * frame.size());
}

TEST(DelayLineTest, ParseDelayNeedsAUnitAndResolvesMicroseconds) {
  EXPECT_EQ(*ParseDelay("20ms"), 20'000'000);
  EXPECT_EQ(*ParseDelay("500us"), 500'000);
  EXPECT_EQ(*ParseDelay("0.02s"), 20'000'000);
  EXPECT_EQ(*ParseDelay("1.5ms"), 1'500'000);
  EXPECT_EQ(*ParseDelay("0"), 0);
  EXPECT_EQ(*ParseDelay("0.0004ms"), 0);  // below a microsecond
  EXPECT_FALSE(ParseDelay("5").ok());     // tc's microseconds or a person's milliseconds?
  EXPECT_FALSE(ParseDelay("5 ms").ok());
  EXPECT_FALSE(ParseDelay("-1ms").ok());
  EXPECT_FALSE(ParseDelay("61s").ok());
  EXPECT_FALSE(ParseDelay("").ok());
}

TEST(DelayLineTest, LatenessQuantilesAreUpperBounds) {
  Lateness l;
  for (int i = 0; i < 98; ++i) l.Add(10'000);  // 10 us
  l.Add(3'000'000);                            // 3 ms
  l.Add(3'000'000);
  EXPECT_EQ(l.QuantileUs(0.5), 16);
  EXPECT_EQ(l.QuantileUs(0.99), 4096);
  EXPECT_EQ(l.max_ns, 3'000'000);
  EXPECT_EQ(l.total, 100u);
}

}  // namespace
}  // namespace rs::delay_line
