#include "server/core/handshake.h"

#include <cstdio>

#include "protocol/auth.h"

namespace rs::server {
namespace {

using protocol::FrameType;

// The frame a state waits for.
FrameType Expected(Handshake::State state) {
  return state == Handshake::State::kAwaitHello ? FrameType::kHello : FrameType::kAuth;
}

}  // namespace

Handshake::Handshake(HandshakeConfig config, StatusOr<protocol::Nonce> server_nonce)
    : config_(std::move(config)) {
  if (server_nonce.ok()) {
    server_nonce_ = *server_nonce;
  } else {
    nonce_error_ = server_nonce.status();
  }
}

Handshake::Step Handshake::Refuse(Status why) {
  state_ = State::kFailed;
  return Step{Step::Action::kRefuse, 0, {}, std::move(why)};
}

Handshake::Step Handshake::OnHeader(std::span<const uint8_t> header) {
  if (state_ != State::kAwaitHello && state_ != State::kAwaitAuth) {
    return Refuse(Status(Code::kInternal, "handshake frame after the handshake ended"));
  }
  // DATA frames are refused below whatever their size, with a clearer message.
  Status st = protocol::DecodeHeader(header, std::numeric_limits<uint64_t>::max(), &header_, "this reducer");
  if (!st.ok()) return Refuse(std::move(st));
  if (header_.type == FrameType::kData) {
    return Refuse(Status(Code::kProtocol, "DATA frame before the handshake finished"));
  }
  if (header_.type != Expected(state_)) {
    return Refuse(Status(Code::kProtocol, std::string("unexpected ") + protocol::FrameTypeName(header_.type) +
                                              " frame during the handshake"));
  }
  if (header_.payload_bytes > kMaxPayloadBytes) {
    return Refuse(Status(Code::kProtocol, std::string(protocol::FrameTypeName(header_.type)) + " frame of " +
                                              std::to_string(header_.payload_bytes) +
                                              " bytes is larger than any handshake frame (at most " +
                                              std::to_string(kMaxPayloadBytes) + ")"));
  }
  return Read(header_.payload_bytes);
}

Handshake::Step Handshake::OnPayload(std::span<const uint8_t> payload) {
  if (state_ == State::kAwaitHello) {
    Status st = protocol::DecodeHello(payload, &hello_);
    if (!st.ok()) {
      // A HELLO of the right size with fields out of range comes from a
      // misconfigured worker (rank not below world, too many streams, a
      // newer client's flags), not a broken one: refused as
      // kInvalidArgument, the `invalid_argument` kind of
      // reducer_handshakes_refused_total, while garbage stays kProtocol.
      if (payload.size() == protocol::kHelloPayloadBytes) st = Status(Code::kInvalidArgument, st.message());
      return Refuse(std::move(st));
    }
    has_hello_ = true;
    const uint64_t streams = uint64_t{hello_.world} * hello_.streams;
    if (streams > config_.max_session_streams) {
      return Refuse(Status(Code::kResourceExhausted,
                           "a session of " + std::to_string(hello_.world) + " ranks with " +
                               std::to_string(hello_.streams) + " streams each needs " + std::to_string(streams) +
                               " connections to this reducer, which accepts at most " +
                               std::to_string(config_.max_session_streams) + " (" + config_.limit_name + ")"));
    }
    if (!nonce_error_.ok()) return Refuse(nonce_error_);
    state_ = State::kAwaitAuth;
    Step step{Step::Action::kReadHeader, 0, {}, Status::Ok()};
    step.reply = protocol::EncodeChallenge({server_nonce_, !config_.job_token.empty()});
    return step;
  }
  if (state_ == State::kAwaitAuth) {
    protocol::Auth auth;
    Status st = protocol::DecodeAuth(payload, &auth);
    if (!st.ok()) return Refuse(std::move(st));
    if (!config_.job_token.empty()) {
      StatusOr<protocol::Mac> expected = protocol::ClientProof(config_.job_token, hello_, server_nonce_);
      if (!expected.ok()) return Refuse(expected.status());
      if (!protocol::MacEqual(auth.mac, *expected)) {
        return Refuse(Status(Code::kAuth, "job token does not match this reducer's"));
      }
      StatusOr<protocol::Mac> proof = protocol::ServerProof(config_.job_token, hello_, server_nonce_);
      if (!proof.ok()) return Refuse(proof.status());
      server_proof_ = *proof;
    }
    state_ = State::kAwaitJoin;
    return Step{Step::Action::kJoin, 0, {}, Status::Ok()};
  }
  return Refuse(Status(Code::kInternal, "handshake payload in the wrong state"));
}

std::vector<uint8_t> Handshake::Joined(uint64_t max_piece_bytes) {
  protocol::Welcome welcome;
  if (!config_.job_token.empty()) welcome.mac = server_proof_;
  welcome.max_piece_bytes = max_piece_bytes;
  state_ = State::kDone;
  return protocol::EncodeWelcome(welcome);
}

Handshake::Step Handshake::JoinRefused(const Status& why) { return Refuse(why); }

Handshake::Step Handshake::TimedOut(std::chrono::milliseconds limit) {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.3g s", static_cast<double>(limit.count()) / 1000.0);
  const char* where = state_ == State::kAwaitHello  ? "no HELLO"
                      : state_ == State::kAwaitAuth ? "HELLO but no AUTH"
                                                    : "no complete handshake";
  return Refuse(Status(Code::kTimeout, std::string(where) + " within " + seconds +
                                           " of connecting (the reducer's --handshake-timeout)"));
}

}  // namespace rs::server
