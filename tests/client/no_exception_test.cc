// Nothing the client library meets on its I/O threads may end the process it
// lives in (the user's training job, NCCL's process): a broken OpenSSL, a
// log callback that throws. Each case must become an error on the session,
// or be contained, and the process must go on. The reducer runs in-process.
#include <gtest/gtest.h>

#include <stdexcept>

#include "client/client.h"
#include "protocol/auth.h"
#include "server/net/reducer_server.h"

namespace rs::client {
namespace {

class NoExceptionTest : public ::testing::Test {
 protected:
  void TearDown() override { protocol::SetCryptoFaultForTesting(protocol::CryptoFault::kNone); }

  std::unique_ptr<server::ReducerServer> StartReducer(const std::string& token) {
    server::ServerConfig config;
    config.listen_host = "127.0.0.1";
    config.job_token = token;
    auto server = server::ReducerServer::Create(config);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    return server.ok() ? std::move(server).value() : nullptr;
  }

  ClientOptions Options(uint16_t port, const std::string& token) {
    ClientOptions o;
    o.reducers = {{"127.0.0.1", port}};
    o.session = protocol::SessionIdFromName("no-exception");
    o.job_token = token;
    o.connect_timeout = std::chrono::seconds(20);
    o.log = [](LogLevel, const std::string&) {};
    return o;
  }
};

TEST_F(NoExceptionTest, NonceFailureIsAnErrorNotATermination) {
  auto reducer = StartReducer("");
  ASSERT_NE(reducer, nullptr);
  protocol::SetCryptoFaultForTesting(protocol::CryptoFault::kRandom);
  auto client = Client::Create(Options(reducer->port(), ""));
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), Code::kInternal) << client.status().ToString();
  EXPECT_NE(client.status().message().find("random nonce"), std::string::npos) << client.status().message();
  EXPECT_NE(client.status().message().find("reducer 127.0.0.1:"), std::string::npos) << client.status().message();
}

TEST_F(NoExceptionTest, HmacFailureIsAnErrorNotATermination) {
  auto reducer = StartReducer("secret");
  ASSERT_NE(reducer, nullptr);
  // The reducer's nonce (in this process too) is fine; the worker's proof fails.
  protocol::SetCryptoFaultForTesting(protocol::CryptoFault::kHmac);
  auto client = Client::Create(Options(reducer->port(), "secret"));
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), Code::kInternal) << client.status().ToString();
  EXPECT_NE(client.status().message().find("HMAC-SHA256"), std::string::npos) << client.status().message();
  // Once OpenSSL works again, so does a new client against the same reducer.
  protocol::SetCryptoFaultForTesting(protocol::CryptoFault::kNone);
  auto again = Client::Create(Options(reducer->port(), "secret"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
}

TEST_F(NoExceptionTest, ThrowingLogCallbackIsContained) {
  // A worker with a token refuses a reducer without one and logs the refusal
  // from its I/O thread; the callback throws there.
  auto reducer = StartReducer("");
  ASSERT_NE(reducer, nullptr);
  ClientOptions o = Options(reducer->port(), "secret");
  std::atomic<int> calls{0};
  o.log = [&calls](LogLevel, const std::string&) {
    ++calls;
    throw std::runtime_error("logger is broken");
  };
  auto refused = Client::Create(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kAuth) << refused.status().ToString();
  EXPECT_GE(calls.load(), 1);
  // The process goes on, and so does a worker that matches the reducer.
  o.job_token = "";
  auto client = Client::Create(o);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::vector<float> v(1000, 2.0f);
  ASSERT_TRUE((*client)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait().ok());
  EXPECT_EQ(v[999], 2.0f);
}

}  // namespace
}  // namespace rs::client
