// Fuzz target: the reducer's handshake state machine
// (server/core/handshake.*), fed a byte stream the way a connection feeds it:
// a 16-byte header, then as many payload bytes as the step asks for, and so on.
// Properties: it asks for at most Handshake::kMaxPayloadBytes; a stream joins
// only after a valid HELLO and, with a token, only with the right proof; a
// refused stream stays refused; every frame it sends back decodes.
#include <algorithm>

#include "protocol/auth.h"
#include "server/core/handshake.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using rs::server::Handshake;
using Action = Handshake::Step::Action;
namespace protocol = rs::protocol;

constexpr char kToken[] = "fuzz-token";

std::span<const uint8_t> PayloadOf(const std::vector<uint8_t>& frame) {
  return std::span(frame).subspan(protocol::kHeaderBytes);
}

}  // namespace

// Input: a flags byte (bit 0: the reducer has a token; bit 1: replace each
// AUTH payload by the valid proof, so the fuzzer gets past the HMAC; bit 2:
// the session refuses the join), a byte for the session-size limit, then
// the stream's bytes.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rs::fuzz::Cursor in(data, size);
  const uint8_t flags = in.Byte();
  const bool token = flags & 1;
  const bool forge_auth = flags & 2;
  const bool refuse_join = flags & 4;
  rs::server::HandshakeConfig config;
  if (token) config.job_token = kToken;
  config.max_session_streams = uint64_t{1} << (in.Byte() % 24);
  protocol::Nonce nonce;
  nonce.fill(0x5a);
  Handshake hs(config, nonce);

  Handshake::Step step = Handshake::Start();
  bool valid_proof_sent = false;
  for (int frames = 0; frames < 16; ++frames) {
    FUZZ_CHECK(step.action == Action::kReadHeader);
    if (!step.reply.empty()) {
      // The only reply in the handshake is the CHALLENGE to a HELLO.
      protocol::FrameHeader h;
      FUZZ_CHECK(protocol::DecodeHeader(step.reply, 0, &h).ok() && h.type == protocol::FrameType::kChallenge);
      protocol::Challenge challenge;
      FUZZ_CHECK(protocol::DecodeChallenge(PayloadOf(step.reply), &challenge).ok());
      FUZZ_CHECK(challenge.server_nonce == nonce && challenge.token_required == token);
      FUZZ_CHECK(hs.has_hello() && hs.state() == Handshake::State::kAwaitAuth);
    }
    const auto header = in.Take(protocol::kHeaderBytes);
    if (header.size() < protocol::kHeaderBytes) return 0;  // the peer stopped sending
    step = hs.OnHeader(header);
    if (step.action == Action::kRefuse) break;
    FUZZ_CHECK(step.action == Action::kReadPayload);
    FUZZ_CHECK(step.payload_bytes <= Handshake::kMaxPayloadBytes);
    std::vector<uint8_t> payload;
    const auto bytes = in.Take(step.payload_bytes);
    if (bytes.size() < step.payload_bytes) return 0;
    payload.assign(bytes.begin(), bytes.end());
    const bool auth_frame = hs.state() == Handshake::State::kAwaitAuth;
    if (auth_frame && forge_auth && token && payload.size() == protocol::kMacBytes) {
      const protocol::Mac proof = protocol::ClientProof(kToken, hs.hello(), nonce);
      std::copy(proof.begin(), proof.end(), payload.begin());
    }
    if (auth_frame && token && payload.size() == protocol::kMacBytes) {
      protocol::Mac mac;
      std::copy(payload.begin(), payload.end(), mac.begin());
      valid_proof_sent = protocol::MacEqual(mac, protocol::ClientProof(kToken, hs.hello(), nonce));
    }
    step = hs.OnPayload(payload);
    if (step.action == Action::kRefuse) break;
    if (step.action == Action::kJoin) {
      FUZZ_CHECK(hs.has_hello() && hs.state() == Handshake::State::kAwaitJoin);
      FUZZ_CHECK(!token || valid_proof_sent);
      const protocol::Hello& hello = hs.hello();
      FUZZ_CHECK(uint64_t{hello.world} * hello.streams <= config.max_session_streams);
      FUZZ_CHECK(hello.rank < hello.world && hello.stream < hello.streams);
      if (refuse_join) {
        step = hs.JoinRefused(rs::Status(rs::Code::kCancelled, "refused by the fuzzer"));
        break;
      }
      const std::vector<uint8_t> welcome_frame = hs.Joined(4096);
      protocol::Welcome welcome;
      FUZZ_CHECK(protocol::DecodeWelcome(PayloadOf(welcome_frame), &welcome).ok());
      FUZZ_CHECK(welcome.max_piece_bytes == 4096);
      if (token) FUZZ_CHECK(protocol::MacEqual(welcome.mac, protocol::ServerProof(kToken, hello, nonce)));
      FUZZ_CHECK(hs.done());
      return 0;
    }
  }
  if (step.action != Action::kRefuse) return 0;
  FUZZ_CHECK(!step.error.ok());
  FUZZ_CHECK(hs.state() == Handshake::State::kFailed);
  // A refused stream stays refused, whatever comes next.
  const auto more = in.Take(protocol::kHeaderBytes);
  if (more.size() == protocol::kHeaderBytes) FUZZ_CHECK(hs.OnHeader(more).action == Action::kRefuse);
  FUZZ_CHECK(hs.TimedOut(std::chrono::seconds(1)).action == Action::kRefuse);
  return 0;
}
