// The data plane in one process: a ReducerServer and real clients over
// 127.0.0.1, for what needs the server object itself rather than a reducerd
// process.
#include "server/net/reducer_server.h"

#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>

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
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.open(asio::ip::tcp::v4());
  s.set_option(asio::socket_base::receive_buffer_size(4096));
  s.connect({asio::ip::make_address("127.0.0.1"), (*server)->port()});
  auto read_frame = [&](protocol::FrameHeader* h) {
    std::array<uint8_t, protocol::kHeaderBytes> head;
    asio::read(s, asio::buffer(head));
    EXPECT_TRUE(protocol::DecodeHeader(head, 0, h).ok());
    std::vector<uint8_t> payload(h->payload_bytes);
    asio::read(s, asio::buffer(payload));
  };
  protocol::Hello hello;
  hello.session = session;
  hello.rank = 1;
  hello.world = 2;
  asio::write(s, asio::buffer(protocol::EncodeHello(hello)));
  protocol::FrameHeader h;
  read_frame(&h);
  ASSERT_EQ(h.type, protocol::FrameType::kChallenge);
  asio::write(s, asio::buffer(protocol::EncodeAuth({})));

  // Rank 0, a real client, all-reduces kOps times, says so, then once more.
  Status rank0;
  std::promise<void> ops_done;
  std::thread rank0_thread([&] {
    client::ClientOptions o;
    o.reducers = {{"127.0.0.1", (*server)->port()}};
    o.session = session;
    o.rank = 0;
    o.world = 2;
    o.streams_per_reducer = 1;
    o.liveness_timeout = std::chrono::milliseconds(0);
    o.failover = false;
    o.log = [](client::LogLevel, const std::string&) {};
    auto c = client::Client::Create(o);
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
  read_frame(&h);
  ASSERT_EQ(h.type, protocol::FrameType::kWelcome);
  read_frame(&h);
  ASSERT_EQ(h.type, protocol::FrameType::kReady);
  // Rank 1's contributions to kOps operations; it reads none of the results.
  std::vector<float> elements(kCount, 2.0f);
  for (int k = 0; k < kOps; ++k) {
    protocol::PieceHeader p;
    p.seq = static_cast<uint64_t>(k);
    p.pieces = 1;
    p.total_count = kCount;
    p.count = kCount;
    std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> head;
    protocol::EncodePieceFrame(protocol::FrameType::kData, p, &head);
    asio::write(s, std::array<asio::const_buffer, 2>{asio::buffer(head), asio::buffer(elements)});
  }
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

}  // namespace
}  // namespace rs::server
