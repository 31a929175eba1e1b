#include "server/net/connection.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "common/host_tuning.h"
#include "common/socket_options.h"
#include "common/tcp_path.h"
#include "common/tcp_tuning.h"
#include "protocol/auth.h"
#include "protocol/crc32c.h"
#include "protocol/error_text.h"
#include "server/net/reducer_server.h"

namespace rs::server {
namespace {

// The frames a joined worker may send; anything else is refused from its
// header alone.
bool WorkerSendsInSession(protocol::FrameType type) {
  using protocol::FrameType;
  return type == FrameType::kData || type == FrameType::kBye || type == FrameType::kError ||
         type == FrameType::kHeartbeat || type == FrameType::kMembership;
}

// A joined worker's control frames are small (HEARTBEAT 16 bytes,
// MEMBERSHIP at most 528): more is refused unread. An ERROR's text is read
// this far and the rest left unread, since the stream closes after it.
constexpr uint32_t kMaxJoinedControlBytes = 4096;

std::string EndpointName(const asio::ip::tcp::endpoint& ep) {
  const std::string host = ep.address().to_string();
  return (ep.address().is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(ep.port());
}

std::string PeerName(const asio::ip::tcp::socket& socket) {
  asio::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  return ec ? "unknown peer" : EndpointName(ep);
}

std::string LocalName(const asio::ip::tcp::socket& socket) {
  asio::error_code ec;
  const auto ep = socket.local_endpoint(ec);
  return ec ? "this reducer" : "reducer " + EndpointName(ep);
}

}  // namespace

Connection::Connection(ReducerServer& server, asio::ip::tcp::socket socket, Admission::Ticket ticket)
    : server_(server),
      framed_(std::move(socket), *this),
      handshake_deadline_(framed_.socket().get_executor()),
      liveness_timer_(framed_.socket().get_executor()),
      peer_(PeerName(framed_.socket())),
      self_(LocalName(framed_.socket())),
      ticket_(std::move(ticket)),
      handshake_(server.handshake_config(), protocol::RandomNonce()),
      rto_floor_(server.config().tcp.rto_min) {
  const int fd = framed_.socket().native_handle();
  asio::error_code ignored;
  framed_.socket().set_option(asio::ip::tcp::no_delay(true), ignored);
  framed_.socket().set_option(asio::socket_base::keep_alive(true), ignored);
  const TcpTuningResult tcp = ApplyTcpTuning(fd, server.config().tcp);
  // reducerd logs what a fresh socket gets at start-up; a different outcome here is news.
  if (auto line = TcpTuningLineOnce(tcp)) spdlog::log(tcp.refused ? spdlog::level::warn : spdlog::level::info, "{}", *line);
  // At once, while TCP's first estimate of the round trip's variation stands
  // (common/tcp_tuning.h); SamplePath keeps following the path.
  if (auto line = RaiseRtoFloorAtConnect(fd, rto_floor_)) spdlog::info("{}", *line);
  // Off with TLS (data_stream.h).
  if (server.data_tls() == nullptr) low_water_ = ReceiveLowWater(fd);
}

Connection::~Connection() { server_.ConnectionClosed(); }

void Connection::Start() {
  handshake_deadline_.expires_after(server_.config().handshake_timeout);
  handshake_deadline_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (!ec) self->OnHandshakeTimeout();
  });
  if (server_.data_tls() != nullptr) {
    AwaitTls();
    return;
  }
  HandshakeStep(Handshake::Start());
}

void Connection::OnHandshakeTimeout() {
  if (state_ != State::kHandshake) return;
  if (tls_handshake_) {  // no frame can go out before TLS is up
    const Status why(Code::kTimeout, "no TLS handshake within the handshake timeout");
    EndHandshake(HandshakeEnd::kTimedOut, why);
    CloseNow(why);
    return;
  }
  // Reject() sends the reason, then lingers at most FramedSocket::kLinger for
  // the peer to read it: a peer that holds the connection open is closed all
  // the same.
  HandshakeStep(handshake_.TimedOut(server_.config().handshake_timeout));
}

void Connection::EndHandshake(HandshakeEnd how, const Status& why) {
  if (state_ != State::kHandshake) return;
  handshake_deadline_.cancel();
  ticket_.EndHandshake(how, why.code());
  if (how == HandshakeEnd::kJoined) return;
  if (how == HandshakeEnd::kAbandoned) {
    spdlog::debug("{}: closed in the handshake: {}", peer_, why.ToString());
    return;
  }
  std::string who = peer_;
  if (handshake_.has_hello()) {
    who += " (rank " + std::to_string(handshake_.hello().rank) + " of session " +
           protocol::SessionIdToString(handshake_.hello().session) + ")";
  }
  const std::string_view kind = how == HandshakeEnd::kTimedOut ? "handshake timeout" : CodeName(why.code());
  server_.LogRefusal(kind, who + ": refused: " + why.ToString());
}

void Connection::RunningCrc::Advance(size_t transferred) {
  if (transferred <= done) return;
  crc = protocol::Crc32c(base + done, transferred - done, crc);
  done = transferred;
}

size_t Connection::ReadProgress::operator()(const asio::error_code& ec, size_t transferred) {
  // A read that returned less than it could have emptied the socket.
  const bool drained = transferred > seen && transferred - seen < asked;
  if (transferred > seen) {
    seen = transferred;
    ++*counter;
    if (crc != nullptr) crc->Advance(transferred);
  }
  if (ec) return 0;
  // Checked bytes only (the CRC ran first): the session may reduce them at once.
  if (parts != nullptr && drained && transferred < total) parts->OnContributionProgress(transferred);
  const size_t remaining = total - transferred;
  if (low_water != nullptr && remaining > 0) {
    low_water->Expect(parts != nullptr ? std::min(remaining, part_bytes) : remaining);
  }
  // With a CRC to compute, a chunk at a time while it is still in cache.
  const size_t next = crc != nullptr ? 64 * 1024 : protocol::kMaxTransferBytes;
  asked = std::min(next, remaining);
  return next;
}

template <typename Handler>
void Connection::Read(asio::mutable_buffer buffer, Handler&& handler, RunningCrc* crc, bool parts) {
  const size_t part_bytes = parts ? static_cast<size_t>(session_->result_part_bytes()) : 0;
  framed_.Read(buffer,
               ReadProgress{&received_progress_, crc, &low_water_, buffer.size(), part_bytes != 0 ? this : nullptr,
                            part_bytes},
               [this, handler = std::forward<Handler>(handler)](const asio::error_code& ec, size_t bytes) mutable {
                 low_water_.Reset();
                 if (bytes > 0) ++received_progress_;
                 if (state_ == State::kClosing) {
                   // After an ERROR frame the layer reads and discards until
                   // the worker closes (FramedSocket::DiscardReads).
                   piece_.reset();
                   return;
                 }
                 handler(ec);
               });
}

void Connection::CloseSocket() {
  handshake_deadline_.cancel();
  liveness_timer_.cancel();
  framed_.Close();
}

void Connection::ReadHeader() {
  Read(asio::buffer(header_buf_), [this](const asio::error_code& ec) { OnHeader(ec); });
}

void Connection::OnHeader(const asio::error_code& ec) {
  if (ec) {
    const Status why(Code::kIo, ec == asio::error::eof ? "connection closed by the worker" : ec.message());
    // Between frames, a joined rank whose process ended without closing its
    // client: the session decides whether that was its end (Departure).
    if (ec == asio::error::eof && state_ == State::kJoined) LeaveSession(Departure::kClosed, why);
    CloseNow(why);
    return;
  }
  if (state_ == State::kHandshake) {
    if (header_buf_[0] == kTlsHandshakeRecord && server_.data_tls() == nullptr) {
      // Answered in TLS's terms, the one thing its TLS can read (DataTls::DescribeFailure).
      const Status why(Code::kAuth,
                       "the worker opened with TLS (REDUCER_TLS=1) and this reducer has no --tls");
      EndHandshake(HandshakeEnd::kRefused, why);
      Reject(why, std::vector<uint8_t>(kNoTlsAlert.begin(), kNoTlsAlert.end()));
      return;
    }
    HandshakeStep(handshake_.OnHeader(header_buf_));
    return;
  }
  const uint64_t max_data = protocol::kPieceHeaderBytes + server_.MaxPieceBytes(hello_.world, hello_.wire);
  Status st = protocol::DecodeHeader(header_buf_, max_data, &header_, "this reducer");
  if (!st.ok()) {
    Reject(st);
    return;
  }
  if (!WorkerSendsInSession(header_.type)) {
    // Refused before its payload is read: a RESULT (or any frame only a
    // reducer sends) would otherwise cost a piece's worth of memory outside
    // the budget, per connection.
    Reject(Status(Code::kProtocol, std::string("unexpected ") + protocol::FrameTypeName(header_.type) +
                                       " frame during the session"));
    return;
  }
  if (header_.type != protocol::FrameType::kData && header_.payload_bytes > kMaxJoinedControlBytes) {
    if (header_.type == protocol::FrameType::kError) {
      ReadPayload(kMaxJoinedControlBytes);
      return;
    }
    Reject(Status(Code::kProtocol, std::string(protocol::FrameTypeName(header_.type)) + " frame of " +
                                       std::to_string(header_.payload_bytes) + " bytes during the session: a "
                                       "worker's is at most " + std::to_string(kMaxJoinedControlBytes)));
    return;
  }
  if (header_.type == protocol::FrameType::kData) {
    // Read only the piece header: the elements go straight into the slot.
    payload_.resize(protocol::kPieceHeaderBytes);
    Read(asio::buffer(payload_), [this](const asio::error_code& ec2) {
      if (ec2) {
        CloseNow(Status(Code::kIo, "connection lost in a DATA frame: " + ec2.message()));
        return;
      }
      OnPieceHeader();
    });
    return;
  }
  ReadPayload(header_.payload_bytes);
}

void Connection::ReadPayload(uint32_t bytes) {
  payload_.resize(bytes);
  Read(asio::buffer(payload_), [this](const asio::error_code& ec) {
    if (ec) {
      CloseNow(Status(Code::kIo, "connection lost in a frame: " + ec.message()));
      return;
    }
    OnPayload();
  });
}

void Connection::OnPayload() {
  using protocol::FrameType;
  switch (state_) {
    case State::kHandshake:
      HandshakeStep(handshake_.OnPayload(payload_));
      return;
    case State::kJoined:
      OnJoinedFrame();
      return;
    case State::kClosing:
      return;
  }
  Reject(Status(Code::kProtocol,
                std::string("unexpected ") + protocol::FrameTypeName(header_.type) + " frame during the session"));
}

void Connection::OnJoinedFrame() {
  using protocol::FrameType;
  switch (header_.type) {
    case FrameType::kBye:
      LeaveSession(Departure::kGoodbye, Status(Code::kOk, "goodbye"));
      state_ = State::kClosing;
      CloseSocket();
      return;
    case FrameType::kError: {
      // The worker gave up, usually because another reducer reported an
      // error: pass its reason on so every rank learns the root cause.
      protocol::ErrorFrame err;
      (void)protocol::DecodeError(payload_, &err);
      // Its text goes to the other ranks and into logs: escaped, bounded.
      session_->Fail(Status(err.code, "rank " + std::to_string(hello_.rank) +
                                          " aborted: " + protocol::PrintableErrorText(err.message)));
      CloseNow(Status(Code::kPeerFailed, "aborted by the worker"));
      return;
    }
    case FrameType::kHeartbeat: {
      protocol::Heartbeat heartbeat;
      Status st = protocol::DecodeHeartbeat(payload_, &heartbeat);
      if (!st.ok()) {
        Reject(st);
        return;
      }
      if (auto reply = session_->OnHeartbeat(hello_.rank, heartbeat)) {
        EnqueueControl(protocol::EncodeHeartbeat(*reply));
      }
      ReadHeader();
      return;
    }
    case FrameType::kMembership: {
      protocol::MembershipFrame frame;
      Status st = protocol::DecodeMembership(payload_, &frame);
      if (!st.ok()) {
        const Status named = st.Prefixed("rank " + std::to_string(hello_.rank));
        session_->Fail(named);
        Reject(named);
        return;
      }
      session_->OnMembership(hello_.rank, frame);
      if (state_ == State::kJoined) ReadHeader();
      return;
    }
    default:
      break;
  }
  Reject(Status(Code::kProtocol, std::string("unexpected ") + protocol::FrameTypeName(header_.type) +
                                     " frame during the session"));
}

void Connection::HandshakeStep(Handshake::Step step) {
  using Action = Handshake::Step::Action;
  switch (step.action) {
    case Action::kReadPayload:
      ReadPayload(step.payload_bytes);
      return;
    case Action::kReadHeader:
      if (!step.reply.empty()) EnqueueControl(std::move(step.reply));
      ReadHeader();
      return;
    case Action::kJoin:
      JoinSession();
      return;
    case Action::kRefuse:
      EndHandshake(step.error.code() == Code::kTimeout ? HandshakeEnd::kTimedOut : HandshakeEnd::kRefused,
                   step.error);
      Reject(step.error);
      return;
  }
}

void Connection::JoinSession() {
  auto session = server_.JoinSession(handshake_.hello(), shared_from_this(), ticket_.source());
  if (!session.ok()) {
    HandshakeStep(handshake_.JoinRefused(session.status()));
    return;
  }
  EndHandshake(HandshakeEnd::kJoined, Status::Ok());
  session_ = std::move(session).value();
  hello_ = handshake_.hello();
  state_ = State::kJoined;
  EnqueueControl(handshake_.Joined(server_.MaxPieceBytes(hello_.world, hello_.wire)));
  SamplePath();
  StartLiveness();
  ReadHeader();
}

void Connection::SamplePath() {
  // The handshake's round trips already gave TCP a sample; the liveness
  // ticks (or, with liveness off, ArmPathSampling) keep it current. Only a
  // change takes the session's lock.
  std::optional<TcpPath> path = ReadTcpPath(framed_.socket().native_handle());
  if (!path) return;
  std::optional<TcpWaitFinding> finding = CountTcpTimes(*path);
  if (finding) {
    const std::string rank = "rank " + std::to_string(hello_.rank);
    spdlog::warn("session {}, results to {} ({}, stream {}): {}", protocol::SessionIdToString(session_->id()), rank,
                 peer_, hello_.stream, DescribeTcpWait(*finding, rank, SendBufferBytes(framed_.socket().native_handle())));
  }
  const std::chrono::microseconds min_rtt(path->min_rtt_us);
  if (std::optional<std::chrono::microseconds> floor = rto_floor_.OnPath(framed_.socket().native_handle(), min_rtt)) {
    if (auto line = RtoFloorLineOnce(*floor, min_rtt)) spdlog::info("{}", *line);
  }
  if (auto warning = IdleRestartWarningOnce(min_rtt, [this] {
        return "rank " + std::to_string(hello_.rank) + " (" + peer_ + ")";
      })) {
    spdlog::warn("{}", *warning);
  }
  if (path->min_rtt_us == reported_rtt_us_) return;
  reported_rtt_us_ = path->min_rtt_us;
  session_->ReportRoundTrip(hello_.rank, hello_.stream, reported_rtt_us_);
}

std::optional<TcpWaitFinding> Connection::CountTcpTimes(const TcpPath& path) {
  const TcpWaitTotals before = waits_.totals();
  std::optional<TcpWaitFinding> finding = waits_.OnSample(path, Clock::now());
  const TcpWaitTotals& after = waits_.totals();
  server_.reducer_stats().AddTcpSendTimes(after.busy_us - before.busy_us, after.rwnd_limited_us - before.rwnd_limited_us,
                                          after.sndbuf_limited_us - before.sndbuf_limited_us);
  return finding;
}

void Connection::SampleTcpTimes() {
  if (std::optional<TcpPath> path = ReadTcpPath(framed_.socket().native_handle())) (void)CountTcpTimes(*path);
}

void Connection::StartLiveness() {
  const std::chrono::milliseconds timeout(hello_.liveness_ms);
  // With failover a worker that stops talking to this reducer may be one
  // whose link to it alone was cut: the ranks then drop this reducer, which
  // they do within about one timeout. Waiting twice as long before failing
  // the session keeps a cut link from ending the job; a worker that really
  // died is still named to every rank, after 2 T instead of T.
  liveness_ = protocol::LivenessMonitor(timeout, session_->failover() ? 2 * timeout : timeout);
  if (!liveness_.enabled()) {
    ArmPathSampling();  // no liveness ticks: the path is still sampled
    return;
  }
  // The worker always reads its results: a window shut for 2 T is a dead one.
  (void)SetTcpLiveness(framed_.socket().native_handle(), liveness_.timeout(), PeerReads::kAlways);  // best effort
  liveness_.Start(Clock::now(), received_progress_, framed_.write_progress());
  ArmLiveness();
}

void Connection::ArmLiveness() {
  liveness_timer_.expires_after(liveness_.tick_interval());
  liveness_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (!ec && self->state_ == State::kJoined) self->OnLivenessTick();
  });
}

void Connection::ArmPathSampling() {
  liveness_timer_.expires_after(kPathSampleInterval);
  liveness_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (ec || self->state_ != State::kJoined || !self->CheckResultsTaken() || !self->CheckIdle()) return;
    self->SamplePath();
    self->ArmPathSampling();
  });
}

bool Connection::CheckResultsTaken() {
  const auto now = Clock::now();
  if (!framed_.writing() || framed_.write_progress() != taken_progress_ || taken_at_ == Clock::time_point{}) {
    taken_progress_ = framed_.write_progress();
    taken_at_ = now;
    return true;
  }
  const auto limit = server_.config().op_timeout;
  if (now - taken_at_ <= limit) return true;
  const Status why(Code::kTimeout,
                   "rank " + std::to_string(hello_.rank) + " (" + peer_ + ") took none of its results from " + self_ +
                       " for " + protocol::FormatSeconds(std::chrono::duration_cast<std::chrono::milliseconds>(now - taken_at_)) +
                       ": the worker stopped reading (frozen?), or its host or the link to it is down");
  session_->Fail(why);
  CloseNow(why);
  return false;
}

bool Connection::CheckIdle() {
  const auto now = Clock::now();
  if (low_water_.ArrivedSinceLastAsked()) ++received_progress_;
  if (received_progress_ != idle_progress_ || liveness_.paused() || idle_at_ == Clock::time_point{}) {
    idle_progress_ = received_progress_;
    idle_at_ = now;
    return true;
  }
  const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(now - idle_at_);
  if (idle <= server_.config().idle_timeout) return true;  // in ms: the setting may be "forever"
  session_->Fail(Status(
      Code::kPeerFailed,
      "rank " + std::to_string(hello_.rank) + " (" + peer_ + ") sent nothing to " + self_ + " for " +
          protocol::FormatSeconds(idle) +
          " with its liveness timeout off: the reducer's --idle-timeout closes such streams (a worker with "
          "REDUCER_LIVENESS_TIMEOUT set sends heartbeats and is never idle)"));
  return false;
}

void Connection::OnLivenessTick() {
  if (!CheckResultsTaken()) return;
  if (low_water_.ArrivedSinceLastAsked()) ++received_progress_;
  const auto verdict = liveness_.Tick(Clock::now(), received_progress_, framed_.write_progress());
  if (verdict.silent) {
    // The session tells every rank, this one included (if it still listens).
    session_->Fail(Status(Code::kPeerFailed,
                          "rank " + std::to_string(hello_.rank) + " (" + peer_ + ") sent nothing to " + self_ +
                              " for " + protocol::FormatSeconds(verdict.silent_for) +
                              " (heartbeats stopped): the worker is frozen, its host down or the link to it cut"));
    return;
  }
  SamplePath();
  // Only when idle: queued frames are bytes the worker will see anyway.
  if (verdict.send_heartbeat && write_queue_.empty()) {
    EnqueueControl(protocol::EncodeHeartbeat({session_->epoch(), 0, session_->watermark()}));
  }
  ArmLiveness();
}

void Connection::OnPieceHeader() {
  Status st = protocol::DecodePieceHeader(payload_, header_.payload_bytes,
                                          server_.MaxPieceBytes(hello_.world, hello_.wire), &piece_header_);
  if (!st.ok()) {
    const Status named = st.Prefixed("rank " + std::to_string(hello_.rank));
    session_->Fail(named);
    Reject(named);
    return;
  }
  TryBeginContribution();
}

void Connection::TryBeginContribution() {
  if (state_ == State::kClosing) return;
  std::weak_ptr<Connection> weak = weak_from_this();
  auto wake = [weak, executor = framed_.socket().get_executor()] {
    asio::post(executor, [weak] {
      if (auto self = weak.lock()) self->TryBeginContribution();
    });
  };
  Contribution c = session_->BeginContribution(hello_.rank, shared_from_this(), hello_.stream, piece_header_,
                                               std::move(wake), Clock::now());
  switch (c.kind) {
    case Contribution::Kind::kWaitForMemory:
      // Stop reading: the worker's sends back up into its socket buffer, and
      // its silence meanwhile is our doing.
      liveness_.Pause();
      return;
    case Contribution::Kind::kFailed:
      // The session told every member already if it failed; otherwise only us.
      if (session_->failure().ok()) Reject(c.status);
      return;
    case Contribution::Kind::kDiscard:
      liveness_.Resume(Clock::now());
      Discard(piece_header_.PayloadBytes());
      return;
    case Contribution::Kind::kReceive:
      liveness_.Resume(Clock::now());
      piece_ = std::move(c.piece);
      piece_crc_ = RunningCrc{c.dest, 0, 0};
      Read(asio::buffer(c.dest, piece_header_.PayloadBytes()),
           [this](const asio::error_code& ec) { OnContributionRead(ec); },
           server_.config().crc && (piece_header_.flags & protocol::kPieceCrc) != 0 ? &piece_crc_ : nullptr,
           /*parts=*/piece_->in_parts());
      return;
  }
}

void Connection::OnContributionRead(const asio::error_code& ec) {
  if (ec) {
    piece_.reset();
    CloseNow(Status(Code::kIo, "connection lost while receiving operation " +
                                   std::to_string(piece_header_.seq) + ": " + ec.message()));
    return;
  }
  std::shared_ptr<Piece> piece = std::move(piece_);
  if (server_.config().crc && (piece_header_.flags & protocol::kPieceCrc) != 0) {
    // The last chunk is not seen by the completion condition.
    piece_crc_.Advance(piece_header_.PayloadBytes());
    const uint32_t got = piece_crc_.crc;
    if (got != piece_header_.crc) {
      char values[64];
      std::snprintf(values, sizeof(values), "0x%08x, rank %u sent 0x%08x", got, hello_.rank, piece_header_.crc);
      // The session tells every rank (this one included) which hop it was.
      session_->Fail(Status(Code::kProtocol,
                            "CRC32C mismatch on hop rank " + std::to_string(hello_.rank) + " -> " + self_ +
                                ": operation " + std::to_string(piece_header_.seq) + " piece " +
                                std::to_string(piece_header_.piece) + " arrived as " + values +
                                " (data corrupted in transit: NIC, memory or a middlebox)"));
      return;
    }
  }
  session_->EndContribution(hello_.rank, piece);
  ReadHeader();
}

void Connection::OnContributionProgress(size_t bytes) {
  if (piece_ && state_ != State::kClosing) session_->ContributionProgress(hello_.rank, piece_, bytes);
}

void Connection::Discard(uint64_t bytes) {
  if (bytes == 0) {
    ReadHeader();
    return;
  }
  const size_t chunk = static_cast<size_t>(std::min<uint64_t>(bytes, discard_buf_.size()));
  Read(asio::buffer(discard_buf_.data(), chunk), [this, bytes, chunk](const asio::error_code& ec) {
    if (ec) {
      CloseNow(Status(Code::kIo, "connection lost in a stale DATA frame: " + ec.message()));
      return;
    }
    Discard(bytes - chunk);
  });
}

void Connection::SendControl(std::vector<uint8_t> frame) {
  asio::post(framed_.socket().get_executor(), [self = shared_from_this(), frame = std::move(frame)]() mutable {
    if (self->state_ == State::kClosing) return;
    self->EnqueueControl(std::move(frame));
  });
}

void Connection::CloseQuietly() {
  asio::post(framed_.socket().get_executor(), [self = shared_from_this()] {
    if (self->state_ == State::kClosing) return;
    self->LeaveSession(Departure::kGoodbye, Status(Code::kCancelled, "dropped by the ranks"));
    self->state_ = State::kClosing;
    self->CloseSocket();
  });
}

void Connection::SendReady() {
  asio::post(framed_.socket().get_executor(), [self = shared_from_this()] {
    if (self->state_ == State::kClosing) return;
    self->EnqueueControl(protocol::EncodeReady());
  });
}

void Connection::SendResult(const ResultPart& part) {
  // The parts of a piece must go out in the order they come here (from
  // several threads, one after another under the piece's lock). They queue
  // here, in order, and one posted TakeResults moves all that came meanwhile
  // (posts run in the order they were made, common/io_context.h; one post
  // per part would keep the order too, at a handler per part).
  bool first = false;
  {
    MutexLock lock(results_mu_);
    first = results_in_.empty();
    results_in_.push_back(part);
  }
  if (first) asio::post(framed_.socket().get_executor(), [self = shared_from_this()] { self->TakeResults(); });
}

void Connection::TakeResults() {
  std::vector<ResultPart> parts;
  {
    MutexLock lock(results_mu_);
    parts.swap(results_in_);
  }
  if (state_ == State::kClosing) return;
  // The session's watermark, when it belongs to the piece's epoch.
  const uint32_t epoch = session_->epoch();
  const uint64_t watermark = session_->watermark();
  for (ResultPart& part : parts) {
    Outgoing out;
    protocol::PieceHeader head = part.header;
    head.watermark = head.epoch == epoch ? watermark : 0;
    protocol::EncodePieceFrame(protocol::FrameType::kResult, head, &out.piece_head);
    out.data = part.data;
    out.data_bytes = static_cast<size_t>(head.PayloadBytes());
    out.piece = std::move(part.piece);
    Enqueue(std::move(out));
  }
}

void Connection::SendErrorAndClose(const Status& status) {
  asio::post(framed_.socket().get_executor(), [self = shared_from_this(), status] {
    // The session already knows: leaving must not fail it a second time.
    self->LeaveSession(Departure::kGoodbye, status);
    self->Reject(status);
  });
}

void Connection::EnqueueControl(std::vector<uint8_t> frame) {
  Outgoing out;
  out.bytes = std::move(frame);
  Enqueue(std::move(out));
}

void Connection::Enqueue(Outgoing out) {
  if (framed_.write_failed()) return;  // the connection is going; the reader says why
  write_queue_.push_back(std::move(out));
  framed_.Flush();
}

size_t Connection::GatherFrames(size_t max_frames, std::vector<asio::const_buffer>* buffers) {
  // Frames stay in write_queue_ (a deque: pushing at the back moves none)
  // until written, so the buffers point into them.
  in_flight_ = std::min(write_queue_.size(), max_frames);
  for (size_t i = 0; i < in_flight_; ++i) {
    const Outgoing& out = write_queue_[i];
    if (out.piece) {
      buffers->emplace_back(out.piece_head.data(), out.piece_head.size());
      buffers->emplace_back(out.data, out.data_bytes);
    } else {
      buffers->emplace_back(out.bytes.data(), out.bytes.size());
    }
  }
  return in_flight_;
}

void Connection::FramesWritten(const asio::error_code& ec) {
  if (ec) {
    write_queue_.clear();
    in_flight_ = 0;
    if (state_ == State::kJoined && framed_.read_pending()) {
      // A worker that gives up sends an ERROR with its reason, then closes,
      // which resets the connection if results are still arriving: the
      // pending read delivers that ERROR (or the reset) next, and the other
      // ranks must learn the worker's reason, not this. No write starts
      // after a failed one (FramedSocket).
      return;
    }
    CloseNow(Status(Code::kIo, "cannot send to the worker: " + ec.message()));
    return;
  }
  write_queue_.erase(write_queue_.begin(), write_queue_.begin() + static_cast<std::ptrdiff_t>(in_flight_));
  in_flight_ = 0;
}

void Connection::Reject(const Status& status, std::vector<uint8_t> last) {
  if (state_ == State::kClosing) return;
  // A failed session counted its error once; this stream's own errors
  // (handshake, protocol) are counted here.
  if (!session_ || session_->failure().ok()) server_.reducer_stats().CountError(status.code());
  LeaveSession(Departure::kLost, status);
  state_ = State::kClosing;
  // Drop results not yet sent; the error goes out after what is being written.
  while (write_queue_.size() > in_flight_) write_queue_.pop_back();
  Outgoing error;
  error.bytes = last.empty() ? protocol::EncodeError({status.code(), status.message()}) : std::move(last);
  write_queue_.push_back(std::move(error));
  // What the worker sends from now on is read and dropped (Read): a
  // pending read's completion drains on.
  framed_.DiscardReads();
  // A write in flight to a worker that stopped reading would never end, and
  // its results would hold their piece memory: the error gets --op-timeout
  // to go out, then the linger follows (FramedSocket).
  framed_.CloseAfterWrites(server_.config().op_timeout);
}

void Connection::CloseNow(const Status& why) {
  EndHandshake(HandshakeEnd::kAbandoned, why);
  if (state_ != State::kClosing) spdlog::debug("{}: closed: {}", peer_, why.ToString());
  LeaveSession(Departure::kLost, why);
  state_ = State::kClosing;
  CloseSocket();
}

void Connection::LeaveSession(Departure how, const Status& why) {
  if (left_ || !session_) return;
  left_ = true;
  // The TCP times since the last sample count too (the socket is still open).
  if (state_ == State::kJoined) SampleTcpTimes();
  server_.LeaveSession(session_, hello_.rank, hello_.stream, how, why);
}

}  // namespace rs::server
