// The handshake-only probe `reducerctl doctor` runs against each reducer:
// every cause a user must tell apart (accepted, wrong token, no token, a
// reducer that checks none, nothing listening, no answer, another protocol
// version) comes back as its own code, naming the reducer, within the
// timeout. The reducer runs in-process.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <thread>

#include "client/reducer_probe.h"
#include "protocol/wire.h"
#include "server/net/reducer_server.h"
#include "tests/support/status_text.h"

namespace rs::client {
namespace {

std::unique_ptr<server::ReducerServer> StartReducer(const std::string& token, bool tls = false) {
  server::ServerConfig config;
  config.listen_host = "127.0.0.1";
  config.job_token = token;
  config.tls = tls;
  auto server = server::ReducerServer::Create(config);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

StatusOr<ProbeResult> Probe(uint16_t port, const std::string& token,
                            std::chrono::milliseconds timeout = std::chrono::seconds(3), bool tls = false) {
  return ProbeReducer(ProbeOptions{{"127.0.0.1", port}, token, tls, timeout});
}

using rs::testing::Has;

// A listening socket on 127.0.0.1 (port 0) that the test drives by hand.
struct Listener {
  int fd = -1;
  uint16_t port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && ::listen(fd, 4) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
  }
  ~Listener() { ::close(fd); }
};

TEST(ReducerProbeTest, TheSameTokenIsAccepted) {
  auto reducer = StartReducer("job-secret");
  ASSERT_NE(reducer, nullptr);
  auto r = Probe(reducer->port(), "job-secret");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->token_checked);
  EXPECT_GT(r->max_piece_bytes, 0u);
  // The probe's one-rank session ended cleanly: the reducer takes the next one.
  auto again = Probe(reducer->port(), "job-secret");
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

// REDUCER_TLS=1: the probe speaks TLS as a worker's stream does, and a
// mismatch at either end is named.
TEST(ReducerProbeTest, TlsIsProbedAsTheWorkersUseIt) {
  auto tls_reducer = StartReducer("job-secret", /*tls=*/true);
  ASSERT_NE(tls_reducer, nullptr);
  auto r = Probe(tls_reducer->port(), "job-secret", std::chrono::seconds(3), /*tls=*/true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->token_checked);

  auto plain_probe = Probe(tls_reducer->port(), "job-secret");
  ASSERT_FALSE(plain_probe.ok());
  EXPECT_TRUE(Has(plain_probe.status(), "REDUCER_TLS=1")) << plain_probe.status().ToString();

  auto wrong_token = Probe(tls_reducer->port(), "not-the-secret", std::chrono::seconds(3), true);
  ASSERT_FALSE(wrong_token.ok());
  EXPECT_EQ(wrong_token.status().code(), Code::kAuth) << wrong_token.status().ToString();
  EXPECT_TRUE(Has(wrong_token.status(), "job token differs")) << wrong_token.status().ToString();

  auto plain_reducer = StartReducer("job-secret");
  ASSERT_NE(plain_reducer, nullptr);
  auto tls_probe = Probe(plain_reducer->port(), "job-secret", std::chrono::seconds(3), true);
  ASSERT_FALSE(tls_probe.ok());
  EXPECT_EQ(tls_probe.status().code(), Code::kAuth) << tls_probe.status().ToString();
  EXPECT_TRUE(Has(tls_probe.status(), "no TLS on its data plane")) << tls_probe.status().ToString();
  EXPECT_TRUE(Has(tls_probe.status(), "reducer 127.0.0.1:")) << tls_probe.status().ToString();
}

TEST(ReducerProbeTest, NoTokenOnEitherSideIsAccepted) {
  auto reducer = StartReducer("");
  ASSERT_NE(reducer, nullptr);
  auto r = Probe(reducer->port(), "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->token_checked);
}

TEST(ReducerProbeTest, AReducerThatChecksNoTokenIsReportedAsSuch) {
  auto reducer = StartReducer("");
  ASSERT_NE(reducer, nullptr);
  auto r = Probe(reducer->port(), "job-secret");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->token_checked);  // the doctor warns: anyone may join
}

TEST(ReducerProbeTest, AWrongTokenIsAnAuthError) {
  auto reducer = StartReducer("job-secret");
  ASSERT_NE(reducer, nullptr);
  auto r = Probe(reducer->port(), "another-job");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kAuth) << r.status().ToString();
  EXPECT_TRUE(Has(r.status(), "reducer 127.0.0.1:" + std::to_string(reducer->port()))) << r.status().ToString();
  EXPECT_TRUE(Has(r.status(), "token")) << r.status().ToString();
}

TEST(ReducerProbeTest, AMissingTokenIsAnAuthError) {
  auto reducer = StartReducer("job-secret");
  ASSERT_NE(reducer, nullptr);
  auto r = Probe(reducer->port(), "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kAuth) << r.status().ToString();
  EXPECT_TRUE(Has(r.status(), "requires a job token")) << r.status().ToString();
}

TEST(ReducerProbeTest, NothingListeningIsConnectionRefusedAtOnce) {
  uint16_t port = 0;
  {
    Listener closed;  // bound, then closed: nothing listens there
    port = closed.port;
  }
  ASSERT_NE(port, 0);
  const auto start = std::chrono::steady_clock::now();
  auto r = Probe(port, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kIo) << r.status().ToString();
  EXPECT_TRUE(Has(r.status(), "connection refused")) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(ReducerProbeTest, APeerThatNeverAnswersTimesOut) {
  Listener silent;  // the kernel accepts; nobody reads or writes
  ASSERT_NE(silent.port, 0);
  const auto start = std::chrono::steady_clock::now();
  auto r = Probe(silent.port, "", std::chrono::milliseconds(300));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kTimeout) << r.status().ToString();
  EXPECT_TRUE(Has(r.status(), "within 0.3 s")) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(ReducerProbeTest, AnotherProtocolVersionIsNamed) {
  Listener old_reducer;
  ASSERT_NE(old_reducer.port, 0);
  std::thread peer([&] {
    const int conn = ::accept(old_reducer.fd, nullptr, nullptr);
    if (conn < 0) return;
    std::array<uint8_t, protocol::kHeaderBytes> hello{};
    (void)::recv(conn, hello.data(), hello.size(), MSG_WAITALL);
    // An ERROR header of protocol version 2, as an older reducer answers.
    protocol::FrameHeader header{2, protocol::FrameType::kError, 0};
    std::array<uint8_t, protocol::kHeaderBytes> reply{};
    protocol::EncodeHeader(header, reply.data());
    (void)::send(conn, reply.data(), reply.size(), MSG_NOSIGNAL);
    ::close(conn);
  });
  auto r = Probe(old_reducer.port, "");
  peer.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kVersion) << r.status().ToString();
  EXPECT_TRUE(Has(r.status(), "protocol version 2")) << r.status().ToString();
}

}  // namespace
}  // namespace rs::client
