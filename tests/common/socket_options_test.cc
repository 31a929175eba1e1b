// common/socket_options.h on a real loopback TCP pair. ReceiveLowWater: with
// a mark set the reader is not woken before the bytes it needs are there, a
// trickle below the mark still shows as arrival (for liveness), and Reset
// makes any byte wake it again. SetTcpLiveness: which options each side gets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <vector>

#include "common/socket_options.h"

namespace rs {
namespace {

struct SocketPair {
  int writer = -1, reader = -1;
  SocketPair() {
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listener, 1) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      close(listener);
      return;
    }
    writer = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(writer, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) reader = accept(listener, nullptr, nullptr);
    close(listener);
  }
  ~SocketPair() {
    if (writer >= 0) close(writer);
    if (reader >= 0) close(reader);
  }
  bool Readable(int timeout_ms) const {
    pollfd p{reader, POLLIN, 0};
    return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
  }
  void Write(size_t bytes) const {
    std::vector<char> data(bytes, 'x');
    ASSERT_EQ(send(writer, data.data(), data.size(), 0), static_cast<ssize_t>(bytes));
  }
};

TEST(ReceiveLowWater, WakesOnceTheReadHasWhatItNeeds) {
  SocketPair p;
  ASSERT_GE(p.reader, 0);
  ReceiveLowWater mark(p.reader);
  p.Write(40 << 10);
  ASSERT_TRUE(p.Readable(5000));  // no mark yet: any byte wakes the reader
  mark.Expect(64 << 10);           // the read in progress needs 64 KiB
  EXPECT_FALSE(p.Readable(0)) << "woken with 40 KiB of the 64 KiB needed";
  EXPECT_TRUE(mark.ArrivedSinceLastAsked()) << "the 40 KiB waiting below the mark must count as arrivals";
  EXPECT_FALSE(mark.ArrivedSinceLastAsked()) << "nothing new arrived";
  p.Write(24 << 10);
  EXPECT_TRUE(p.Readable(5000));
}

TEST(ReceiveLowWater, SmallReadsAndResetWakeForAnyByte) {
  SocketPair p;
  ASSERT_GE(p.reader, 0);
  ReceiveLowWater mark(p.reader);
  mark.Expect(1 << 20);
  p.Write(100);
  EXPECT_FALSE(p.Readable(0));
  mark.Reset();  // a header comes next: it must not wait for a megabyte
  EXPECT_TRUE(p.Readable(5000));
  mark.Expect(ReceiveLowWater::kMinBytes - 1);  // too small to be worth a mark
  EXPECT_TRUE(p.Readable(0));
  EXPECT_FALSE(mark.ArrivedSinceLastAsked()) << "without a mark every arrival wakes the reader anyway";
}

// SetTcpLiveness: a stream whose peer may stop reading on purpose (a
// worker's stream to a reducer out of memory) gets keepalive but no
// TCP_USER_TIMEOUT, which Linux would also apply to a zero window; one whose
// peer always reads gets twice the timeout.
int IntOption(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof(value);
  return getsockopt(fd, level, name, &value, &len) == 0 ? value : -1;
}

TEST(SetTcpLivenessTest, TheUserTimeoutIsSetOnlyWhereThePeerAlwaysReads) {
  SocketPair p;
  ASSERT_GE(p.reader, 0);
  ASSERT_TRUE(SetTcpLiveness(p.writer, std::chrono::milliseconds(5000), PeerReads::kMayPause).ok());
  EXPECT_EQ(IntOption(p.writer, IPPROTO_TCP, TCP_USER_TIMEOUT), 0);
  EXPECT_EQ(IntOption(p.writer, SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(IntOption(p.writer, IPPROTO_TCP, TCP_KEEPIDLE), 2);
  ASSERT_TRUE(SetTcpLiveness(p.reader, std::chrono::milliseconds(5000), PeerReads::kAlways).ok());
  EXPECT_EQ(IntOption(p.reader, IPPROTO_TCP, TCP_USER_TIMEOUT), 10000);
  EXPECT_EQ(IntOption(p.reader, IPPROTO_TCP, TCP_KEEPIDLE), 2);
}

}  // namespace
}  // namespace rs
