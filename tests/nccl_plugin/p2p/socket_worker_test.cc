// A point-to-point data socket whose receiver cannot keep up is named in
// NCCL's log: the worker samples what TCP measured on its send lanes and
// warns, with the setting, once a buffer held a lane back for a fifth of a
// judged period (common/tcp_waits.h). About 5 s: a connection's first 2 s
// of sending are not judged, the next 2 s are.
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/tcp_path.h"
#include "nccl_plugin/log.h"
#include "nccl_plugin/p2p/socket.h"
#include "nccl_plugin/p2p/socket_worker.h"
#include "tests/support/loopback_pair.h"

namespace rs::plugin {
namespace {

std::mutex g_mu;
std::vector<std::string> g_worker_warnings;

void CaptureWorkerWarning(LogLevel level, const char*, int, const char* message) {
  if (level != LogLevel::kWarn) return;
  std::lock_guard<std::mutex> lock(g_mu);
  g_worker_warnings.emplace_back(message);
}

TEST(SocketWorker, ASendLaneHeldBackByItsReceiverIsNamedWithTheSetting) {
  rs::test::SlowLoopbackPair pair;
  ASSERT_TRUE(pair.ok());
  const LogSink before = GetLogSink();
  SetLogSink(&CaptureWorkerWarning);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_worker_warnings.clear();
  }
  constexpr size_t kChunk = 128 << 10;
  constexpr int kChunks = 200;  // 25 MiB: more than 5 s at the reader's pace
  pair.StartReading(kChunk * kChunks, std::chrono::seconds(20));

  std::vector<char> data(kChunk, 'x');
  std::atomic<int> pending{kChunks};
  const int sender = pair.ReleaseSender();
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
    for (const std::string& w : g_worker_warnings) {
      if (w.find("receive window") != std::string::npos) found = w;
    }
  }
  // The worker still owns the socket: a kernel without TCP_INFO's busy time
  // (before 4.10) has nothing to judge.
  const std::optional<TcpPath> path = ReadTcpPath(sender);
  pair.StopReading();
  worker->reset();  // joins the worker's thread (closing the socket); the chunks' buffers are still alive
  SetLogSink(before);
  if (found.empty() && path && path->busy_us == 0) GTEST_SKIP() << "this kernel's TCP_INFO has no busy time";
  ASSERT_FALSE(found.empty()) << "no warning about the receive window in 15 s";
  EXPECT_NE(found.find("send comm to the test, data socket 0: "), std::string::npos) << found;
  EXPECT_NE(found.find("TCP waited for the receiving rank's receive window"), std::string::npos) << found;
  EXPECT_NE(found.find("net.ipv4.tcp_rmem"), std::string::npos) << found;
}

// A receiving rank that stops reading (frozen, or its host gone) fails the
// send with the cause instead of leaving NCCL waiting: SetStreamOptions'
// TCP_USER_TIMEOUT (twice REDUCER_LIVENESS_TIMEOUT) also ends a window shut
// that long. With 300 ms, the kernel gives up within about 2 s.
TEST(SocketWorker, ASendToAPeerThatStoppedReadingFailsNamingTheCause) {
  rs::test::SlowLoopbackPair pair;  // its receiver is never read
  ASSERT_TRUE(pair.ok());
  Socket sender(pair.ReleaseSender());
  SetStreamOptions(sender, std::chrono::milliseconds(300), TcpTuning{});
  std::mutex mu;
  std::optional<Status> failure;
  std::vector<Socket> sockets;
  sockets.push_back(std::move(sender));
  StatusOr<std::unique_ptr<SocketWorker>> worker =
      SocketWorker::Create(std::move(sockets), "send comm to the test", [&](Status st) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::move(st);
      });
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();
  constexpr size_t kBytes = 16 << 20;  // far more than the socket buffers hold
  std::vector<char> data(kBytes, 'x');
  std::atomic<int> pending{1};
  (*worker)->Enqueue(0, Chunk{reinterpret_cast<uint8_t*>(data.data()), kBytes, true, &pending});
  std::optional<Status> seen;
  for (int i = 0; i < 1500 && !seen; ++i) {  // at most 15 s
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::lock_guard<std::mutex> lock(mu);
    seen = failure;
  }
  worker->reset();
  ASSERT_TRUE(seen.has_value()) << "the send still waited after 15 s";
  EXPECT_EQ(seen->code(), Code::kPeerFailed) << seen->ToString();
  EXPECT_NE(seen->message().find("send comm to the test"), std::string::npos) << seen->ToString();
  EXPECT_NE(seen->message().find("acknowledged nothing for twice REDUCER_LIVENESS_TIMEOUT"), std::string::npos)
      << seen->ToString();
  EXPECT_EQ(pending.load(), 1);  // never reported sent
}

}  // namespace
}  // namespace rs::plugin
