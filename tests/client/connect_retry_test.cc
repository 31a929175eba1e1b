// A reducer nobody can reach is named at once and given up after the
// start-up grace, not after the whole connect timeout: a wrong address must
// cost the user seconds, and the error must say which address and why.
#include "client/connect_retry.h"

#include <gtest/gtest.h>

#include <asio.hpp>
#include <mutex>
#include <string>
#include <vector>

#include "client/client.h"

namespace rs::client {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ClassifyConnectError, NamesWhatTheOsSaid) {
  EXPECT_EQ(ClassifyConnectError(asio::error::connection_refused), ConnectFailure::kRefused);
  EXPECT_EQ(ClassifyConnectError(asio::error::host_unreachable), ConnectFailure::kUnreachable);
  EXPECT_EQ(ClassifyConnectError(asio::error::network_unreachable), ConnectFailure::kUnreachable);
  EXPECT_EQ(ClassifyConnectError(asio::error::timed_out), ConnectFailure::kNoAnswer);
  EXPECT_EQ(ClassifyConnectError(asio::error::host_not_found), ConnectFailure::kUnresolved);
  EXPECT_EQ(ClassifyConnectError(asio::error::connection_reset), ConnectFailure::kOther);
}

// Refused and unroutable are retried while the fleet starts, then given up;
// the time is passed in, so this is exact.
TEST(ConnectRetry, RefusedAndUnroutableEndWithTheGrace) {
  for (ConnectFailure failure : {ConnectFailure::kRefused, ConnectFailure::kUnreachable}) {
    const Clock::time_point t0{};
    ConnectRetry retry(t0 + seconds(20), t0 + seconds(60));
    EXPECT_EQ(retry.After(failure, t0), milliseconds(50));
    EXPECT_EQ(retry.After(failure, t0 + milliseconds(60)), milliseconds(100));
    EXPECT_EQ(retry.After(failure, t0 + milliseconds(200)), milliseconds(200));
    EXPECT_EQ(retry.After(failure, t0 + seconds(19)), milliseconds(400));
    EXPECT_EQ(retry.After(failure, t0 + seconds(20)), std::nullopt) << "refused past the grace: give up";
  }
}

// No answer, an unresolved name and anything else wait for the deadline.
TEST(ConnectRetry, OtherFailuresWaitForTheConnectDeadline) {
  for (ConnectFailure failure : {ConnectFailure::kNoAnswer, ConnectFailure::kUnresolved, ConnectFailure::kOther}) {
    const Clock::time_point t0{};
    ConnectRetry retry(t0 + seconds(20), t0 + seconds(60));
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(retry.After(failure, t0 + seconds(1)).has_value());
    EXPECT_EQ(retry.After(failure, t0 + seconds(30)), milliseconds(1000)) << "backoff stops at 1 s";
    EXPECT_EQ(retry.After(failure, t0 + seconds(58)), milliseconds(1000));
    EXPECT_EQ(retry.After(failure, t0 + seconds(59)), std::nullopt) << "the next try would end past the deadline";
  }
}

TEST(ConnectRetry, NoGraceGivesUpAtTheFirstRefusal) {
  const Clock::time_point t0{};
  ConnectRetry retry(t0, t0 + seconds(60));
  EXPECT_EQ(retry.After(ConnectFailure::kRefused, t0), std::nullopt);
}

// A port bound but not listening refuses every connect (ECONNREFUSED), and
// stays ours for the test, unlike a closed one.
class RefusingPort {
 public:
  RefusingPort() : socket_(io_) {
    socket_.open(asio::ip::tcp::v4());
    socket_.bind({asio::ip::make_address("127.0.0.1"), 0});
  }
  uint16_t port() const { return socket_.local_endpoint().port(); }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
};

struct Logged {
  std::mutex mu;
  std::vector<std::string> warnings;
};

// What a user of reducer-bench, the plugin or the Python package sees with a
// wrong address: a warning naming it and the OS's error at the first refusal,
// then Create fails naming every reducer it could not reach: with a short
// grace, long before the connect timeout (whose own error would read
// "session not ready").
TEST(ClientConnect, RefusedReducersAreNamedAndGivenUpAfterTheGrace) {
  RefusingPort a, b;
  ClientOptions o;
  o.reducers = {{"127.0.0.1", a.port()}, {"127.0.0.1", b.port()}};
  o.world = 2;
  o.connect_timeout = seconds(600);
  o.connect_grace = milliseconds(300);
  auto logged = std::make_shared<Logged>();
  o.log = [logged](LogLevel level, const std::string& message) {
    std::lock_guard<std::mutex> lock(logged->mu);
    if (level == LogLevel::kWarn) logged->warnings.push_back(message);
  };
  StatusOr<std::unique_ptr<Client>> client = Client::Create(o);
  ASSERT_FALSE(client.ok());
  const std::string& message = client.status().message();
  EXPECT_EQ(client.status().code(), Code::kIo) << message;
  for (const RefusingPort* p : {&a, &b}) {
    const std::string addr = "127.0.0.1:" + std::to_string(p->port());
    EXPECT_NE(message.find(addr + " (Connection refused"), std::string::npos) << message;
  }
  EXPECT_NE(message.find("within the 0.3 s start-up grace"), std::string::npos) << message;

  std::lock_guard<std::mutex> lock(logged->mu);
  ASSERT_EQ(logged->warnings.size(), 2u) << "one warning per reducer, at its first refusal";
  for (const std::string& warning : logged->warnings) {
    EXPECT_EQ(warning.rfind("rank 0: cannot connect to reducer 127.0.0.1:", 0), 0u) << warning;
    EXPECT_NE(warning.find(": Connection refused (nothing listens there); trying again for up to 0.3 s"),
              std::string::npos)
        << warning;
  }
}

// The grace is a third of the connect timeout unless set, and never longer
// than it: a 0.6 s connect timeout gives up a refused reducer after 0.2 s.
TEST(ClientConnect, TheDefaultGraceIsAThirdOfTheConnectTimeout) {
  RefusingPort a;
  ClientOptions o;
  o.reducers = {{"127.0.0.1", a.port()}};
  o.connect_timeout = milliseconds(600);
  o.log = [](LogLevel, const std::string&) {};
  StatusOr<std::unique_ptr<Client>> client = Client::Create(o);
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("within the 0.2 s start-up grace"), std::string::npos)
      << client.status().message();
}

// A listener whose accept queue is full: Linux drops further SYNs, so a
// connect gets no answer at all, as from a host that is down or behind a
// firewall that drops.
class SilentPort {
 public:
  SilentPort() : acceptor_(io_), filler_(io_) {
    acceptor_.open(asio::ip::tcp::v4());
    acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen(0);  // room for one connection not yet accepted
    filler_.connect(acceptor_.local_endpoint());  // completes in the kernel, never accepted
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  asio::ip::tcp::socket filler_;
};

// No answer is said after kNoAnswerWarning (3 s) and waited for until the
// connect timeout, whose error then names the reducer and why.
TEST(ClientConnect, AReducerThatDoesNotAnswerIsNamedEarlyAndWaitedFor) {
  SilentPort silent;
  ClientOptions o;
  o.reducers = {{"127.0.0.1", silent.port()}};
  o.connect_timeout = milliseconds(4000);
  auto logged = std::make_shared<Logged>();
  o.log = [logged](LogLevel level, const std::string& message) {
    std::lock_guard<std::mutex> lock(logged->mu);
    if (level == LogLevel::kWarn) logged->warnings.push_back(message);
  };
  StatusOr<std::unique_ptr<Client>> client = Client::Create(o);
  ASSERT_FALSE(client.ok());
  const std::string addr = "127.0.0.1:" + std::to_string(silent.port());
  EXPECT_EQ(client.status().code(), Code::kTimeout) << client.status().ToString();
  EXPECT_NE(client.status().message().find("session not ready after 4000 ms: cannot connect to reducer " + addr +
                                           " (no answer to connect: a host down or not up yet"),
            std::string::npos)
      << client.status().message();
  std::lock_guard<std::mutex> lock(logged->mu);
  ASSERT_EQ(logged->warnings.size(), 1u);
  EXPECT_EQ(logged->warnings[0], "rank 0: reducer " + addr + " has not answered a connect in 3.0 s (a host down or "
                                 "not up yet, or a firewall dropping packets); trying until the connect timeout "
                                 "(4.0 s)");
}

}  // namespace
}  // namespace rs::client
