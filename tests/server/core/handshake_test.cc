// The reducer's handshake state machine, driven frame by frame without a
// socket: what a worker must send to be let in, and the error each wrong
// frame earns.
#include "server/core/handshake.h"

#include <gtest/gtest.h>

#include "protocol/auth.h"

namespace rs::server {
namespace {

using Action = Handshake::Step::Action;
using protocol::FrameType;

constexpr char kToken[] = "handshake-token";

protocol::Nonce NonceOf(uint8_t v) {
  protocol::Nonce n;
  n.fill(v);
  return n;
}

protocol::Hello HelloFor(uint32_t rank, uint32_t world, uint16_t streams = 1) {
  protocol::Hello h;
  h.session = protocol::SessionIdFromName("handshake");
  h.rank = rank;
  h.world = world;
  h.streams = streams;
  h.client_nonce = NonceOf(7);
  return h;
}

// Feeds one encoded frame (header + payload) and returns the last step.
Handshake::Step Feed(Handshake& hs, const std::vector<uint8_t>& frame) {
  Handshake::Step step = hs.OnHeader(std::span(frame).first(protocol::kHeaderBytes));
  if (step.action != Action::kReadPayload) return step;
  EXPECT_EQ(step.payload_bytes, frame.size() - protocol::kHeaderBytes);
  return hs.OnPayload(std::span(frame).subspan(protocol::kHeaderBytes));
}

HandshakeConfig WithToken() {
  HandshakeConfig c;
  c.job_token = kToken;
  return c;
}

TEST(HandshakeTest, AWorkerWithTheTokenIsChallengedThenJoinsAndGetsTheReducersProof) {
  const protocol::Nonce server_nonce = NonceOf(9);
  Handshake hs(WithToken(), server_nonce);
  EXPECT_EQ(Handshake::Start().action, Action::kReadHeader);
  const protocol::Hello hello = HelloFor(2, 4);

  Handshake::Step step = Feed(hs, protocol::EncodeHello(hello));
  ASSERT_EQ(step.action, Action::kReadHeader) << step.error.ToString();
  ASSERT_TRUE(hs.has_hello());
  EXPECT_EQ(hs.hello().rank, 2u);
  protocol::Challenge challenge;
  ASSERT_TRUE(protocol::DecodeChallenge(std::span(step.reply).subspan(protocol::kHeaderBytes), &challenge).ok());
  EXPECT_TRUE(challenge.token_required);
  EXPECT_EQ(challenge.server_nonce, server_nonce);

  step = Feed(hs, protocol::EncodeAuth({*protocol::ClientProof(kToken, hello, server_nonce)}));
  ASSERT_EQ(step.action, Action::kJoin) << step.error.ToString();
  EXPECT_EQ(hs.state(), Handshake::State::kAwaitJoin);

  const std::vector<uint8_t> frame = hs.Joined(1 << 20);
  EXPECT_TRUE(hs.done());
  protocol::Welcome welcome;
  ASSERT_TRUE(protocol::DecodeWelcome(std::span(frame).subspan(protocol::kHeaderBytes), &welcome).ok());
  EXPECT_EQ(welcome.max_piece_bytes, 1u << 20);
  EXPECT_TRUE(protocol::MacEqual(welcome.mac, *protocol::ServerProof(kToken, hello, server_nonce)));
}

TEST(HandshakeTest, WithoutATokenAnyAuthIsAcceptedAndTheChallengeSaysSo) {
  Handshake hs(HandshakeConfig{}, NonceOf(1));
  Handshake::Step step = Feed(hs, protocol::EncodeHello(HelloFor(0, 1)));
  protocol::Challenge challenge;
  ASSERT_TRUE(protocol::DecodeChallenge(std::span(step.reply).subspan(protocol::kHeaderBytes), &challenge).ok());
  EXPECT_FALSE(challenge.token_required);
  EXPECT_EQ(Feed(hs, protocol::EncodeAuth({})).action, Action::kJoin);
}

TEST(HandshakeTest, AWrongTokenIsRefused) {
  const protocol::Hello hello = HelloFor(0, 2);
  Handshake hs(WithToken(), NonceOf(3));
  ASSERT_EQ(Feed(hs, protocol::EncodeHello(hello)).action, Action::kReadHeader);
  const Handshake::Step step = Feed(hs, protocol::EncodeAuth({*protocol::ClientProof("other", hello, NonceOf(3))}));
  EXPECT_EQ(step.action, Action::kRefuse);
  EXPECT_EQ(step.error.code(), Code::kAuth);
  EXPECT_EQ(step.error.message(), "job token does not match this reducer's");
  EXPECT_EQ(hs.state(), Handshake::State::kFailed);
}

TEST(HandshakeTest, AProofForAnotherChallengeIsRefused) {
  // A recorded AUTH cannot be replayed: the proof covers this stream's nonce.
  const protocol::Hello hello = HelloFor(0, 2);
  Handshake hs(WithToken(), NonceOf(3));
  ASSERT_EQ(Feed(hs, protocol::EncodeHello(hello)).action, Action::kReadHeader);
  EXPECT_EQ(Feed(hs, protocol::EncodeAuth({*protocol::ClientProof(kToken, hello, NonceOf(4))})).error.code(),
            Code::kAuth);
}

TEST(HandshakeTest, GarbageIsRefusedAtTheHeader) {
  Handshake hs(WithToken(), NonceOf(1));
  const std::string http = "GET /metrics HTTP/1.1\r\n";
  const std::vector<uint8_t> bytes(http.begin(), http.end());
  const Handshake::Step step = hs.OnHeader(std::span(bytes).first(protocol::kHeaderBytes));
  EXPECT_EQ(step.action, Action::kRefuse);
  EXPECT_EQ(step.error.code(), Code::kProtocol);
  EXPECT_NE(step.error.message().find("bad magic"), std::string::npos) << step.error.message();
}

TEST(HandshakeTest, AnotherProtocolVersionIsNamed) {
  Handshake hs(WithToken(), NonceOf(1));
  const Handshake::Step step = Feed(hs, protocol::EncodeHello(HelloFor(0, 1), /*version=*/protocol::kProtocolVersion + 1));
  EXPECT_EQ(step.error.code(), Code::kVersion);
  EXPECT_EQ(step.error.message(), "protocol version 4 not supported, this reducer speaks 3");
}

TEST(HandshakeTest, FramesOutOfOrderAreRefusedBeforeTheirPayloadIsRead) {
  {
    Handshake hs(WithToken(), NonceOf(1));
    const Handshake::Step step = Feed(hs, protocol::EncodeAuth({}));
    EXPECT_EQ(step.action, Action::kRefuse);
    EXPECT_EQ(step.error.message(), "unexpected AUTH frame during the handshake");
  }
  {
    Handshake hs(WithToken(), NonceOf(1));
    ASSERT_EQ(Feed(hs, protocol::EncodeHello(HelloFor(0, 1))).action, Action::kReadHeader);
    EXPECT_EQ(Feed(hs, protocol::EncodeHello(HelloFor(0, 1))).error.message(),
              "unexpected HELLO frame during the handshake");
  }
  {
    Handshake hs(WithToken(), NonceOf(1));
    protocol::PieceHeader piece;
    piece.pieces = 1;
    piece.count = piece.total_count = 1 << 20;
    std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> frame;
    protocol::EncodePieceFrame(FrameType::kData, piece, &frame);
    const Handshake::Step step = hs.OnHeader(std::span(frame).first(protocol::kHeaderBytes));
    EXPECT_EQ(step.action, Action::kRefuse);
    EXPECT_EQ(step.error.message(), "DATA frame before the handshake finished");
  }
}

TEST(HandshakeTest, AnOversizedHandshakeFrameIsRefusedWithoutBeingBuffered) {
  Handshake hs(WithToken(), NonceOf(1));
  std::array<uint8_t, protocol::kHeaderBytes> header;
  protocol::EncodeHeader({protocol::kProtocolVersion, FrameType::kHello, 60'000}, header.data());
  const Handshake::Step step = hs.OnHeader(header);
  EXPECT_EQ(step.action, Action::kRefuse);
  EXPECT_EQ(step.error.message(), "HELLO frame of 60000 bytes is larger than any handshake frame (at most 1024)");
}

TEST(HandshakeTest, AHelloOfTheWrongSizeOrWithBadFieldsIsExplained) {
  {
    Handshake hs(WithToken(), NonceOf(1));
    std::vector<uint8_t> frame = protocol::EncodeHello(HelloFor(0, 1));
    frame.push_back(0);
    const uint32_t bytes = static_cast<uint32_t>(frame.size() - protocol::kHeaderBytes);
    protocol::EncodeHeader({protocol::kProtocolVersion, FrameType::kHello, bytes}, frame.data());
    const Handshake::Step step = Feed(hs, frame);
    EXPECT_EQ(step.error.code(), Code::kProtocol);
    EXPECT_EQ(step.error.message(),
              "HELLO payload is " + std::to_string(bytes) + " bytes, expected " + std::to_string(bytes - 1));
  }
  {
    Handshake hs(WithToken(), NonceOf(1));
    const Handshake::Step step = Feed(hs, protocol::EncodeHello(HelloFor(5, 4)));
    // The decoder's kProtocol, told apart at the handshake: a worker's
    // settings are wrong (the metrics' `invalid_argument`).
    EXPECT_EQ(step.error.code(), Code::kInvalidArgument);
    EXPECT_EQ(step.error.message(), "rank 5 is not below world size 4");
  }
}

TEST(HandshakeTest, ASessionLargerThanTheReducerCanServeIsRefusedAtHello) {
  HandshakeConfig config = WithToken();
  config.max_session_streams = 4096;
  Handshake hs(config, NonceOf(1));
  const Handshake::Step step = Feed(hs, protocol::EncodeHello(HelloFor(0, 16384, 64)));
  EXPECT_EQ(step.action, Action::kRefuse);
  EXPECT_EQ(step.error.code(), Code::kResourceExhausted);
  EXPECT_EQ(step.error.message(),
            "a session of 16384 ranks with 64 streams each needs 1048576 connections to this reducer, which "
            "accepts at most 4096 (--max-connections)");

  Handshake fits(config, NonceOf(1));
  EXPECT_EQ(Feed(fits, protocol::EncodeHello(HelloFor(0, 2048, 2))).action, Action::kReadHeader);
}

TEST(HandshakeTest, TimeoutsAndRefusedJoinsSayWhereTheStreamStopped) {
  Handshake silent(WithToken(), NonceOf(1));
  Handshake::Step step = silent.TimedOut(std::chrono::seconds(10));
  EXPECT_EQ(step.error.code(), Code::kTimeout);
  EXPECT_EQ(step.error.message(), "no HELLO within 10 s of connecting (the reducer's --handshake-timeout)");

  Handshake half(WithToken(), NonceOf(1));
  ASSERT_EQ(Feed(half, protocol::EncodeHello(HelloFor(0, 1))).action, Action::kReadHeader);
  EXPECT_EQ(half.TimedOut(std::chrono::milliseconds(1500)).error.message(),
            "HELLO but no AUTH within 1.5 s of connecting (the reducer's --handshake-timeout)");

  Handshake refused(HandshakeConfig{}, NonceOf(1));
  ASSERT_EQ(Feed(refused, protocol::EncodeHello(HelloFor(0, 1))).action, Action::kReadHeader);
  ASSERT_EQ(Feed(refused, protocol::EncodeAuth({})).action, Action::kJoin);
  step = refused.JoinRefused(Status(Code::kCancelled, "this reducer is shutting down"));
  EXPECT_EQ(step.action, Action::kRefuse);
  EXPECT_EQ(step.error.message(), "this reducer is shutting down");
  EXPECT_EQ(refused.state(), Handshake::State::kFailed);
}

TEST(HandshakeTest, NothingIsAcceptedAfterARefusal) {
  Handshake hs(WithToken(), NonceOf(1));
  ASSERT_EQ(Feed(hs, protocol::EncodeAuth({})).action, Action::kRefuse);
  const Handshake::Step step = Feed(hs, protocol::EncodeHello(HelloFor(0, 1)));
  EXPECT_EQ(step.action, Action::kRefuse);
  EXPECT_EQ(hs.state(), Handshake::State::kFailed);
}

}  // namespace
}  // namespace rs::server
