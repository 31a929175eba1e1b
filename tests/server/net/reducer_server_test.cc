// The data plane in one process: a ReducerServer and real clients over
// 127.0.0.1, for what needs the server object itself rather than a reducerd
// process.
#include "server/net/reducer_server.h"

#include <gtest/gtest.h>

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
