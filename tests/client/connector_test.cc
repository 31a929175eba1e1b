// A stream's connector (client/connector.h) over 127.0.0.1: a listener is
// connected to; a port where nothing listens is tried again until the grace
// ends, then given up with the address and the cause; a listener that starts
// within the grace is connected to; a name that does not resolve is given up
// saying so; with TLS a TLS peer is connected to and a plain one refused,
// saying TLS; cancelled, it goes quiet. Every wait is bounded.
#include "client/connector.h"

#include <gtest/gtest.h>

#include <asio.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace rs::client {
namespace {

using asio::ip::tcp;
using std::chrono::milliseconds;

// Holds the socket and the connector, as a stream does, and records what the
// connector tells it, in order.
class TestOwner final : public FramedSocket::Owner, public Connector::Owner {
 public:
  TestOwner(asio::io_context& io, Connector::Params params)
      : framed(tcp::socket(io), *this), connector(io, framed, std::move(params), *this) {}

  // FramedSocket::Owner: nothing is written here.
  bool FramesQueued() const override { return false; }
  size_t GatherFrames(size_t, std::vector<asio::const_buffer>*) override { return 0; }
  void FramesWritten(const asio::error_code&) override {}
  void SocketEnded() override {}
  std::shared_ptr<void> KeepAlive() override { return nullptr; }  // outlives the test's io_context run

  // Connector::Owner.
  void OnConnectAttempt(std::optional<ConnectFailure> failure, const std::string& error) override {
    events.push_back(failure ? "attempt failed: " + error : "attempt connected");
    failures.push_back(failure);
  }
  void OnTcpConnected(const TcpTuningResult&) override { events.push_back("tcp connected"); }
  void OnConnectEnded(const Status& status, std::optional<ConnectFailure> gave_up_on) override {
    events.push_back("ended");
    ended = status;
    gave_up = gave_up_on;
    ended_at = Clock::now();
  }

  FramedSocket framed;
  Connector connector;
  std::vector<std::string> events;
  std::vector<std::optional<ConnectFailure>> failures;  // one per attempt
  std::optional<Status> ended;
  std::optional<ConnectFailure> gave_up;
  Clock::time_point ended_at;
};

class ConnectorTest : public ::testing::Test {
 protected:
  // A port on 127.0.0.1 that nothing listens on: bound once, then let go.
  static uint16_t FreePort() {
    asio::io_context io;
    tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
    return probe.local_endpoint().port();
  }

  Connector::Params Params(const std::string& host, uint16_t port, milliseconds grace, milliseconds deadline) {
    Connector::Params p;
    p.endpoint = {host, port};
    p.name = "reducer " + p.endpoint.ToString() + " (stream 0)";
    p.grace_end = Clock::now() + grace;
    p.deadline = Clock::now() + deadline;
    return p;
  }

  // Runs the io_context until `done` or 10 s pass.
  template <typename Done>
  bool RunUntil(Done done, milliseconds limit = milliseconds(10'000)) {
    const auto end = Clock::now() + limit;
    while (!done() && Clock::now() < end) {
      io_.restart();
      io_.run_for(milliseconds(5));
    }
    return done();
  }

  bool RunUntilEnded(TestOwner& owner) {
    return RunUntil([&] { return owner.ended.has_value(); });
  }

  asio::io_context io_;
};

TEST_F(ConnectorTest, AListenerIsConnectedTo) {
  tcp::acceptor acceptor(io_, {asio::ip::make_address("127.0.0.1"), 0});
  const uint16_t port = acceptor.local_endpoint().port();
  TestOwner owner(io_, Params("127.0.0.1", port, milliseconds(1000), milliseconds(5000)));
  owner.connector.Start();
  ASSERT_TRUE(RunUntilEnded(owner));
  ASSERT_TRUE(owner.ended->ok()) << owner.ended->ToString();
  EXPECT_FALSE(owner.gave_up.has_value());
  EXPECT_EQ(owner.events, (std::vector<std::string>{"attempt connected", "tcp connected", "ended"}));
  // Connected in place: the socket the stream reads and writes.
  asio::error_code ec;
  EXPECT_EQ(owner.framed.socket().remote_endpoint(ec).port(), port) << ec.message();
  asio::ip::tcp::no_delay no_delay;
  owner.framed.socket().get_option(no_delay);
  EXPECT_TRUE(no_delay.value()) << "small control frames would wait for Nagle";
}

TEST_F(ConnectorTest, NothingListeningIsTriedAgainUntilTheGraceThenNamed) {
  const uint16_t port = FreePort();
  const milliseconds grace(300);
  const Clock::time_point start = Clock::now();
  TestOwner owner(io_, Params("127.0.0.1", port, grace, milliseconds(5000)));
  owner.connector.Start();
  ASSERT_TRUE(RunUntilEnded(owner));
  const Status& status = *owner.ended;
  EXPECT_EQ(status.code(), Code::kIo) << status.ToString();
  EXPECT_EQ(status.message(), "cannot connect to reducer 127.0.0.1:" + std::to_string(port) +
                                  " (stream 0): Connection refused (nothing listens there)");
  EXPECT_EQ(owner.gave_up, ConnectFailure::kRefused);
  // Waits of 50, 100 and 200 ms: at least four attempts within the grace,
  // every one reported, and the last not long after the grace.
  EXPECT_GE(owner.failures.size(), 4u);
  for (const auto& failure : owner.failures) EXPECT_EQ(failure, ConnectFailure::kRefused);
  EXPECT_GE(owner.ended_at - start, grace);
  EXPECT_LT(owner.ended_at - start, milliseconds(2000)) << "a refused reducer waited for past its grace";
  EXPECT_EQ(owner.events.back(), "ended");
}

TEST_F(ConnectorTest, AListenerThatStartsWithinTheGraceIsConnectedTo) {
  const uint16_t port = FreePort();
  TestOwner owner(io_, Params("127.0.0.1", port, milliseconds(5000), milliseconds(8000)));
  owner.connector.Start();
  // The listener comes once the connector has been refused twice.
  tcp::acceptor acceptor(io_);
  ASSERT_TRUE(RunUntil([&] { return owner.failures.size() >= 2 || owner.ended; }));
  ASSERT_FALSE(owner.ended.has_value()) << owner.ended->ToString();
  acceptor.open(tcp::v4());
  acceptor.set_option(tcp::acceptor::reuse_address(true));
  acceptor.bind({asio::ip::make_address("127.0.0.1"), port});
  acceptor.listen();
  ASSERT_TRUE(RunUntilEnded(owner));
  ASSERT_TRUE(owner.ended->ok()) << owner.ended->ToString();
  ASSERT_GE(owner.failures.size(), 3u);
  EXPECT_EQ(owner.failures.front(), ConnectFailure::kRefused);
  EXPECT_EQ(owner.failures.back(), std::nullopt);
}

TEST_F(ConnectorTest, ANameThatDoesNotResolveIsGivenUpSayingSo) {
  // .invalid never resolves (RFC 6761). Not one that gives up at the grace:
  // a pod's name appears when it starts, so until the deadline.
  TestOwner owner(io_, Params("no-such-reducer.invalid", 7450, milliseconds(0), milliseconds(300)));
  owner.connector.Start();
  ASSERT_TRUE(RunUntilEnded(owner));
  const Status& status = *owner.ended;
  EXPECT_EQ(status.code(), Code::kIo) << status.ToString();
  const std::string& why = status.message();
  EXPECT_EQ(why.rfind("cannot connect to reducer no-such-reducer.invalid:7450 (stream 0): cannot resolve "
                      "'no-such-reducer.invalid': ",
                      0),
            0u)
      << why;
  EXPECT_NE(why.find("(the name does not resolve)"), std::string::npos) << why;
  EXPECT_EQ(owner.gave_up, ConnectFailure::kUnresolved);
  EXPECT_GE(owner.failures.size(), 2u) << "not tried again before the deadline";
}

// The stream's Shutdown: a retry waiting for its turn is not made, and the
// owner hears nothing more.
TEST_F(ConnectorTest, CancelledItTriesNoMoreAndSaysNothingMore) {
  const uint16_t port = FreePort();
  TestOwner owner(io_, Params("127.0.0.1", port, milliseconds(5000), milliseconds(8000)));
  owner.connector.Start();
  ASSERT_TRUE(RunUntil([&] { return !owner.failures.empty(); }));
  owner.connector.Cancel();
  // Past the next waits (50 and 100 ms) with room to spare.
  RunUntil([] { return false; }, milliseconds(400));
  EXPECT_EQ(owner.failures.size(), 1u);
  EXPECT_FALSE(owner.ended.has_value());
}

// The peer's side: accepts one connection, then TLS as a reducer with
// --tls, or plain bytes as one without TLS would answer.
class Peer {
 public:
  explicit Peer(asio::io_context& io) : acceptor_(io, {asio::ip::make_address("127.0.0.1"), 0}), socket_(io) {}
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

  void AcceptTls() {
    acceptor_.async_accept(socket_, [this](const asio::error_code& ec) {
      if (ec) return;
      stream_.StartTls(*DataTls::Create(DataTls::Role::kReducer, "token"), [this](const Status& st) { tls = st; });
    });
  }
  void AcceptPlain() {
    acceptor_.async_accept(socket_, [this](const asio::error_code& ec) {
      if (ec) return;
      socket_.async_read_some(asio::buffer(in_), [this](const asio::error_code& ec2, size_t) {
        if (ec2) return;
        asio::async_write(socket_, asio::buffer(kPlain), [](const asio::error_code&, size_t) {});
      });
    });
  }

  std::optional<Status> tls;

 private:
  static constexpr std::string_view kPlain = "not a TLS record, only plain bytes";
  tcp::acceptor acceptor_;
  tcp::socket socket_;
  DataStream stream_{socket_};
  std::array<uint8_t, 512> in_{};
};

TEST_F(ConnectorTest, WithTlsATlsPeerIsConnectedTo) {
  Peer peer(io_);
  peer.AcceptTls();
  Connector::Params params = Params("127.0.0.1", peer.port(), milliseconds(1000), milliseconds(5000));
  params.tls = *DataTls::Create(DataTls::Role::kWorker, "token");
  TestOwner owner(io_, std::move(params));
  owner.connector.Start();
  ASSERT_TRUE(RunUntil([&] { return owner.ended && peer.tls; }));
  ASSERT_TRUE(owner.ended->ok()) << owner.ended->ToString();
  EXPECT_TRUE(peer.tls->ok()) << peer.tls->ToString();
  // The socket is set up before TLS's first byte.
  EXPECT_EQ(owner.events, (std::vector<std::string>{"attempt connected", "tcp connected", "ended"}));
  EXPECT_TRUE(owner.framed.stream().tls());
}

TEST_F(ConnectorTest, WithTlsAPlainPeerIsRefusedSayingTls) {
  Peer peer(io_);
  peer.AcceptPlain();
  Connector::Params params = Params("127.0.0.1", peer.port(), milliseconds(1000), milliseconds(5000));
  params.tls = *DataTls::Create(DataTls::Role::kWorker, "token");
  TestOwner owner(io_, std::move(params));
  owner.connector.Start();
  ASSERT_TRUE(RunUntilEnded(owner));
  const Status& status = *owner.ended;
  // Not kIo: a reducer without TLS is the session's failure, not a lost
  // connection to wait out.
  EXPECT_EQ(status.code(), Code::kAuth) << status.ToString();
  EXPECT_EQ(status.message().rfind("reducer 127.0.0.1:" + std::to_string(peer.port()) +
                                       " (stream 0): TLS handshake failed: ",
                                   0),
            0u)
      << status.message();
  EXPECT_NE(status.message().find("the peer does not speak TLS"), std::string::npos) << status.message();
  EXPECT_FALSE(owner.gave_up.has_value());
}

}  // namespace
}  // namespace rs::client
