// The worker's handshake state machine, driven without a socket: against the
// reducer's own machine (server/core/handshake.h), frame for frame, for every
// combination of tokens a job can be started with; and alone, for what a
// reducer that is not one of the job's (or not a reducer) can send it.
#include "client/handshake.h"

#include <gtest/gtest.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/auth.h"
#include "server/core/handshake.h"
#include "tests/support/status_text.h"

namespace rs::client {
namespace {

using protocol::FrameType;
using ServerAction = server::Handshake::Step::Action;

constexpr char kPeer[] = "reducer 10.0.0.9:4000 (stream 0)";

protocol::Nonce NonceOf(uint8_t v) {
  protocol::Nonce n;
  n.fill(v);
  return n;
}

protocol::Hello HelloFor(uint32_t rank, uint32_t world) {
  protocol::Hello h;
  h.session = protocol::SessionIdFromName("client-handshake");
  h.rank = rank;
  h.world = world;
  return h;
}

// One frame as read off the wire: its type and payload.
struct Frame {
  FrameType type{};
  std::vector<uint8_t> payload;
};

Frame Split(const std::vector<uint8_t>& bytes) {
  protocol::FrameHeader header;
  EXPECT_TRUE(protocol::DecodeHeader(std::span(bytes).first(protocol::kHeaderBytes), UINT64_MAX, &header, "test").ok());
  return Frame{header.type, std::vector<uint8_t>(bytes.begin() + protocol::kHeaderBytes, bytes.end())};
}

// Feeds one encoded frame to the reducer's machine; returns its last step.
server::Handshake::Step FeedServer(server::Handshake& hs, const std::vector<uint8_t>& frame) {
  server::Handshake::Step step = hs.OnHeader(std::span(frame).first(protocol::kHeaderBytes));
  if (step.action != ServerAction::kReadPayload) return step;
  return hs.OnPayload(std::span(frame).subspan(protocol::kHeaderBytes));
}

// What a run of both machines ended with.
struct Outcome {
  Status worker = Status::Ok();     // the worker's error, if it stopped the handshake
  Status reducer = Status::Ok();    // the reducer's refusal, if it refused
  bool done = false;                // the worker's machine finished
  bool token_checked = false;
  uint64_t max_piece_bytes = 0;
};

// The two machines talking, with nothing between them: HELLO, CHALLENGE,
// AUTH, then the reducer's join and WELCOME.
Outcome RunBoth(const std::string& worker_token, const std::string& reducer_token,
            Handshake::Unchecked unchecked = Handshake::Unchecked::kRefuse) {
  Outcome out;
  server::HandshakeConfig config;
  config.job_token = reducer_token;
  server::Handshake reducer(config, NonceOf(9));
  Handshake worker(kPeer, worker_token, HelloFor(1, 2), unchecked);

  StatusOr<std::vector<uint8_t>> hello = worker.Start(NonceOf(3));
  EXPECT_TRUE(hello.ok()) << hello.status().ToString();
  server::Handshake::Step step = FeedServer(reducer, *hello);
  if (step.action == ServerAction::kRefuse) {
    out.reducer = step.error;
    return out;
  }
  EXPECT_EQ(step.action, ServerAction::kReadHeader);
  const Frame challenge = Split(step.reply);
  EXPECT_TRUE(worker.Expects(challenge.type));
  StatusOr<std::vector<uint8_t>> auth = worker.OnChallenge(challenge.payload);
  if (!auth.ok()) {
    out.worker = auth.status();
    return out;
  }
  step = FeedServer(reducer, *auth);
  if (step.action == ServerAction::kRefuse) {
    out.reducer = step.error;
    return out;
  }
  EXPECT_EQ(step.action, ServerAction::kJoin);
  const Frame welcome = Split(reducer.Joined(4 << 20));
  EXPECT_TRUE(worker.Expects(welcome.type));
  out.worker = worker.OnWelcome(welcome.payload);
  out.done = worker.done();
  out.token_checked = worker.token_checked();
  out.max_piece_bytes = worker.max_piece_bytes();
  return out;
}

using rs::testing::Has;

TEST(ClientHandshakeTest, TheSameTokenOnBothSidesLetsTheWorkerInAndProvesTheReducer) {
  const Outcome out = RunBoth("job-secret", "job-secret");
  ASSERT_TRUE(out.reducer.ok()) << out.reducer.ToString();
  ASSERT_TRUE(out.worker.ok()) << out.worker.ToString();
  EXPECT_TRUE(out.done);
  EXPECT_TRUE(out.token_checked);
  EXPECT_EQ(out.max_piece_bytes, uint64_t{4} << 20);
}

TEST(ClientHandshakeTest, NoTokenOnEitherSideLetsTheWorkerInUnchecked) {
  const Outcome out = RunBoth("", "");
  ASSERT_TRUE(out.worker.ok()) << out.worker.ToString();
  EXPECT_TRUE(out.done);
  EXPECT_FALSE(out.token_checked);
}

TEST(ClientHandshakeTest, AWorkerWithoutTheTokenItIsAskedForStopsAndSaysWhichVariableToSet) {
  const Outcome out = RunBoth("", "job-secret");
  EXPECT_EQ(out.worker.code(), Code::kAuth) << out.worker.ToString();
  EXPECT_TRUE(Has(out.worker, kPeer)) << out.worker.ToString();
  EXPECT_TRUE(Has(out.worker, "REDUCER_JOB_TOKEN")) << out.worker.ToString();
  EXPECT_FALSE(out.done);
}

TEST(ClientHandshakeTest, AReducerThatChecksNoTokenGetsNoGradientsFromAWorkerThatHasOne) {
  const Outcome out = RunBoth("job-secret", "");
  EXPECT_EQ(out.worker.code(), Code::kAuth) << out.worker.ToString();
  EXPECT_TRUE(Has(out.worker, "does not check job tokens")) << out.worker.ToString();
  EXPECT_FALSE(out.done);
}

TEST(ClientHandshakeTest, TheProbeReportsAReducerThatChecksNoTokenInsteadOfRefusingIt) {
  const Outcome out = RunBoth("job-secret", "", Handshake::Unchecked::kReport);
  ASSERT_TRUE(out.worker.ok()) << out.worker.ToString();
  EXPECT_TRUE(out.done);
  EXPECT_FALSE(out.token_checked);
}

TEST(ClientHandshakeTest, AWrongTokenIsRefusedByTheReducerAtAuth) {
  const Outcome out = RunBoth("not-the-secret", "job-secret");
  EXPECT_TRUE(out.worker.ok()) << out.worker.ToString();
  EXPECT_EQ(out.reducer.code(), Code::kAuth) << out.reducer.ToString();
  EXPECT_FALSE(out.done);
}

// A peer that answers the handshake without the token (it has a different
// one, or is not a reducer at all) cannot make the worker trust it.
TEST(ClientHandshakeTest, AWelcomeWithoutTheJobsProofIsRefused) {
  Handshake worker(kPeer, "job-secret", HelloFor(0, 1));
  ASSERT_TRUE(worker.Start(NonceOf(3)).ok());
  ASSERT_TRUE(worker.OnChallenge(Split(protocol::EncodeChallenge({NonceOf(9), true})).payload).ok());
  protocol::Welcome forged;
  forged.max_piece_bytes = 1 << 20;  // mac all zero
  const Status st = worker.OnWelcome(Split(protocol::EncodeWelcome(forged)).payload);
  EXPECT_EQ(st.code(), Code::kAuth) << st.ToString();
  EXPECT_TRUE(Has(st, "could not prove it holds this job's token")) << st.ToString();
  EXPECT_EQ(worker.state(), Handshake::State::kFailed);
  EXPECT_EQ(worker.max_piece_bytes(), 0u);
}

TEST(ClientHandshakeTest, FramesOutOfOrderAreProtocolErrorsNamingTheFrame) {
  Handshake early(kPeer, "", HelloFor(0, 1));
  ASSERT_TRUE(early.Start(NonceOf(3)).ok());
  EXPECT_FALSE(early.Expects(FrameType::kWelcome));
  EXPECT_FALSE(early.Expects(FrameType::kReady));
  const Status welcome_first = early.OnWelcome(Split(protocol::EncodeWelcome({})).payload);
  EXPECT_EQ(welcome_first.code(), Code::kProtocol);
  EXPECT_TRUE(Has(welcome_first, "unexpected WELCOME")) << welcome_first.ToString();

  Handshake twice(kPeer, "", HelloFor(0, 1));
  ASSERT_TRUE(twice.Start(NonceOf(3)).ok());
  const std::vector<uint8_t> challenge = Split(protocol::EncodeChallenge({NonceOf(9), false})).payload;
  ASSERT_TRUE(twice.OnChallenge(challenge).ok());
  EXPECT_FALSE(twice.Expects(FrameType::kChallenge));
  EXPECT_TRUE(twice.Expects(FrameType::kWelcome));
  const StatusOr<std::vector<uint8_t>> again = twice.OnChallenge(challenge);
  EXPECT_EQ(again.status().code(), Code::kProtocol);
  EXPECT_TRUE(Has(again.status(), "unexpected CHALLENGE")) << again.status().ToString();
}

TEST(ClientHandshakeTest, AMalformedChallengeFailsNamingTheReducer) {
  Handshake worker(kPeer, "", HelloFor(0, 1));
  ASSERT_TRUE(worker.Start(NonceOf(3)).ok());
  const std::vector<uint8_t> short_payload(3, 0xff);
  const StatusOr<std::vector<uint8_t>> auth = worker.OnChallenge(short_payload);
  ASSERT_FALSE(auth.ok());
  EXPECT_TRUE(Has(auth.status(), kPeer)) << auth.status().ToString();
  EXPECT_EQ(worker.state(), Handshake::State::kFailed);
}

TEST(ClientHandshakeTest, NoNonceFromTheSystemMeansNoHello) {
  Handshake worker(kPeer, "", HelloFor(0, 1));
  const StatusOr<std::vector<uint8_t>> hello = worker.Start(Status(Code::kInternal, "getrandom failed"));
  ASSERT_FALSE(hello.ok());
  EXPECT_TRUE(Has(hello.status(), "getrandom failed")) << hello.status().ToString();
  EXPECT_EQ(worker.state(), Handshake::State::kFailed);
}

TEST(ClientHandshakeTest, TheHelloCarriesTheNonceItWasStartedWith) {
  Handshake worker(kPeer, "", HelloFor(3, 4));
  const StatusOr<std::vector<uint8_t>> bytes = worker.Start(NonceOf(0x5a));
  ASSERT_TRUE(bytes.ok());
  protocol::Hello sent;
  ASSERT_TRUE(protocol::DecodeHello(Split(*bytes).payload, &sent).ok());
  EXPECT_EQ(sent.client_nonce, NonceOf(0x5a));
  EXPECT_EQ(sent.rank, 3u);
  EXPECT_EQ(worker.hello().client_nonce, NonceOf(0x5a));
}

}  // namespace
}  // namespace rs::client
