// The data plane in one process: a ReducerServer and real clients over
// 127.0.0.1, for what needs the server object itself rather than a reducerd
// process.
#include "server/net/reducer_server.h"

#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <functional>
#include <future>
#include <thread>

#include "client/client.h"
#include "protocol/auth.h"

namespace rs::server {
namespace {

// A reducerd whose drain times out exits with sessions still live: tearing
// the server down then must not touch freed I/O state (ASan checks) nor leak
// the sessions and connections that hold each other (LeakSanitizer checks).
TEST(ReducerServerTest, DestroyedWithALiveSessionCleansUp) {
  ServerConfig config;
  config.listen_host = "127.0.0.1";
  auto server = ReducerServer::Create(config);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::vector<std::unique_ptr<client::Client>> clients(2);
  std::vector<std::thread> threads;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      client::ClientOptions o;
      o.reducers = {{"127.0.0.1", (*server)->port()}};
      o.session = protocol::SessionIdFromName("live-at-teardown");
      o.rank = rank;
      o.world = 2;
      o.log = [](client::LogLevel, const std::string&) {};
      auto c = client::Client::Create(o);
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      clients[rank] = std::move(c).value();
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ((*server)->stats().sessions_active, 1u);
  server.value().reset();  // the session is still live
  // The workers learn that their reducer went away (its sockets closed),
  // rather than waiting for the operation to time out.
  std::vector<float> v(1024, 1.0f);
  Status st = clients[0]->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                  ->Wait(std::chrono::seconds(30));
  EXPECT_EQ(st.code(), Code::kPeerFailed) << st.ToString();
}

// A broken OpenSSL on the reducer fails that worker's handshake with an
// error frame naming the cause; the daemon goes on serving.
TEST(ReducerServerTest, HmacFailureRejectsTheWorkerAndTheReducerGoesOn) {
  ServerConfig config;
  config.listen_host = "127.0.0.1";
  config.job_token = "secret";
  auto server = ReducerServer::Create(config);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), (*server)->port()});
  auto read_frame = [&](protocol::FrameHeader* h) {
    std::array<uint8_t, protocol::kHeaderBytes> head;
    asio::read(s, asio::buffer(head));
    EXPECT_TRUE(protocol::DecodeHeader(head, 0, h).ok());
    std::vector<uint8_t> payload(h->payload_bytes);
    asio::read(s, asio::buffer(payload));
    return payload;
  };
  protocol::Hello hello;
  hello.session = protocol::SessionIdFromName("hmac-failure");
  hello.world = 1;
  asio::write(s, asio::buffer(protocol::EncodeHello(hello)));
  protocol::FrameHeader h;
  read_frame(&h);
  ASSERT_EQ(h.type, protocol::FrameType::kChallenge);
  protocol::SetCryptoFaultForTesting(protocol::CryptoFault::kHmac);
  asio::write(s, asio::buffer(protocol::EncodeAuth({})));
  const auto payload = read_frame(&h);
  protocol::SetCryptoFaultForTesting(protocol::CryptoFault::kNone);
  ASSERT_EQ(h.type, protocol::FrameType::kError);
  protocol::ErrorFrame err;
  ASSERT_TRUE(protocol::DecodeError(payload, &err).ok());
  EXPECT_EQ(err.code, Code::kInternal);
  EXPECT_NE(err.message.find("HMAC-SHA256"), std::string::npos) << err.message;

  client::ClientOptions o;
  o.reducers = {{"127.0.0.1", (*server)->port()}};
  o.session = protocol::SessionIdFromName("after-hmac-failure");
  o.job_token = "secret";
  o.log = [](client::LogLevel, const std::string&) {};
  auto c = client::Client::Create(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
}

}  // namespace
}  // namespace rs::server

namespace rs::server {
namespace {

// A worker rank of `world`, scripted over a raw socket with a 4 KiB receive
// buffer, that joins `session` (liveness off) and then reads nothing unless
// told: results pile up on the reducer's side.
struct ScriptedRank {
  asio::io_context io;
  asio::ip::tcp::socket s{io};

  void ReadFrame(protocol::FrameHeader* h) {
    std::array<uint8_t, protocol::kHeaderBytes> head;
    asio::read(s, asio::buffer(head));
    EXPECT_TRUE(protocol::DecodeHeader(head, 0, h).ok());
    std::vector<uint8_t> payload(h->payload_bytes);
    asio::read(s, asio::buffer(payload));
  }
  // Sends HELLO and AUTH; the WELCOME and READY are read by Joined(), once
  // the other ranks are joining (READY waits for them).
  void Hello(uint16_t port, const protocol::SessionId& session, uint32_t rank, uint32_t world) {
    s.open(asio::ip::tcp::v4());
    s.set_option(asio::socket_base::receive_buffer_size(4096));
    s.connect({asio::ip::make_address("127.0.0.1"), port});
    protocol::Hello hello;
    hello.session = session;
    hello.rank = rank;
    hello.world = world;
    asio::write(s, asio::buffer(protocol::EncodeHello(hello)));
    protocol::FrameHeader h;
    ReadFrame(&h);
    ASSERT_EQ(h.type, protocol::FrameType::kChallenge);
    asio::write(s, asio::buffer(protocol::EncodeAuth({})));
  }
  void Joined() {
    protocol::FrameHeader h;
    ReadFrame(&h);
    ASSERT_EQ(h.type, protocol::FrameType::kWelcome);
    ReadFrame(&h);
    ASSERT_EQ(h.type, protocol::FrameType::kReady);
  }
  // Operation `seq` as one piece of `count` float32 of value 2; false once
  // the reducer closed the connection.
  bool Contribute(uint64_t seq, uint64_t count) {
    const std::vector<float> elements(count, 2.0f);
    protocol::PieceHeader p;
    p.seq = seq;
    p.pieces = 1;
    p.total_count = count;
    p.count = count;
    std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> head;
    protocol::EncodePieceFrame(protocol::FrameType::kData, p, &head);
    asio::error_code ec;
    asio::write(s, std::array<asio::const_buffer, 2>{asio::buffer(head), asio::buffer(elements)}, ec);
    return !ec;
  }
};

// A real client's options for `rank` of 2 on `server`, liveness and
// failover off, one stream.
client::ClientOptions RankOptions(const ReducerServer& server, const protocol::SessionId& session, uint32_t rank) {
  client::ClientOptions o;
  o.reducers = {{"127.0.0.1", server.port()}};
  o.session = session;
  o.rank = rank;
  o.world = 2;
  o.streams_per_reducer = 1;
  o.liveness_timeout = std::chrono::milliseconds(0);
  o.failover = false;
  o.log = [](client::LogLevel, const std::string&) {};
  return o;
}

// Rank 0 of 2, a real client on its own thread: `ops` all-reduces of
// `count` float32 ones until one fails (*done counts the others), then
// `last`, if given, on the same client. The first failure lands in *status.
std::thread StartRank0(const ReducerServer& server, const protocol::SessionId& session, uint64_t count, int ops,
                       Status* status, int* done, std::function<Status(client::Client&)> last = {}) {
  return std::thread([&server, session, count, ops, status, done, last = std::move(last)] {
    auto c = client::Client::Create(RankOptions(server, session, 0));
    if (!c.ok()) {
      *status = c.status();
      return;
    }
    std::vector<float> v(count, 1.0f);
    for (int k = 0; k < ops && status->ok(); ++k) {
      *status = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                    ->Wait(std::chrono::seconds(60));
      if (status->ok()) ++*done;
    }
    if (status->ok() && last) *status = last(**c);
  });
}

// A worker that gives up sends the reducer an ERROR with its reason and
// closes. If the reducer is still writing results to it, that write fails
// (the worker's close, with results unread, resets the connection) at the
// same moment the ERROR arrives; the reducer must pass the worker's reason
// on to the other ranks, not "cannot send to the worker".
TEST(ReducerServerTest, AWorkerThatGivesUpWhileResultsPileUpPassesItsReasonOn) {
  ServerConfig config;
  config.listen_host = "127.0.0.1";
  auto server = ReducerServer::Create(config);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const auto session = protocol::SessionIdFromName("gives-up-while-results-pile-up");
  constexpr uint64_t kCount = 128 * 1024;  // 512 KiB of float32: one piece
  constexpr int kOps = 24;                  // 12 MiB of results rank 1 never reads

  // Rank 1, scripted, with a small receive buffer so results pile up on the
  // reducer's side.
  ScriptedRank rank1;
  rank1.Hello((*server)->port(), session, 1, 2);
  asio::ip::tcp::socket& s = rank1.s;

  // Rank 0, a real client, all-reduces kOps times, says so, then once more.
  Status rank0;
  std::promise<void> ops_done;
  std::thread rank0_thread([&] {
    auto c = client::Client::Create(RankOptions(**server, session, 0));
    if (!c.ok()) {
      rank0 = c.status();
      ops_done.set_value();
      return;
    }
    std::vector<float> v(kCount, 1.0f);
    int k = 0;
    for (; k <= kOps && rank0.ok(); ++k) {
      if (k == kOps) ops_done.set_value();
      rank0 = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                  ->Wait(std::chrono::seconds(60));
    }
    if (k <= kOps) ops_done.set_value();  // failed early
  });
  // However the script below ends, rank 1 goes and rank 0's thread is joined.
  struct Joiner {
    asio::ip::tcp::socket& s;
    std::thread& t;
    ~Joiner() {
      asio::error_code ignored;
      s.close(ignored);
      if (t.joinable()) t.join();
    }
  } joiner{s, rank0_thread};
  rank1.Joined();
  // Rank 1's contributions to kOps operations; it reads none of the results.
  for (int k = 0; k < kOps; ++k) ASSERT_TRUE(rank1.Contribute(static_cast<uint64_t>(k), kCount));
  // Rank 0 completes them all (so every result for rank 1 is queued or being
  // written); then rank 1 gives up, with its reason, and closes.
  ASSERT_EQ(ops_done.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  asio::write(s, asio::buffer(protocol::EncodeError({Code::kPeerFailed, "the made-up root cause"})));
  // Close only once the reducer's kernel has the ERROR (nothing left unacked
  // in our send queue): a close with unread results resets the connection
  // and would drop an ERROR still queued here, on a loaded machine.
  for (int i = 0; i < 5000; ++i) {
    int unsent = 0;
    if (ioctl(s.native_handle(), SIOCOUTQ, &unsent) != 0 || unsent == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  s.close();
  rank0_thread.join();
  ASSERT_FALSE(rank0.ok());
  EXPECT_EQ(rank0.code(), Code::kPeerFailed) << rank0.ToString();
  EXPECT_NE(rank0.message().find("rank 1 aborted: the made-up root cause"), std::string::npos) << rank0.ToString();
}

// Waits (at most 30 s) until the reducer holds no piece memory.
size_t WaitForMemoryBack(const ReducerServer& server) {
  for (int i = 0; i < 3000 && server.stats().memory_in_use != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return server.stats().memory_in_use;
}

// A worker that stops reading (frozen with liveness off, or a client that
// does not read) would keep its results, and the piece memory that every
// session on the reducer shares, for ever: the reducer's memory fills and
// every other session stops too. Taking none of its results for
// --op-timeout fails its session, naming it, and the others go on.
TEST(ReducerServerTest, AWorkerThatStopsReadingFailsItsSessionAndTheOthersGoOn) {
  ServerConfig config;
  config.listen_host = "127.0.0.1";
  config.memory_limit = 16 << 20;
  config.op_timeout = std::chrono::seconds(2);
  auto server = ReducerServer::Create(config);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const auto session = protocol::SessionIdFromName("stops-reading");
  constexpr uint64_t kCount = 128 * 1024;  // 512 KiB of float32: one piece
  constexpr int kOps = 64;                 // 32 MiB of results: twice the memory

  ScriptedRank rank1;
  rank1.Hello((*server)->port(), session, 1, 2);
  Status rank0;
  int rank0_done = 0;
  std::thread rank0_thread = StartRank0(**server, session, kCount, kOps, &rank0, &rank0_done);
  rank1.Joined();
  std::thread writer([&] {
    for (int k = 0; k < kOps && rank1.Contribute(static_cast<uint64_t>(k), kCount); ++k) {
    }
  });
  // Another job on the same reducer, once the first one's results fill its memory.
  for (int i = 0; i < 500 && (*server)->stats().memory_in_use < config.memory_limit / 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto bystander = protocol::SessionIdFromName("bystander");
  std::vector<Status> others(2);
  std::vector<std::thread> other_threads;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    other_threads.emplace_back([&, rank] {
      auto o = RankOptions(**server, bystander, rank);
      o.op_timeout = std::chrono::seconds(30);
      auto c = client::Client::Create(o);
      if (!c.ok()) {
        others[rank] = c.status();
        return;
      }
      std::vector<float> v(1 << 18);
      for (int k = 0; k < 20 && others[rank].ok(); ++k) {
        for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((rank + 1) * k + i % 5);
        others[rank] = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                           ->Wait(std::chrono::seconds(60));
        for (size_t i = 0; i < v.size() && others[rank].ok(); i += 997) {
          ASSERT_EQ(v[i], static_cast<float>(3 * k + 2 * (i % 5)));
        }
      }
    });
  }
  for (auto& t : other_threads) t.join();
  rank0_thread.join();
  asio::error_code ignored;
  rank1.s.shutdown(asio::socket_base::shutdown_both, ignored);
  rank1.s.close(ignored);
  writer.join();
  for (uint32_t rank = 0; rank < 2; ++rank) EXPECT_TRUE(others[rank].ok()) << "bystander rank " << rank << ": " << others[rank].ToString();
  EXPECT_LT(rank0_done, kOps);
  EXPECT_EQ(rank0.code(), Code::kTimeout) << rank0.ToString();
  EXPECT_NE(rank0.message().find("rank 1 (127.0.0.1:"), std::string::npos) << rank0.ToString();
  EXPECT_NE(rank0.message().find("took none of its results from reducer 127.0.0.1:"), std::string::npos)
      << rank0.ToString();
  EXPECT_EQ(WaitForMemoryBack(**server), 0u);
}

// A session failed for another reason (here a mismatch) while a write to a
// worker that stopped reading is in flight: that stream, closing, gets
// --op-timeout for it, then closes, and the results it held go back.
TEST(ReducerServerTest, AClosingStreamToAWorkerThatStopsReadingLetsGoOfItsResults) {
  ServerConfig config;
  config.listen_host = "127.0.0.1";
  config.op_timeout = std::chrono::seconds(2);
  auto server = ReducerServer::Create(config);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const auto session = protocol::SessionIdFromName("closing-to-a-non-reader");
  constexpr uint64_t kCount = 128 * 1024;  // 512 KiB of float32: one piece
  constexpr int kOps = 24;                 // 12 MiB of results rank 1 never reads

  ScriptedRank rank1;
  rank1.Hello((*server)->port(), session, 1, 2);
  Status rank0;
  int rank0_done = 0;
  // Then half the elements rank 1 sends: the session fails on a mismatch.
  std::thread rank0_thread = StartRank0(**server, session, kCount, kOps, &rank0, &rank0_done, [](client::Client& c) {
    std::vector<float> v(kCount / 2, 1.0f);
    return c.AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait(std::chrono::seconds(60));
  });
  rank1.Joined();
  for (int k = 0; k <= kOps; ++k) ASSERT_TRUE(rank1.Contribute(static_cast<uint64_t>(k), kCount));
  rank0_thread.join();
  EXPECT_EQ(rank0.code(), Code::kMismatch) << rank0.ToString();
  EXPECT_EQ(WaitForMemoryBack(**server), 0u);
}

}  // namespace
}  // namespace rs::server
