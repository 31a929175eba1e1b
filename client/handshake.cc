#include "client/handshake.h"

#include <utility>

#include "protocol/auth.h"

namespace rs::client {

using protocol::FrameType;

Handshake::Handshake(std::string peer, std::string token, protocol::Hello hello, Unchecked unchecked)
    : peer_(std::move(peer)), token_(std::move(token)), unchecked_(unchecked), hello_(std::move(hello)) {}

Status Handshake::Fail(Status why) {
  state_ = State::kFailed;
  return why;
}

Status Handshake::OutOfOrder(FrameType type) {
  return Fail(Status(Code::kProtocol, peer_ + " sent an unexpected " + protocol::FrameTypeName(type) + " frame"));
}

StatusOr<std::vector<uint8_t>> Handshake::Start(StatusOr<protocol::Nonce> nonce) {
  if (state_ != State::kStart) return Fail(Status(Code::kInternal, peer_ + ": the handshake was started twice"));
  if (!nonce.ok()) return Fail(nonce.status().Prefixed(peer_));
  hello_.client_nonce = *nonce;
  state_ = State::kAwaitChallenge;
  return protocol::EncodeHello(hello_);
}

bool Handshake::Expects(FrameType type) const {
  return (state_ == State::kAwaitChallenge && type == FrameType::kChallenge) ||
         (state_ == State::kAwaitWelcome && type == FrameType::kWelcome);
}

StatusOr<std::vector<uint8_t>> Handshake::OnChallenge(std::span<const uint8_t> payload) {
  if (!Expects(FrameType::kChallenge)) return OutOfOrder(FrameType::kChallenge);
  Status st = protocol::DecodeChallenge(payload, &challenge_);
  if (!st.ok()) return Fail(st.Prefixed(peer_));
  if (challenge_.token_required && token_.empty()) {
    return Fail(Status(Code::kAuth, peer_ + " requires a job token and none is configured (REDUCER_JOB_TOKEN)"));
  }
  if (!challenge_.token_required && !token_.empty() && unchecked_ == Unchecked::kRefuse) {
    // A worker with a token must not send its gradients to, nor trust sums
    // from, a reducer that lets any process in: that is a downgrade.
    return Fail(Status(Code::kAuth, peer_ + " does not check job tokens but this worker has one: refusing to send "
                                            "it gradients. Start that reducer with the job's token "
                                            "(--job-token-file or REDUCER_JOB_TOKEN), or check REDUCER_ADDRS"));
  }
  protocol::Auth auth;
  if (!token_.empty() && challenge_.token_required) {
    StatusOr<protocol::Mac> mac = protocol::ClientProof(token_, hello_, challenge_.server_nonce);
    if (!mac.ok()) return Fail(mac.status().Prefixed(peer_));
    auth.mac = *mac;
  }
  state_ = State::kAwaitWelcome;
  return protocol::EncodeAuth(auth);
}

Status Handshake::OnWelcome(std::span<const uint8_t> payload) {
  if (!Expects(FrameType::kWelcome)) return OutOfOrder(FrameType::kWelcome);
  protocol::Welcome welcome;
  Status st = protocol::DecodeWelcome(payload, &welcome);
  if (!st.ok()) return Fail(st.Prefixed(peer_));
  if (!token_.empty() && challenge_.token_required) {
    StatusOr<protocol::Mac> expected = protocol::ServerProof(token_, hello_, challenge_.server_nonce);
    if (!expected.ok()) return Fail(expected.status().Prefixed(peer_));
    if (!protocol::MacEqual(welcome.mac, *expected)) {
      return Fail(Status(Code::kAuth, peer_ + " could not prove it holds this job's token"));
    }
  }
  max_piece_bytes_ = welcome.max_piece_bytes;
  state_ = State::kDone;
  return Status::Ok();
}

}  // namespace rs::client
