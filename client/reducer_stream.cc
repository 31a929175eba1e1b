#include "client/reducer_stream.h"

#include <algorithm>

#include "common/socket_options.h"
#include "protocol/auth.h"

namespace rs::client {

ReducerStream::ReducerStream(asio::io_context& io, StreamParams params, StreamOwner* owner)
    : io_(io),
      framed_(asio::ip::tcp::socket(io), *this),
      liveness_timer_(io),
      params_(std::move(params)),
      owner_(owner),
      connector_(io, framed_,
                 {params_.endpoint, Name(), params_.tls, params_.tcp, params_.connect_grace_end,
                  params_.connect_deadline},
                 *this),
      results_(params_.id.reducer,
               "reducer " + params_.endpoint.ToString() + " -> rank " + std::to_string(params_.hello.rank),
               params_.crc, *this),
      sends_(params_.wire_fallbacks),
      path_(Name(), params_.send_window_bytes, params_.piece_bytes, params_.tcp.rto_min),
      liveness_(params_.liveness_timeout) {
  params_.hello.liveness_ms = static_cast<uint32_t>(params_.liveness_timeout.count());
}

std::string ReducerStream::Name() const {
  return "reducer " + params_.endpoint.ToString() + " (stream " + std::to_string(params_.hello.stream) + ")";
}

void ReducerStream::Start() {
  asio::post(io_, [self = shared_from_this()] {
    if (self->state_ != State::kClosed) self->connector_.Start();
  });
}

void ReducerStream::OnTcpConnected(const TcpTuningResult& tcp) {
  const int fd = framed_.socket().native_handle();
  if (auto line = TcpTuningLineOnce(tcp)) owner_->Log(tcp.refused ? LogLevel::kWarn : LogLevel::kInfo, *line);
  // Off with TLS (data_stream.h).
  low_water_ = params_.tls ? ReceiveLowWater() : ReceiveLowWater(fd);
  for (PathSampler::LogLine& line : path_.Connected(fd)) owner_->Log(line.level, line.message);
  // Best effort: the heartbeats work without it.
  (void)SetTcpLiveness(fd, params_.liveness_timeout,
                       PeerReads::kMayPause);  // out of memory, it stops reading
}

// A connection lost during TLS's handshake, or never made, is lost like any
// other (failover may get past it); a peer TLS refuses fails the session.
void ReducerStream::OnConnectEnded(const Status& status, std::optional<ConnectFailure> /*gave_up*/) {
  if (state_ == State::kClosed) return;
  if (status.code() == Code::kIo) return Lose(status);
  if (!status.ok()) return Fail(status);
  SendHello();
}

void ReducerStream::SendHello() {
  handshake_.emplace(Name(), params_.token, params_.hello);
  StatusOr<std::vector<uint8_t>> hello = handshake_->Start(protocol::RandomNonce());
  if (!hello.ok()) return Fail(hello.status());
  state_ = State::kHandshake;
  WriteControl(std::move(*hello));
  ReadFrame();
}

template <typename Handler>
void ReducerStream::Read(asio::mutable_buffer buffer, Handler&& handler) {
  framed_.Read(buffer, CountProgress{&received_progress_, &low_water_, buffer.size()},
               [self = shared_from_this(), handler = std::forward<Handler>(handler)](const asio::error_code& ec,
                                                                                    size_t bytes) mutable {
                 if (bytes > 0) ++self->received_progress_;
                 self->low_water_.Reset();
                 // Closed: it releases what it holds and reads no more (while
                 // lingering, FramedSocket drains on).
                 handler(self, ec);
               });
}

void ReducerStream::ReadFrame() {
  Read(asio::buffer(header_buf_), [](const std::shared_ptr<ReducerStream>& self, const asio::error_code& ec) {
    if (self->state_ == State::kClosed) return;
    if (ec) {
      self->Lose(Status(Code::kPeerFailed, "lost connection to " + self->Name() + ": " +
                                               (ec == asio::error::eof ? "closed by the reducer" : ec.message())));
      return;
    }
    const uint64_t max_data = protocol::kPieceHeaderBytes + self->max_piece_bytes_;
    Status st = protocol::DecodeHeader(self->header_buf_, max_data, &self->header_, "this worker");
    if (!st.ok()) {
      self->Fail(st.Prefixed(self->Name()));
      return;
    }
    if (self->header_.type == protocol::FrameType::kResult) {
      self->ReadResult();
      return;
    }
    self->payload_.resize(self->header_.payload_bytes);
    self->Read(asio::buffer(self->payload_), [](const std::shared_ptr<ReducerStream>& self, const asio::error_code& ec2) {
      if (self->state_ == State::kClosed) return;
      if (ec2) {
        self->Lose(Status(Code::kPeerFailed, "lost connection to " + self->Name() + ": " + ec2.message()));
        return;
      }
      self->OnFrame();
    });
  });
}

void ReducerStream::OnFrame() {
  using protocol::FrameType;
  if (header_.type == FrameType::kError) {
    protocol::ErrorFrame err;
    Status st = protocol::DecodeError(payload_, &err);
    if (!st.ok()) {
      Fail(st.Prefixed(Name()));
      return;
    }
    const Status reported(err.code, "reducer " + params_.endpoint.ToString() + ": " + err.message);
    // A reducer that shuts down (drain timeout) leaves; anything else it
    // reports is the session's failure.
    if (err.code == Code::kCancelled) return Lose(reported);
    return Fail(reported);
  }
  const bool joined = state_ == State::kAwaitReady || state_ == State::kReady;
  if (header_.type == FrameType::kHeartbeat && joined) {
    protocol::Heartbeat heartbeat;
    Status st = protocol::DecodeHeartbeat(payload_, &heartbeat);
    if (!st.ok()) return Fail(st.Prefixed(Name()));
    owner_->OnHeartbeat(params_.id, heartbeat);
    if (state_ != State::kClosed) ReadFrame();
    return;
  }
  if (header_.type == FrameType::kMembership && joined) {
    protocol::MembershipFrame frame;
    Status st = protocol::DecodeMembership(payload_, &frame);
    if (!st.ok()) return Fail(st.Prefixed(Name()));
    owner_->OnMembership(params_.id, frame);
    if (state_ != State::kClosed) ReadFrame();
    return;
  }
  switch (state_) {
    case State::kHandshake:
      if (handshake_->Expects(header_.type)) return OnHandshakeFrame();
      break;
    case State::kAwaitReady:
      if (header_.type == FrameType::kReady) {
        state_ = State::kReady;
        owner_->OnStreamReady(params_.id, max_piece_bytes_);
        if (state_ != State::kClosed) ReadFrame();
        return;
      }
      break;
    default:
      break;
  }
  Fail(Status(Code::kProtocol, Name() + " sent an unexpected " + protocol::FrameTypeName(header_.type) + " frame"));
}

void ReducerStream::OnHandshakeFrame() {
  if (header_.type == protocol::FrameType::kChallenge) {
    StatusOr<std::vector<uint8_t>> auth = handshake_->OnChallenge(payload_);
    if (!auth.ok()) return Fail(auth.status());
    WriteControl(std::move(*auth));
    return ReadFrame();
  }
  Status st = handshake_->OnWelcome(payload_);
  if (!st.ok()) return Fail(st);
  max_piece_bytes_ = handshake_->max_piece_bytes();
  state_ = State::kAwaitReady;
  StartLiveness();
  ReadFrame();
}

void ReducerStream::StartLiveness() {
  heartbeats_missed_ = false;  // a new connection: nothing missed yet
  if (!liveness_.enabled()) return;
  liveness_.Start(Clock::now(), received_progress_, framed_.write_progress());
  ArmLiveness();
}

void ReducerStream::ArmLiveness() {
  liveness_timer_.expires_after(liveness_.tick_interval());
  liveness_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    const bool writing_last_frame = self->framed_.closing() && !self->framed_.lingering();
    if (!ec && (self->state_ != State::kClosed || writing_last_frame)) self->OnLivenessTick();
  });
}

void ReducerStream::OnLivenessTick() {
  if (state_ == State::kClosed) {
    // Closing, the last frame still behind a write (CloseAfter): a reducer
    // that stopped answering will never take it.
    if (closing_arrivals_.Changed(framed_.socket().native_handle())) ++received_progress_;
    if (liveness_.Tick(Clock::now(), received_progress_, framed_.write_progress()).heartbeats_missed) {
      Shutdown();
      return;
    }
    ArmLiveness();
    return;
  }
  if (low_water_.ArrivedSinceLastAsked()) ++received_progress_;
  const auto verdict = liveness_.Tick(Clock::now(), received_progress_, framed_.write_progress());
  heartbeats_missed_ = verdict.heartbeats_missed;
  if (verdict.silent) {
    Lose(Status(Code::kPeerFailed, "reducer " + params_.endpoint.ToString() + " sent nothing for " +
                                       protocol::FormatSeconds(verdict.silent_for) +
                                       " (heartbeats stopped) on stream " + std::to_string(params_.hello.stream) +
                                       ": the reducer is frozen, its host down or the link to it cut"));
    return;
  }
  // One heartbeat at a time: if the last one is still queued, the stream is
  // stuck writing and another would say nothing new.
  if (verdict.send_heartbeat && !sends_.urgent_queued()) {
    WriteUrgent(protocol::EncodeHeartbeat(owner_->HeartbeatNow()));
  }
  ArmLiveness();
}

void ReducerStream::ReadResult() {
  if (state_ != State::kReady) {
    return Fail(Status(Code::kProtocol, Name() + " sent a RESULT before the session was ready"));
  }
  payload_.resize(protocol::kPieceHeaderBytes);
  Read(asio::buffer(payload_), [](const std::shared_ptr<ReducerStream>& self, const asio::error_code& ec) {
    if (self->state_ == State::kClosed) return;
    if (ec) {
      self->Lose(Status(Code::kPeerFailed, "lost connection to " + self->Name() + ": " + ec.message()));
      return;
    }
    ResultReader::Part part;
    Status st = self->results_.Begin(self->payload_, self->header_.payload_bytes, self->max_piece_bytes_, &part);
    if (!st.ok()) return self->Fail(st.Prefixed(self->Name()));
    const asio::mutable_buffer into = part.into;
    self->Read(into, [part = std::move(part)](const std::shared_ptr<ReducerStream>& self,
                                              const asio::error_code& ec2) mutable {
      self->OnResultRead(std::move(part), ec2);
    });
  });
}

void ReducerStream::OnResultRead(ResultReader::Part part, const asio::error_code& ec) {
  // The window reopens by what this result answered, even for a dropped one.
  sends_.Answered(results_.header().PayloadBytes());
  busy_rate_.OnAnswered(results_.header().PayloadBytes(), sends_.unanswered_bytes(), Clock::now());
  SampleWindow();
  if (sends_.ordered_queued() && state_ != State::kClosed) framed_.Flush();  // not while a write is in flight or failed
  Status corrupt = results_.Land(std::move(part), /*arrived=*/!ec);  // the lease goes back before reading on
  if (!corrupt.ok()) {
    Fail(corrupt);
    return;
  }
  if (state_ == State::kClosed) return;
  if (ec) {
    Lose(Status(Code::kPeerFailed, "lost connection to " + Name() + " while receiving a result: " + ec.message()));
    return;
  }
  ReadFrame();
}

void ReducerStream::Send(std::vector<PieceSend> sends) {
  StreamSends one;
  one.emplace_back(shared_from_this(), std::move(sends));
  SendTogether(io_, std::move(one));
}

void ReducerStream::SendTogether(asio::io_context& io, StreamSends sends) {
  asio::post(io, [sends = std::move(sends)]() mutable {
    std::vector<ReducerStream*> queued;
    for (auto& [stream, pieces] : sends) {
      if (stream->QueueSends(pieces)) queued.push_back(stream.get());
    }
    // Each write's end is posted behind the writes started before it, so
    // the streams go on taking turns.
    for (ReducerStream* stream : queued) stream->framed_.Flush();
  });
}

bool ReducerStream::QueueSends(std::vector<PieceSend>& sends) {
  if (state_ != State::kReady || framed_.write_failed()) {
    sends.clear();  // not ready, or gone: their leases go back
    return false;
  }
  sends_.Push(std::move(sends));
  return true;
}

void ReducerStream::Reset(uint32_t epoch, std::vector<uint8_t> announce, std::vector<PieceSend> sends) {
  asio::post(io_, [self = shared_from_this(), epoch, announce = std::move(announce),
                   sends = std::move(sends)]() mutable {
    if (self->state_ != State::kReady || self->framed_.write_failed()) {
      sends.clear();  // their leases go back
      self->sends_.SkipTo(epoch);
      return;
    }
    self->sends_.Reset(epoch, std::move(announce), std::move(sends));
    self->framed_.Flush();
  });
}

void ReducerStream::WriteUrgentFrame(std::vector<uint8_t> frame) {
  asio::post(io_, [self = shared_from_this(), frame = std::move(frame)]() mutable {
    if (self->state_ == State::kReady || self->state_ == State::kAwaitReady) self->WriteUrgent(std::move(frame));
  });
}

void ReducerStream::Evict(std::vector<uint8_t> evict) {
  asio::post(io_, [self = shared_from_this(), evict = std::move(evict)]() mutable {
    if (self->state_ == State::kClosed) return;
    // One that missed two heartbeats (frozen, or cut off: another rank lost
    // it first) would not read the EVICT.
    if ((self->state_ == State::kReady || self->state_ == State::kAwaitReady) && !self->framed_.write_failed() &&
        !self->heartbeats_missed_) {
      self->sends_.Drop(/*keep_partial=*/true);
      self->CloseAfter(std::move(evict));
      return;
    }
    self->Shutdown();
  });
}

void ReducerStream::CloseAfter(std::vector<uint8_t> last) {
  state_ = State::kClosed;
  closing_arrivals_ = {};
  if (!framed_.write_failed()) sends_.PushControl(std::move(last));
  // With a write failed already it shuts at once: nothing more can go out.
  framed_.CloseAfterWrites(CloseWriteLimit());
}

std::chrono::milliseconds ReducerStream::CloseWriteLimit() const {
  if (!liveness_.enabled()) return kCloseWriteLimitWithoutLiveness;
  return std::max<std::chrono::milliseconds>(FramedSocket::kLinger, 2 * params_.liveness_timeout);
}

void ReducerStream::WriteControl(std::vector<uint8_t> frame) {
  if (framed_.write_failed()) return;
  sends_.PushControl(std::move(frame));
  framed_.Flush();
}

void ReducerStream::WriteUrgent(std::vector<uint8_t> frame) {
  if (framed_.write_failed()) return;
  sends_.PushUrgent(std::move(frame));
  framed_.Flush();
}

size_t ReducerStream::GatherFrames(size_t max_frames, std::vector<asio::const_buffer>* buffers) {
  WriteLimits limits;
  limits.window = path_.window_bytes();
  if (params_.interleave) {
    limits.slice = params_.write_slice_bytes.value_or(path_.write_slice());
    // The rank's streams share its link: a write's worth of CPU is weighed
    // against the link's time, which is the stream's rate times the streams.
    if (!params_.write_slice_bytes) {
      limits.min_slice = MinOperationSlice(busy_rate_.bytes_per_second() * params_.rank_streams);
    }
  }
  const uint64_t unanswered = sends_.unanswered_bytes();
  const size_t frames = sends_.Gather(max_frames, limits, buffers);
  if (sends_.unanswered_bytes() > unanswered) busy_rate_.OnWrite(unanswered, Clock::now());  // pieces went out
  framed_.stream().set_end_of_record(sends_.cut_fine());
  if (frames > 0 && sends_.cut_fine()) writes_cut_small_.fetch_add(1, std::memory_order_relaxed);
  return frames;
}

void ReducerStream::FramesWritten(const asio::error_code& ec) {
  sends_.Written(!ec);
  if (!ec) return;  // FramedSocket writes the next batch
  if (state_ == State::kClosed) {
    Shutdown();
    return;
  }
  // The reducer closed on us, most likely after an ERROR frame that the
  // pending read is about to deliver: let the reader report the cause (no
  // write starts after a failed one, FramedSocket).
  sends_.Drop(/*keep_partial=*/false);
}

void ReducerStream::SampleWindow() {
  for (PathSampler::LogLine& line : path_.Sample(framed_.socket().native_handle(), Clock::now())) {
    owner_->Log(line.level, line.message);
  }
}

void ReducerStream::Fail(const Status& status) {
  if (state_ == State::kClosed) return;
  Shutdown();
  owner_->OnStreamFailed(params_.id, status);
}

void ReducerStream::Lose(const Status& status) {
  if (state_ == State::kClosed) return;
  Shutdown();
  owner_->OnStreamLost(params_.id, status);
}

void ReducerStream::Close(bool bye) {
  asio::post(io_, [self = shared_from_this(), bye] {
    if (self->state_ == State::kClosed) return;
    if (bye && self->state_ == State::kReady) {
      self->CloseAfter(protocol::EncodeBye());
      return;
    }
    self->Shutdown();
  });
}

void ReducerStream::Abort(const Status& why) {
  asio::post(io_, [self = shared_from_this(), why] {
    if (self->state_ == State::kClosed) return;
    if (self->heartbeats_missed_) {
      // It missed two heartbeats: frozen, or the link to it cut. It would
      // read no ERROR, and waiting for it to close would only hold up this
      // client's close by FramedSocket::kLinger.
      self->Shutdown();
      return;
    }
    if (self->state_ == State::kReady || self->state_ == State::kAwaitReady) {
      self->sends_.Drop(/*keep_partial=*/true);  // pieces not yet sent are moot now
      self->CloseAfter(protocol::EncodeError({why.code(), why.message()}));
      return;
    }
    self->Shutdown();
  });
}

void ReducerStream::Shutdown() {
  const bool was_open = state_ != State::kClosed || framed_.closing();
  state_ = State::kClosed;
  sends_.Drop(/*keep_partial=*/false);
  results_.Forget();
  asio::error_code ignored;
  connector_.Cancel();
  liveness_timer_.cancel();
  framed_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  framed_.Close();  // ends the linger too
  if (was_open) owner_->OnStreamClosed();
}

}  // namespace rs::client
