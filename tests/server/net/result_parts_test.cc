// Cut-through results on a real ReducerServer over 127.0.0.1: ranks scripted
// on raw sockets send half of a piece, and the reducer must already answer
// with the reduced first part of it; the parts that follow cover the rest of
// the piece in order, each equal to the rank-order sum. Ranks that do not
// all ask for parts get whole pieces, and so do operations cut into many
// pieces per rank (--whole-pieces-from).
#include <gtest/gtest.h>
#include <poll.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/auth.h"
#include "protocol/wire.h"
#include "server/net/reducer_server.h"

namespace rs::server {
namespace {

constexpr uint64_t kCount = 64 * 1024;  // 256 KiB of float32: one piece
constexpr uint64_t kHalf = kCount / 2;

float Value(uint32_t rank, uint64_t i) { return static_cast<float>(i % 1000) * static_cast<float>(rank + 1); }

// One rank on a raw socket. Reads give up after 10 s rather than hang.
class ScriptedPartsRank {
 public:
  ScriptedPartsRank(asio::io_context& io, uint16_t port) : s_(io) {
    s_.connect({asio::ip::make_address("127.0.0.1"), port});
    timeval tv{10, 0};
    setsockopt(s_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }

  void Hello(const protocol::SessionId& session, uint32_t rank, uint32_t world, uint32_t flags) {
    protocol::Hello hello;
    hello.session = session;
    hello.rank = rank;
    hello.world = world;
    hello.flags = flags;
    asio::write(s_, asio::buffer(protocol::EncodeHello(hello)));
    ASSERT_EQ(Read(nullptr), protocol::FrameType::kChallenge);
    asio::write(s_, asio::buffer(protocol::EncodeAuth({})));
    ASSERT_EQ(Read(nullptr), protocol::FrameType::kWelcome);
  }

  // The next frame's type; its payload into *payload.
  protocol::FrameType Read(std::vector<uint8_t>* payload) {
    std::array<uint8_t, protocol::kHeaderBytes> head{};
    asio::error_code ec;
    asio::read(s_, asio::buffer(head), ec);
    if (ec) {
      ADD_FAILURE() << "no frame from the reducer: " << ec.message();
      return protocol::FrameType::kError;
    }
    protocol::FrameHeader h;
    EXPECT_TRUE(protocol::DecodeHeader(head, 1 << 30, &h).ok());
    std::vector<uint8_t> body(h.payload_bytes);
    asio::read(s_, asio::buffer(body), ec);
    EXPECT_FALSE(ec) << ec.message();
    if (payload) *payload = std::move(body);
    return h.type;
  }

  // Whether a frame starts arriving within `wait`.
  bool Readable(std::chrono::milliseconds wait) {
    pollfd p{s_.native_handle(), POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(wait.count())) == 1;
  }

  // Sends the DATA frame's headers and elements [0, half): piece 0 of an
  // operation of `pieces` pieces (the others are never sent).
  void SendFirstHalf(uint32_t rank, uint32_t pieces = 1) {
    elements_.resize(kCount);
    for (uint64_t i = 0; i < kCount; ++i) elements_[i] = Value(rank, i);
    protocol::PieceHeader p;
    p.pieces = pieces;
    p.total_count = kCount * pieces;
    p.count = kCount;
    std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> head{};
    protocol::EncodePieceFrame(protocol::FrameType::kData, p, &head);
    asio::write(s_, std::array<asio::const_buffer, 2>{asio::buffer(head),
                                                      asio::buffer(elements_.data(), kHalf * sizeof(float))});
  }
  void SendSecondHalf() { asio::write(s_, asio::buffer(elements_.data() + kHalf, kHalf * sizeof(float))); }

  // Reads one RESULT frame; checks its elements are the sum of `world` ranks.
  protocol::PieceHeader ReadResult(uint32_t world) {
    std::vector<uint8_t> payload;
    protocol::PieceHeader h;
    if (Read(&payload) != protocol::FrameType::kResult) {
      ADD_FAILURE() << "expected a RESULT frame";
      return h;
    }
    EXPECT_TRUE(protocol::DecodePieceHeader(payload, static_cast<uint32_t>(payload.size()), 1 << 30, &h).ok());
    const auto* got = reinterpret_cast<const float*>(payload.data() + protocol::kPieceHeaderBytes);
    for (uint64_t i = 0; i < h.count; ++i) {
      float want = 0;
      for (uint32_t r = 0; r < world; ++r) want += Value(r, h.offset + i);
      if (got[i] != want) {
        ADD_FAILURE() << "element " << h.offset + i << " is " << got[i] << ", not " << want;
        break;
      }
    }
    return h;
  }

 private:
  asio::ip::tcp::socket s_;
  std::vector<float> elements_;
};

struct Cluster {
  explicit Cluster(size_t part_bytes, uint32_t whole_pieces_from = ServerConfig{}.whole_pieces_from) {
    ServerConfig config;
    config.listen_host = "127.0.0.1";
    config.result_part_bytes = part_bytes;
    config.whole_pieces_from = whole_pieces_from;
    auto created = ReducerServer::Create(config);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    if (created.ok()) server = std::move(created).value();
  }
  // Ranks 0 and 1 of session `name` joined, `flags(rank)` in their HELLO,
  // and told READY.
  std::vector<std::unique_ptr<ScriptedPartsRank>> JoinTwo(const std::string& name,
                                                     const std::function<uint32_t(uint32_t)>& flags) {
    std::vector<std::unique_ptr<ScriptedPartsRank>> ranks;
    for (uint32_t r = 0; r < 2; ++r) {
      ranks.push_back(std::make_unique<ScriptedPartsRank>(io, server->port()));
      ranks[r]->Hello(protocol::SessionIdFromName(name), r, 2, flags(r));
    }
    for (auto& rank : ranks) EXPECT_EQ(rank->Read(nullptr), protocol::FrameType::kReady);
    return ranks;
  }
  asio::io_context io;
  std::unique_ptr<ReducerServer> server;
};

// The default logger's last lines while it lives (read under the sink's lock:
// the server's threads may still be logging).
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("captured", sink_));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() const {
    std::string out;
    for (const std::string& line : sink_->last_formatted()) out += line;
    return out;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_ =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
  std::shared_ptr<spdlog::logger> previous_;
};

// Each rank's next RESULT is the whole piece, reduced.
void ExpectTheWholePieceInOneResult(const std::vector<std::unique_ptr<ScriptedPartsRank>>& ranks) {
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    const protocol::PieceHeader h = ranks[r]->ReadResult(static_cast<uint32_t>(ranks.size()));
    EXPECT_EQ(h.offset, 0u);
    EXPECT_EQ(h.count, kCount) << "rank " << r << ": the whole piece in one RESULT";
  }
}

TEST(ResultPartsTest, TheFirstPartOfAResultArrivesBeforeTheRanksSendTheRest) {
  Cluster c(16 << 10);
  ASSERT_NE(c.server, nullptr);
  auto ranks = c.JoinTwo("cut-through", [](uint32_t) { return protocol::kHelloResultParts; });
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (uint32_t r = 0; r < 2; ++r) ranks[r]->SendFirstHalf(r);
  // Only half of each contribution is sent: a RESULT now is a part of the piece.
  std::vector<uint64_t> next(2, 0);
  for (uint32_t r = 0; r < 2; ++r) {
    const protocol::PieceHeader h = ranks[r]->ReadResult(2);
    EXPECT_EQ(h.offset, 0u);
    EXPECT_GE(h.count, (16u << 10) / sizeof(float)) << "a part is at least --result-part";
    EXPECT_LE(h.count, kHalf) << "only what both ranks sent can be reduced";
    next[r] = h.offset + h.count;
  }
  for (auto& rank : ranks) rank->SendSecondHalf();
  // The rest follows in order, part after part, to the end of the piece.
  for (uint32_t r = 0; r < 2; ++r) {
    for (int frames = 0; next[r] < kCount && frames < 1000; ++frames) {
      const protocol::PieceHeader h = ranks[r]->ReadResult(2);
      if (::testing::Test::HasFailure()) return;
      ASSERT_EQ(h.offset, next[r]) << "rank " << r << ": parts in order, without gaps";
      next[r] = h.offset + h.count;
    }
    EXPECT_EQ(next[r], kCount) << "rank " << r;
  }
}

TEST(ResultPartsTest, RanksThatDoNotAllAskForPartsGetWholePieces) {
  CapturedLog log;
  Cluster c(16 << 10);
  ASSERT_NE(c.server, nullptr);
  // Rank 1 is an older client: no parts.
  auto ranks = c.JoinTwo("whole-pieces", [](uint32_t r) { return r == 0 ? protocol::kHelloResultParts : 0u; });
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (uint32_t r = 0; r < 2; ++r) ranks[r]->SendFirstHalf(r);
  for (auto& rank : ranks) rank->SendSecondHalf();
  ExpectTheWholePieceInOneResult(ranks);
  const std::vector<SessionSnapshot> sessions = c.server->Sessions();
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0].stats.result_part_bytes, 0u);
  EXPECT_EQ(sessions[0].stats.rank_without_parts, std::optional<uint32_t>(1)) << "reducerctl says which rank";
  // The operator hears why the parts they set are not used (said when the
  // session became ready, before any result went out).
  EXPECT_NE(log.text().find("results go back as whole pieces, not in parts: rank 1's client does not take parts"),
            std::string::npos)
      << log.text();
}

// The default --whole-pieces-from (64 per rank, 2 ranks here; loopback's
// round trips are far below the 2 ms it needs): an operation of 128 pieces
// gets its results whole, one of 127 in parts.
TEST(ResultPartsTest, AnOperationOfManyPiecesPerRankGetsWholePieces) {
  Cluster c(16 << 10);
  ASSERT_NE(c.server, nullptr);
  ASSERT_EQ(ServerConfig{}.whole_pieces_from, 64u);
  auto ranks = c.JoinTwo("large-op", [](uint32_t) { return protocol::kHelloResultParts; });
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (uint32_t r = 0; r < 2; ++r) ranks[r]->SendFirstHalf(r, /*pieces=*/128);
  // Half of every contribution is in: parts would be on their way (the
  // first test gets one at once), a whole piece is not.
  EXPECT_FALSE(ranks[0]->Readable(std::chrono::milliseconds(500))) << "a part of a whole piece was sent";
  for (auto& rank : ranks) rank->SendSecondHalf();
  ExpectTheWholePieceInOneResult(ranks);
}

TEST(ResultPartsTest, OperationsOfFewerPiecesPerRankStillGetParts) {
  for (const uint32_t whole_from : {64u, 0u}) {
    SCOPED_TRACE("--whole-pieces-from " + std::to_string(whole_from));
    Cluster c(16 << 10, whole_from);
    ASSERT_NE(c.server, nullptr);
    auto ranks = c.JoinTwo("medium-op-" + std::to_string(whole_from),
                           [](uint32_t) { return protocol::kHelloResultParts; });
    ASSERT_FALSE(::testing::Test::HasFailure());
    // 127 pieces: just under 64 per rank; with 0, any number of pieces.
    for (uint32_t r = 0; r < 2; ++r) ranks[r]->SendFirstHalf(r, whole_from == 0 ? 1000 : 127);
    for (uint32_t r = 0; r < 2; ++r) {
      const protocol::PieceHeader h = ranks[r]->ReadResult(2);
      EXPECT_EQ(h.offset, 0u);
      EXPECT_LE(h.count, kHalf) << "a part, before the ranks sent the rest";
    }
    for (auto& rank : ranks) rank->SendSecondHalf();
  }
}

}  // namespace
}  // namespace rs::server
