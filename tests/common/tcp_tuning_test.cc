// common/tcp_tuning.h on real sockets: what a user relies on is that the
// data plane runs cubic (or reno) where the host's default is bbr, keeps any
// other default, honours an explicit choice or says why not, lowers the
// retransmission timeout's floor where the kernel allows it, paces when
// asked, and says each outcome once.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "common/tcp_tuning.h"

namespace rs {
namespace {

using std::chrono::milliseconds;

std::string Congestion(int fd) {
  char name[32] = {};
  socklen_t len = sizeof(name) - 1;
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "";
  return std::string(name, strnlen(name, len));
}

struct Sock {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ~Sock() { close(fd); }
};

TEST(TcpTuning, SettingsAreCheckedAndErrorsNameTheSetting) {
  EXPECT_TRUE(ValidateTcpCongestion("REDUCER_TCP_CONGESTION", "auto").ok());
  EXPECT_TRUE(ValidateTcpCongestion("REDUCER_TCP_CONGESTION", "system").ok());
  EXPECT_TRUE(ValidateTcpCongestion("REDUCER_TCP_CONGESTION", "bbr").ok());
  for (const char* bad : {"", "cubic reno", "../x", "a_name_of_16_chr"}) {
    const Status s = ValidateTcpCongestion("REDUCER_TCP_CONGESTION", bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("REDUCER_TCP_CONGESTION"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(ValidateTcpRtoMin("--tcp-rto-min", milliseconds(0)).ok());
  EXPECT_TRUE(ValidateTcpRtoMin("--tcp-rto-min", milliseconds(200)).ok());
  const Status s = ValidateTcpRtoMin("--tcp-rto-min", milliseconds(201));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--tcp-rto-min"), std::string::npos) << s.message();
}

TEST(TcpTuning, SystemLeavesTheSocketAsTheHostMadeIt) {
  Sock sock;
  const std::string before = Congestion(sock.fd);
  const TcpTuningResult r = ApplyTcpTuning(sock.fd, TcpTuning{"system", milliseconds(0)});
  EXPECT_EQ(Congestion(sock.fd), before);
  EXPECT_EQ(r.congestion, before);
  EXPECT_EQ(r.host_default, before);
  EXPECT_FALSE(r.rto_min.has_value());
  EXPECT_FALSE(r.refused);
}

TEST(TcpTuning, RenoIsOpenToEveryProcess) {
  Sock sock;
  const TcpTuningResult r = ApplyTcpTuning(sock.fd, TcpTuning{"reno", milliseconds(0)});
  EXPECT_EQ(Congestion(sock.fd), "reno");
  EXPECT_EQ(r.congestion, "reno");
  EXPECT_FALSE(r.refused);
}

TEST(TcpTuning, AnUnknownAlgorithmKeepsTheDefaultAndSaysWhy) {
  Sock sock;
  const std::string before = Congestion(sock.fd);
  const TcpTuningResult r = ApplyTcpTuning(sock.fd, TcpTuning{"nosuchcc", milliseconds(0)});
  EXPECT_EQ(Congestion(sock.fd), before);
  EXPECT_TRUE(r.refused);
  EXPECT_NE(r.Describe().find("nosuchcc is not available in this kernel; kept " + before), std::string::npos)
      << r.Describe();
}

TEST(TcpTuning, AutoKeepsADefaultThatIsNotBbr) {
  Sock sock;
  ASSERT_EQ(ApplyTcpTuning(sock.fd, TcpTuning{"reno", milliseconds(0)}).congestion, "reno");
  // A socket whose algorithm is reno stands for a host whose default is reno.
  const TcpTuningResult r = ApplyTcpTuning(sock.fd, TcpTuning{"auto", milliseconds(0)});
  EXPECT_EQ(r.congestion, "reno");
  EXPECT_EQ(Congestion(sock.fd), "reno");
}

// Runs `check` in a child process, in a network namespace of its own whose
// default is bbr (root only, and where the kernel has bbr and allows it):
// exit 0 passes, 77 skips, anything else fails with `what`.
void InBbrNamespace(const char* what, bool (*check)()) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (unshare(CLONE_NEWNET) != 0) _exit(77);
    {
      std::ofstream cc("/proc/sys/net/ipv4/tcp_congestion_control");
      cc << "bbr";
      if (!cc.flush()) _exit(77);
    }
    Sock probe;
    if (Congestion(probe.fd) != "bbr") _exit(77);  // bbr not available or not allowed here
    _exit(check() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no network namespace with bbr as its default here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << what;
}

TEST(TcpTuning, AutoReplacesBbrWithCubicOrReno) {
  InBbrNamespace("auto left a bbr socket on bbr", [] {
    Sock sock;
    const TcpTuningResult r = ApplyTcpTuning(sock.fd, TcpTuning{"auto", milliseconds(0)});
    return (r.congestion == "cubic" || r.congestion == "reno") && Congestion(sock.fd) == r.congestion &&
           r.host_default == "bbr" && !r.refused && r.Describe().find("(host default bbr") != std::string::npos;
  });
}

// reducerd and the plugin tune their listening sockets, so that no accepted
// connection starts under bbr: the accepted socket must inherit the choice,
// and describe itself as the start-up probe did (one log line, not two).
TEST(TcpTuning, AcceptedConnectionsInheritTheListenersChoice) {
  InBbrNamespace("an accepted connection did not inherit the listener's algorithm", [] {
    const TcpTuning tuning{"auto", milliseconds(0)};
    if (system("ip link set lo up") != 0) _exit(77);  // a new namespace starts with it down; no ip: skip
    Sock listener, client;
    ApplyTcpTuning(listener.fd, tuning);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listener.fd, 1) != 0 ||
        getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return false;
    }
    ApplyTcpTuning(client.fd, tuning);
    if (connect(client.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return false;
    const int accepted = accept(listener.fd, nullptr, nullptr);
    if (accepted < 0) return false;
    const std::string inherited = Congestion(accepted);
    const TcpTuningResult r = ApplyTcpTuning(accepted, tuning);
    close(accepted);
    return inherited != "bbr" && Congestion(client.fd) == inherited && r.congestion == inherited &&
           r.Describe() == ProbeTcpTuning(tuning).Describe();
  });
}

TEST(TcpTuning, TheRetransmissionFloorIsLoweredWhereTheKernelHasIt) {
  Sock sock;
  const TcpTuningResult r = ApplyTcpTuning(sock.fd, TcpTuning{"system", milliseconds(5)});
  if (!r.rto_min) {
    // A kernel without TCP_RTO_MIN_US: the line says the kernel's floor applies.
    EXPECT_NE(r.Describe().find("the kernel's own applies"), std::string::npos) << r.Describe();
    GTEST_SKIP() << r.rto_note;
  }
  EXPECT_GE(r.rto_min->count(), 5000);   // rounded up to the timer tick, never down
  EXPECT_LE(r.rto_min->count(), 200000);  // below the kernel's own
  EXPECT_NE(r.Describe().find("minimum retransmission timeout"), std::string::npos);
}

// Pacing (many ranks into one reducer): the rate limit that turns the
// kernel's own pacing on is set, far above any link, and the line says so;
// without it the socket keeps no limit.
TEST(TcpTuning, PacingSetsARateLimitNoLinkReachesAndSaysSo) {
  Sock paced;
  const TcpTuningResult r = ApplyTcpTuning(paced.fd, TcpTuning{"system", milliseconds(0), true});
  ASSERT_TRUE(r.paced) << r.pacing_note;
  uint64_t rate = 0;
  socklen_t len = sizeof(rate);
  ASSERT_EQ(getsockopt(paced.fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, &len), 0) << std::strerror(errno);
  EXPECT_EQ(len, sizeof(rate));
  EXPECT_GE(rate, uint64_t{1} << 40);  // bytes/s: above 8 Tbit/s, so the congestion control sets the rate
  EXPECT_NE(rate, ~uint64_t{0});       // "no limit" would leave pacing off
  EXPECT_NE(r.Describe().find(", paced"), std::string::npos) << r.Describe();

  Sock plain;
  const TcpTuningResult p = ApplyTcpTuning(plain.fd, TcpTuning{"system", milliseconds(0), false});
  EXPECT_FALSE(p.paced);
  rate = 0;
  len = sizeof(rate);
  ASSERT_EQ(getsockopt(plain.fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, &len), 0);
  EXPECT_EQ(rate, ~uint64_t{0});
  EXPECT_EQ(p.Describe().find("paced"), std::string::npos) << p.Describe();
}

// The floor must not fall below the pause between two operations (about a
// round trip), or Linux's idle restart shrinks every window at every
// operation: on a long path it follows the round trip, on a LAN it stays.
TEST(TcpTuning, TheFloorFollowsALongRoundTripUpToTheKernelsOwn) {
  using std::chrono::microseconds;
  EXPECT_EQ(RtoFloorForPath(milliseconds(5), microseconds(200)), microseconds(5000));     // a LAN: as set
  EXPECT_EQ(RtoFloorForPath(milliseconds(5), microseconds(10000)), microseconds(20000));  // 10 ms: twice it
  EXPECT_EQ(RtoFloorForPath(milliseconds(5), microseconds(80000)), microseconds(160000));
  EXPECT_EQ(RtoFloorForPath(milliseconds(5), microseconds(150000)), microseconds(200000));  // never above 200 ms
  EXPECT_EQ(RtoFloorForPath(milliseconds(50), microseconds(10000)), microseconds(50000));   // the setting, if more
  EXPECT_EQ(RtoFloorForPath(milliseconds(0), microseconds(80000)), microseconds(0));        // 0: the kernel's own
}

TEST(TcpTuning, ASocketsFloorIsRaisedForALongPathAndLoweredBack) {
  Sock sock;
  const TcpTuningResult r = ApplyTcpTuning(sock.fd, TcpTuning{"system", milliseconds(5)});
  if (!r.rto_min) GTEST_SKIP() << r.rto_note;
  auto floor_now = [&] {
    int us = 0;
    socklen_t len = sizeof(us);
    EXPECT_EQ(getsockopt(sock.fd, IPPROTO_TCP, 45 /* TCP_RTO_MIN_US */, &us, &len), 0);
    return us;
  };
  const int set = floor_now();
  RtoFloorFollower follower(milliseconds(5));
  using std::chrono::microseconds;
  EXPECT_FALSE(follower.OnPath(sock.fd, microseconds(0)).has_value());    // no sample yet
  EXPECT_FALSE(follower.OnPath(sock.fd, microseconds(300)).has_value());  // a LAN: nothing to do
  EXPECT_EQ(floor_now(), set);
  const std::optional<microseconds> raised = follower.OnPath(sock.fd, microseconds(80100));
  ASSERT_TRUE(raised.has_value());
  EXPECT_GE(raised->count(), 160200);
  EXPECT_EQ(floor_now(), raised->count());
  EXPECT_FALSE(follower.OnPath(sock.fd, microseconds(80100)).has_value());  // unchanged: no second call
  const std::optional<microseconds> back = follower.OnPath(sock.fd, microseconds(300));
  ASSERT_TRUE(back.has_value());  // a smaller round trip later: the setting again
  EXPECT_EQ(back->count(), set);
  EXPECT_EQ(floor_now(), set);

  RtoFloorFollower off(milliseconds(0));  // REDUCER_TCP_RTO_MIN=0: the kernel's own, never touched
  EXPECT_FALSE(off.OnPath(sock.fd, microseconds(80100)).has_value());
  EXPECT_EQ(floor_now(), set);
}

TEST(TcpTuning, ARaisedFloorIsLoggedOnceAndSaysWhy) {
  const std::optional<std::string> line =
      RtoFloorLineOnce(std::chrono::microseconds(160000), std::chrono::microseconds(80100));
  ASSERT_TRUE(line.has_value());
  EXPECT_NE(line->find("160 ms"), std::string::npos) << *line;
  EXPECT_NE(line->find("80.1 ms round trip"), std::string::npos) << *line;
  EXPECT_FALSE(RtoFloorLineOnce(std::chrono::microseconds(160000), std::chrono::microseconds(80100)).has_value());
}

TEST(TcpTuning, EachOutcomeIsLoggedOnce) {
  TcpTuningResult r;
  r.host_default = r.congestion = "test-once-" + std::to_string(getpid());
  const std::optional<std::string> first = TcpTuningLineOnce(r);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, r.Describe());
  EXPECT_FALSE(TcpTuningLineOnce(r).has_value());
  r.congestion = "cubic";
  EXPECT_TRUE(TcpTuningLineOnce(r).has_value());
}

}  // namespace
}  // namespace rs
