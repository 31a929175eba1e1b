// A point-to-point data socket whose receiver cannot keep up is named in
// NCCL's log: the worker samples what TCP measured on its send lanes and
// warns, with the setting, once a buffer held a lane back for a fifth of a
// judged period (common/tcp_waits.h). About 5 s: a connection's first 2 s
// of sending are not judged, the next 2 s are.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/tcp_path.h"
#include "nccl_plugin/log.h"
#include "nccl_plugin/p2p/socket_worker.h"

namespace rs::plugin {
namespace {

std::mutex g_mu;
std::vector<std::string> g_warnings;

void Capture(LogLevel level, const char*, int, const char* message) {
  if (level != LogLevel::kWarn) return;
  std::lock_guard<std::mutex> lock(g_mu);
  g_warnings.emplace_back(message);
}

TEST(SocketWorker, ASendLaneHeldBackByItsReceiverIsNamedWithTheSetting) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  const int small = 4096;  // the receiver's buffer: a few KiB per round trip
  ASSERT_EQ(setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int sender = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(sender, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const int receiver = accept(listener, nullptr, nullptr);
  close(listener);
  ASSERT_GE(receiver, 0);

  const LogSink before = GetLogSink();
  SetLogSink(&Capture);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_warnings.clear();
  }
  // The receiver reads a little every millisecond until the sender's bytes
  // are in or 20 s have passed (bounded either way).
  constexpr size_t kChunk = 128 << 10;
  constexpr int kChunks = 200;  // 25 MiB: more than 5 s at this pace
  std::atomic<bool> stop{false};
  std::thread slow([&] {
    std::vector<char> buf(16 << 10);
    size_t got = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!stop && got < kChunk * kChunks && std::chrono::steady_clock::now() < end) {
      pollfd p{receiver, POLLIN, 0};
      if (poll(&p, 1, 1) != 1) continue;
      const ssize_t n = recv(receiver, buf.data(), buf.size(), 0);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });

  std::vector<char> data(kChunk, 'x');
  std::atomic<int> pending{kChunks};
  std::vector<Socket> sockets;
  sockets.emplace_back(sender);
  StatusOr<std::unique_ptr<SocketWorker>> worker =
      SocketWorker::Create(std::move(sockets), "send comm to the test", [](Status) {});
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();
  for (int i = 0; i < kChunks; ++i) {
    (*worker)->Enqueue(0, Chunk{reinterpret_cast<uint8_t*>(data.data()), kChunk, true, &pending});
  }
  // Until the warning, or 15 s.
  std::string found;
  for (int i = 0; i < 1500 && found.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::lock_guard<std::mutex> lock(g_mu);
    for (const std::string& w : g_warnings) {
      if (w.find("receive window") != std::string::npos) found = w;
    }
  }
  // The worker still owns the socket: a kernel without TCP_INFO's busy time
  // (before 4.10) has nothing to judge.
  const std::optional<TcpPath> path = ReadTcpPath(sender);
  stop = true;
  slow.join();
  close(receiver);
  worker->reset();  // joins the worker's thread; the chunks' buffers are still alive
  SetLogSink(before);
  if (found.empty() && path && path->busy_us == 0) GTEST_SKIP() << "this kernel's TCP_INFO has no busy time";
  ASSERT_FALSE(found.empty()) << "no warning about the receive window in 15 s";
  EXPECT_NE(found.find("send comm to the test, data socket 0: "), std::string::npos) << found;
  EXPECT_NE(found.find("TCP waited for the receiving rank's receive window"), std::string::npos) << found;
  EXPECT_NE(found.find("net.ipv4.tcp_rmem"), std::string::npos) << found;
}

}  // namespace
}  // namespace rs::plugin
