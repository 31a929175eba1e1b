// What a peer can make the reducer hold stays inside its limits: memory a
// frame would cost is refused before it is allocated, a session a memory
// limit admits can always get one piece, and an idle stream of a worker
// with liveness off does not stay for ever. In one process: a ReducerServer
// and raw or real clients over 127.0.0.1.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "client/client.h"
#include "protocol/auth.h"
#include "server/net/reducer_server.h"

namespace rs::server {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr size_t kMiB = size_t{1} << 20;

std::unique_ptr<ReducerServer> StartTunedServer(const std::function<void(ServerConfig&)>& tune = {}) {
  ServerConfig config;
  config.listen_host = "127.0.0.1";
  if (tune) tune(config);
  auto server = ReducerServer::Create(config);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

// This process's resident memory (bytes).
size_t Rss() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// A worker over a raw socket, joined to a world-1 session of its own
// (no token), that then sends what the test tells it to.
class RawWorker {
 public:
  bool Join(uint16_t port, const std::string& session) {
    s_.connect({asio::ip::make_address("127.0.0.1"), port});
    protocol::Hello hello;
    hello.session = protocol::SessionIdFromName(session);
    hello.world = 1;
    asio::write(s_, asio::buffer(protocol::EncodeHello(hello)));
    if (ReadFrame(seconds(20)) != protocol::FrameType::kChallenge) return false;
    asio::write(s_, asio::buffer(protocol::EncodeAuth({})));
    return ReadFrame(seconds(20)) == protocol::FrameType::kWelcome &&
           ReadFrame(seconds(20)) == protocol::FrameType::kReady;
  }
  void Send(const std::vector<uint8_t>& bytes) { asio::write(s_, asio::buffer(bytes)); }
  // The next frame's type, or kHello (never sent by a reducer) when none
  // came within `within`. Keeps an ERROR frame's contents.
  protocol::FrameType ReadFrame(milliseconds within) {
    pollfd p{s_.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(within.count())) != 1) return protocol::FrameType::kHello;
    std::array<uint8_t, protocol::kHeaderBytes> head;
    asio::error_code ec;
    asio::read(s_, asio::buffer(head), ec);
    protocol::FrameHeader h;
    if (ec || !protocol::DecodeHeader(head, 0, &h).ok()) return protocol::FrameType::kHello;
    std::vector<uint8_t> payload(h.payload_bytes);
    asio::read(s_, asio::buffer(payload), ec);
    if (h.type == protocol::FrameType::kError) (void)protocol::DecodeError(payload, &error_);
    return h.type;
  }
  const protocol::ErrorFrame& error() const { return error_; }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket s_{io_};
  protocol::ErrorFrame error_;
};

// A RESULT frame's header from a worker announces a piece's worth of
// payload; reading it would cost that much per connection outside the
// memory budget (64 connections took 67 MiB at a 1 MiB limit).
TEST(DataPlaneLimitsTest, AResultFromAWorkerIsRefusedBeforeItsPayloadIsRead) {
  auto server = StartTunedServer([](ServerConfig& c) { c.memory_limit = kMiB; });
  ASSERT_NE(server, nullptr);
  constexpr int kWorkers = 64;
  std::vector<std::unique_ptr<RawWorker>> workers;
  for (int i = 0; i < kWorkers; ++i) {
    workers.push_back(std::make_unique<RawWorker>());
    ASSERT_TRUE(workers.back()->Join(server->port(), "result-" + std::to_string(i))) << "worker " << i;
  }
  protocol::FrameHeader result;
  result.type = protocol::FrameType::kResult;
  result.payload_bytes = static_cast<uint32_t>(protocol::kPieceHeaderBytes + kMiB);
  std::vector<uint8_t> frame(protocol::kHeaderBytes);
  protocol::EncodeHeader(result, frame.data());
  const size_t before = Rss();
  for (auto& w : workers) w->Send(frame);
  for (int i = 0; i < kWorkers; ++i) {
    // Answered at once, without the payload the header announced.
    ASSERT_EQ(workers[i]->ReadFrame(seconds(20)), protocol::FrameType::kError) << "worker " << i;
    EXPECT_EQ(workers[i]->error().code, Code::kProtocol);
    EXPECT_EQ(workers[i]->error().message, "unexpected RESULT frame during the session");
  }
  const size_t after = Rss();
  EXPECT_LT(after, before + 16 * kMiB) << "resident memory grew from " << before / kMiB << " to " << after / kMiB
                                       << " MiB";
}

// Control frames announce up to 64 KiB each: a joined worker's are small,
// and a larger one is refused before its payload is read (an ERROR's text
// is read as far as 4 KiB, the stream closing after it).
TEST(DataPlaneLimitsTest, AJoinedWorkersLargeControlFrameIsRefusedUnread) {
  auto server = StartTunedServer();
  ASSERT_NE(server, nullptr);
  RawWorker worker;
  ASSERT_TRUE(worker.Join(server->port(), "large-heartbeat"));
  protocol::FrameHeader heartbeat;
  heartbeat.type = protocol::FrameType::kHeartbeat;
  heartbeat.payload_bytes = 60000;
  std::vector<uint8_t> frame(protocol::kHeaderBytes);
  protocol::EncodeHeader(heartbeat, frame.data());
  worker.Send(frame);
  ASSERT_EQ(worker.ReadFrame(seconds(20)), protocol::FrameType::kError);
  EXPECT_EQ(worker.error().code, Code::kProtocol);
  EXPECT_EQ(worker.error().message, "HEARTBEAT frame of 60000 bytes during the session: a worker's is at most 4096");

  // A long ERROR from a worker: its reason, cut, reaches the session.
  RawWorker aborting;
  ASSERT_TRUE(aborting.Join(server->port(), "long-error"));
  aborting.Send(protocol::EncodeError({Code::kInternal, "CUDA error " + std::string(60000, 'x')}));
  std::string failure;
  for (int i = 0; i < 2000 && failure.empty(); ++i) {  // the session fails on the reducer's thread
    for (const SessionSnapshot& s : server->Sessions()) {
      if (s.id == protocol::SessionIdFromName("long-error") && !s.failure.ok()) failure = s.failure.message();
    }
    if (failure.empty()) std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(failure.rfind("rank 0 aborted: CUDA error xxx", 0), 0u) << failure;
  EXPECT_LT(failure.size(), 4200u);
}

// A float32 sum on a bfloat16 wire needs two more slots than there are
// ranks: the largest piece announced must leave room for them, or the
// piece's allocation is refused for ever and the session stalls.
TEST(DataPlaneLimitsTest, A16BitWireSessionAtASmallMemoryLimitCompletes) {
  auto server = StartTunedServer([](ServerConfig& c) {
    c.memory_limit = kMiB;
    c.op_timeout = seconds(10);
  });
  ASSERT_NE(server, nullptr);
  constexpr uint32_t kWorld = 2;
  constexpr size_t kCount = 1 << 20;  // 4 MiB of float32, 2 MiB on the wire
  std::vector<Status> statuses(kWorld, Status(Code::kInternal, "not run"));
  std::vector<float> sums(kWorld);
  std::vector<std::thread> ranks;
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    ranks.emplace_back([&, rank] {
      client::ClientOptions o;
      o.reducers = {{"127.0.0.1", server->port()}};
      o.session = protocol::SessionIdFromName("bf16-small-memory");
      o.rank = rank;
      o.world = kWorld;
      o.wire_dtype = DataType::kBfloat16;
      o.op_timeout = seconds(20);
      o.log = [](client::LogLevel, const std::string&) {};
      auto c = client::Client::Create(o);
      if (!c.ok()) {
        statuses[rank] = c.status();
        return;
      }
      std::vector<float> v(kCount, 1.0f + rank);
      statuses[rank] =
          (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait(seconds(60));
      sums[rank] = v[kCount - 1];
    });
  }
  for (auto& t : ranks) t.join();
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << "rank " << rank << ": " << statuses[rank].ToString();
    EXPECT_EQ(sums[rank], 3.0f);
  }
  EXPECT_EQ(server->stats().sessions_failed, 0u);
}

// With liveness off a worker sends nothing while idle: without a limit of
// the reducer's own, a few addresses could hold every connection for ever.
TEST(DataPlaneLimitsTest, AnIdleWorkerWithLivenessOffFailsItsSessionAfterTheIdleTimeout) {
  auto server = StartTunedServer([](ServerConfig& c) { c.idle_timeout = milliseconds(500); });
  ASSERT_NE(server, nullptr);
  RawWorker idle;
  ASSERT_TRUE(idle.Join(server->port(), "idle"));
  ASSERT_EQ(idle.ReadFrame(seconds(20)), protocol::FrameType::kError);
  EXPECT_EQ(idle.error().code, Code::kPeerFailed);
  EXPECT_NE(
      idle.error().message.find("with its liveness timeout off: the reducer's --idle-timeout closes such streams"),
      std::string::npos)
      << idle.error().message;
}

TEST(DataPlaneLimitsTest, TheLargestPieceLeavesRoomForEverySlotOfOnePiece) {
  auto server = StartTunedServer([](ServerConfig& c) { c.memory_limit = kMiB + 1000; });
  ASSERT_NE(server, nullptr);
  for (DataType wire : {DataType::kFloat32, DataType::kBfloat16, DataType::kFloat16}) {
    for (uint32_t world : {1u, 2u, 3u, 7u}) {
      const uint64_t piece = server->MaxPieceBytes(world, wire);
      ASSERT_GT(piece, 0u);
      // What the budget hands out for one piece: whole granules.
      const uint64_t bytes = piece * PieceSlots(world, wire);
      const uint64_t granules = (bytes + MemoryBudget::kGranule - 1) / MemoryBudget::kGranule;
      EXPECT_LE(granules * MemoryBudget::kGranule, kMiB + 1000) << "world " << world << ", wire "
                                                                << protocol::WireTypeName(wire);
    }
  }
}

}  // namespace
}  // namespace rs::server
