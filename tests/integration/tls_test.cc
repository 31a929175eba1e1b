// TLS on the data plane (reducerd --tls, REDUCER_TLS=1): sums come back
// exact through it, the gradients on the wire are not readable, and every
// mismatch (one end without TLS, another token, a peer that never finishes
// the handshake) ends in an error that names its fix while the reducer goes
// on serving everyone else.
#include <signal.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <asio.hpp>
#include <atomic>
#include <cstring>
#include <thread>

#include "common/data_tls.h"
#include "tests/support/test_cluster.h"

namespace rs::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kTlsToken[] = "tls-test-token";

class TlsTest : public ::testing::Test {
 public:
  void SetUp() override {
    token_file_ = WriteTokenFile(kTlsToken);
    reducer_ = std::make_unique<ReducerProcess>(std::vector<std::string>{
        "--job-token-file", token_file_, "--tls", "1", "--op-timeout", "5s", "--join-timeout", "5s",
        "--handshake-timeout", "2s"});
    ASSERT_TRUE(reducer_->ok()) << reducer_->Log();
  }

  client::ClientOptions RankOptions(const std::string& session, uint32_t rank, uint32_t world, bool tls = true,
                                    const std::string& token = kTlsToken) {
    auto o = Options({reducer_->endpoint()}, session, rank, world, token);
    o.tls = tls;
    o.connect_timeout = seconds(15);
    o.op_timeout = seconds(15);
    return o;
  }

  // A 2-rank session over TLS must work after whatever the test did.
  void ExpectTlsSessionWorks(const std::string& session) {
    RunRanks(2, [&](uint32_t rank) {
      auto c = client::Client::Create(RankOptions(session, rank, 2));
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      std::vector<float> v(1000, 1.0f + rank);
      ASSERT_TRUE((*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait().ok());
      EXPECT_EQ(v[999], 3.0f);
    });
  }

  std::string token_file_;
  std::unique_ptr<ReducerProcess> reducer_;
};

TEST_F(TlsTest, SumsAreExactOnEveryRankThroughTls) {
  constexpr uint32_t kWorld = 3;
  RunRanks(kWorld, [&](uint32_t rank) {
    auto o = RankOptions("exact", rank, kWorld);
    o.streams_per_reducer = 2;
    o.crc = true;
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    // From one element to many pieces per stream.
    for (size_t count : {size_t{1}, size_t{1000}, size_t{3} << 20}) {
      std::vector<float> in(count), out(count);
      for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>((i * 7 + rank * 13) % 1024);
      ASSERT_TRUE((*c)->AllReduce(in.data(), out.data(), count, DataType::kFloat32, ReduceOp::kSum)->Wait().ok());
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (uint32_t r = 0; r < kWorld; ++r) want += static_cast<float>((i * 7 + r * 13) % 1024);
        ASSERT_EQ(out[i], want) << "element " << i << " of " << count;
      }
    }
  });
}

// Relays one connection to the reducer and keeps what the worker sent.
class RecordingRelay {
 public:
  explicit RecordingRelay(uint16_t target) : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this, target] {
      asio::ip::tcp::socket in(io_), out(io_);
      acceptor_.accept(in);
      out.connect({asio::ip::make_address("127.0.0.1"), target});
      std::thread back([&] { Pump(out, in, nullptr); });
      Pump(in, out, &sent_);
      back.join();
    });
  }
  ~RecordingRelay() {
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  // What the worker sent, once both sides have closed.
  std::vector<uint8_t> Finish() {
    thread_.join();
    return std::move(sent_);
  }

 private:
  static void Pump(asio::ip::tcp::socket& from, asio::ip::tcp::socket& to, std::vector<uint8_t>* record) {
    std::array<uint8_t, 65536> buf;
    asio::error_code ec;
    while (true) {
      const size_t n = from.read_some(asio::buffer(buf), ec);
      if (ec) break;
      if (record != nullptr) record->insert(record->end(), buf.begin(), buf.begin() + n);
      asio::write(to, asio::buffer(buf.data(), n), ec);
      if (ec) break;
    }
    to.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  }

  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::vector<uint8_t> sent_;
  std::thread thread_;
};

// True when `haystack` holds 64 bytes of `needle`'s run anywhere.
bool BytesContain(const std::vector<uint8_t>& haystack, const std::vector<uint8_t>& needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.begin() + 64) != haystack.end();
}

TEST_F(TlsTest, TheGradientsOnTheWireAreNotReadable) {
  std::vector<float> gradient(64 << 10);
  for (size_t i = 0; i < gradient.size(); ++i) gradient[i] = 0.001f * static_cast<float>(i % 977 + 1);
  std::vector<uint8_t> bytes(gradient.size() * sizeof(float));
  std::memcpy(bytes.data(), gradient.data(), bytes.size());
  // The same relay in front of a plain reducer sees the gradient's bytes:
  // the check can see them where they are.
  ReducerProcess plain({"--job-token-file", token_file_});
  ASSERT_TRUE(plain.ok()) << plain.Log();
  for (bool tls : {false, true}) {
    RecordingRelay relay(tls ? reducer_->port() : plain.port());
    auto o = Options({{"127.0.0.1", relay.port()}}, tls ? "wire-tls" : "wire-plain", 0, 1, kTlsToken);
    o.tls = tls;
    o.connect_timeout = seconds(15);
    {
      auto c = client::Client::Create(o);
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      std::vector<float> out(gradient.size());
      ASSERT_TRUE(
          (*c)->AllReduce(gradient.data(), out.data(), out.size(), DataType::kFloat32, ReduceOp::kSum)->Wait().ok());
      EXPECT_TRUE(out == gradient);
    }
    const std::vector<uint8_t> sent = relay.Finish();  // the client has closed
    EXPECT_GT(sent.size(), bytes.size());
    EXPECT_EQ(BytesContain(sent, bytes), !tls) << (tls ? "the gradient went in the clear with TLS on"
                                                   : "the relay did not see a plain gradient");
  }
}

TEST_F(TlsTest, AWorkerWithoutTlsIsRefusedNamingReducerTls) {
  auto c = client::Client::Create(RankOptions("plain-worker", 0, 1, /*tls=*/false));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kAuth) << c.status().ToString();
  EXPECT_NE(c.status().message().find("REDUCER_TLS=1"), std::string::npos) << c.status().message();
  ExpectTlsSessionWorks("after-plain-worker");
  EXPECT_NE(reducer_->Log().find("connected without it"), std::string::npos) << reducer_->Log();
}

TEST_F(TlsTest, AWorkerWithTlsRefusesAReducerWithoutIt) {
  ReducerProcess plain({"--job-token-file", token_file_, "--join-timeout", "3s"});
  ASSERT_TRUE(plain.ok()) << plain.Log();
  auto o = Options({plain.endpoint()}, "tls-worker", 0, 1, kTlsToken);
  o.tls = true;
  o.connect_timeout = seconds(15);
  auto c = client::Client::Create(o);
  ASSERT_FALSE(c.ok()) << "a worker with TLS on used a reducer without it";
  EXPECT_EQ(c.status().code(), Code::kAuth) << c.status().ToString();
  const std::string& why = c.status().message();
  EXPECT_NE(why.find("reducer 127.0.0.1:" + std::to_string(plain.port())), std::string::npos) << why;
  EXPECT_NE(why.find("no TLS on its data plane"), std::string::npos) << why;
  EXPECT_NE(plain.Log().find("opened with TLS"), std::string::npos) << plain.Log();
}

TEST_F(TlsTest, AnotherTokenFailsTheTlsHandshakeAndTheOthersGoOn) {
  auto c = client::Client::Create(RankOptions("other-token", 0, 1, true, "not-the-token"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kAuth) << c.status().ToString();
  EXPECT_NE(c.status().message().find("job token differs"), std::string::npos) << c.status().message();
  ExpectTlsSessionWorks("after-other-token");
}

TEST_F(TlsTest, AWorkerWithTlsAndNoTokenIsToldWhy) {
  auto c = client::Client::Create(RankOptions("no-token", 0, 1, true, ""));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument) << c.status().ToString();
  EXPECT_NE(c.status().message().find("REDUCER_TLS"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("job token"), std::string::npos) << c.status().message();
}

TEST_F(TlsTest, ReducerdWithTlsAndNoTokenDoesNotStart) {
  ReducerProcess no_token({"--tls", "1"});
  EXPECT_FALSE(no_token.ok());
  EXPECT_NE(no_token.Log().find("keyed by the job token"), std::string::npos) << no_token.Log();
}

TEST_F(TlsTest, AKilledReducerIsSurvivedOverTlsWithExactResults) {
  ReducerProcess second({"--job-token-file", token_file_, "--tls", "1", "--op-timeout", "60s"});
  ASSERT_TRUE(second.ok()) << second.Log();
  const std::vector<client::Endpoint> reducers = {reducer_->endpoint(), second.endpoint()};
  constexpr uint32_t kWorld = 2;
  constexpr int kOps = 40;
  std::atomic<bool> killed{false};
  RunRanks(kWorld, [&](uint32_t rank) {
    auto o = Options(reducers, "tls-failover", rank, kWorld, kTlsToken);
    o.tls = true;
    o.failover = true;
    o.liveness_timeout = milliseconds(2000);
    o.connect_timeout = seconds(15);
    o.op_timeout = seconds(30);
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (int k = 0; k < kOps; ++k) {
      std::vector<float> v(200'000);
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 3 + k * 7 + rank * 11) % 4096);
      const Status st =
          (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait(seconds(60));
      ASSERT_TRUE(st.ok()) << "rank " << rank << " operation " << k << ": " << st.ToString();
      for (size_t i = 0; i < v.size(); i += 997) {
        float want = 0;
        for (uint32_t r = 0; r < kWorld; ++r) want += static_cast<float>((i * 3 + k * 7 + r * 11) % 4096);
        ASSERT_EQ(v[i], want) << "rank " << rank << " operation " << k;
      }
      if (rank == 0 && k == 10 && !killed.exchange(true)) kill(second.pid(), SIGKILL);
    }
    EXPECT_GE((*c)->stats().epoch, 1u) << "rank " << rank << " never moved past the killed reducer";
  });
}

TEST_F(TlsTest, APeerThatStallsInTheTlsHandshakeIsClosedAtTheHandshakeTimeout) {
  asio::io_context io;
  asio::ip::tcp::socket stalled(io);
  stalled.connect({asio::ip::make_address("127.0.0.1"), reducer_->port()});
  // The start of a TLS record, and nothing more.
  const uint8_t partial[] = {kTlsHandshakeRecord, 0x03, 0x01};
  asio::write(stalled, asio::buffer(partial));
  ExpectTlsSessionWorks("beside-a-stalled-peer");
  // --handshake-timeout 2s: the reducer closes it. Bounded here: after
  // 20 s the watchdog shuts the socket, and the read below fails the test.
  const auto start = std::chrono::steady_clock::now();
  std::atomic<bool> answered{false};
  std::thread watchdog([&] {
    while (!answered && std::chrono::steady_clock::now() - start < seconds(20)) {
      std::this_thread::sleep_for(milliseconds(50));
    }
    asio::error_code ignored;
    if (!answered) stalled.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  });
  std::array<uint8_t, 64> buf;
  asio::error_code ec;
  stalled.read_some(asio::buffer(buf), ec);
  answered = true;
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset) << ec.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(15));
  stalled.close();
  watchdog.join();
}

}  // namespace
}  // namespace rs::testing
