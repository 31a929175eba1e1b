#include "client/reducer_stream.h"

#include <algorithm>
#include <cstdio>

#include "client/wire_codec.h"
#include "common/host_tuning.h"
#include "common/socket_options.h"
#include "common/tcp_path.h"
#include "common/tcp_waits.h"
#include "protocol/crc32c.h"

namespace rs::client {

ReducerStream::ReducerStream(asio::io_context& io, StreamParams params, StreamOwner* owner)
    : io_(io),
      framed_(asio::ip::tcp::socket(io), *this),
      resolver_(io),
      retry_timer_(io),
      liveness_timer_(io),
      params_(std::move(params)),
      owner_(owner),
      connect_retry_(params_.connect_grace_end, params_.connect_deadline),
      window_(params_.send_window_bytes, params_.piece_bytes),
      liveness_(params_.liveness_timeout) {
  params_.hello.liveness_ms = static_cast<uint32_t>(params_.liveness_timeout.count());
  window_now_ = window_.bytes();
}

std::string ReducerStream::Name() const {
  return "reducer " + params_.endpoint.ToString() + " (stream " + std::to_string(params_.hello.stream) + ")";
}

void ReducerStream::Start() {
  asio::post(io_, [self = shared_from_this()] { self->Connect(); });
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
  if (verdict.send_heartbeat && urgent_.empty()) WriteUrgent(protocol::EncodeHeartbeat(owner_->HeartbeatNow()));
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
    Status st = protocol::DecodePieceHeader(self->payload_, self->header_.payload_bytes, self->max_piece_bytes_,
                                            &self->result_header_);
    if (!st.ok()) return self->Fail(st.Prefixed(self->Name()));
    const protocol::PieceHeader& h = self->result_header_;
    if (h.watermark != 0 && (h.watermark != self->watermark_ || h.epoch != self->watermark_epoch_) &&
        self->owner_->OnWatermark(self->params_.id, h.epoch, h.watermark)) {
      self->watermark_epoch_ = h.epoch;
      self->watermark_ = h.watermark;
    }
    // Held until the result is in place: the read below writes into the
    // operation's receive buffer.
    OpLease lease = self->LeaseFor(h.seq);
    OperationImpl::Claim claim = OperationImpl::Claim::kStale;
    self->result_ends_piece_ = false;
    if (lease) {
      claim = lease->ClaimResult(self->params_.id.reducer, h, &self->result_ends_piece_, &st);
      if (claim == OperationImpl::Claim::kError) {
        lease.reset();  // before the failure is reported, as it reads nothing
        return self->Fail(st.Prefixed(self->Name()));
      }
    }
    const bool claimed = claim == OperationImpl::Claim::kClaimed;
    self->result_narrow_ = claimed && (h.flags & protocol::kPieceWideSum) != 0 && h.dtype != DataType::kFloat32;
    if (claimed && !lease->shadow()) {
      // In the operation's type: a part on a 16-bit wire lands widened.
      const size_t elem = DataTypeSize(lease->dtype());
      const size_t offset = h.offset * elem;
      lease->BeforeResult(offset, h.count * elem);  // the failover copy of an in-place input first
      uint8_t* dest = static_cast<uint8_t*>(lease->recv()) + offset;
      if (self->result_narrow_) {
        self->wire_result_.resize(h.PayloadBytes());
        dest = self->wire_result_.data();
      }
      self->Read(asio::buffer(dest, h.PayloadBytes()),
                 [lease = std::move(lease)](const std::shared_ptr<ReducerStream>& self,
                                            const asio::error_code& ec2) mutable {
                   self->OnResultRead(std::move(lease), true, ec2);
                 });
      return;
    }
    // Failed locally, an epoch left behind, or redone by a shadow (whose
    // results this rank has already): drain the bytes.
    self->discard_.resize(h.PayloadBytes());
    self->Read(asio::buffer(self->discard_),
               [lease = std::move(lease), claimed](const std::shared_ptr<ReducerStream>& self,
                                                   const asio::error_code& ec2) mutable {
                 self->OnResultRead(std::move(lease), claimed, ec2);
               });
  });
}

OpLease ReducerStream::LeaseFor(uint64_t seq) {
  // A lease is given only while the operation has no result, so a stale
  // hit (it completed or failed, or a shadow redoes it under the same seq)
  // comes back empty and the client's table is asked.
  if (result_op_ && result_op_->seq() == seq) {
    if (OpLease lease = OperationImpl::Lease(result_op_)) return lease;
  }
  result_op_ = owner_->FindOperation(seq);
  return OperationImpl::Lease(result_op_);
}

Status ReducerStream::CheckResultCrc(const uint8_t* data) const {
  const protocol::PieceHeader& h = result_header_;
  if (!params_.crc || (h.flags & protocol::kPieceCrc) == 0) return Status::Ok();
  const uint32_t got = protocol::Crc32c(data, h.PayloadBytes());
  if (got == h.crc) return Status::Ok();
  char values[64];
  std::snprintf(values, sizeof(values), "0x%08x, the reducer sent 0x%08x", got, h.crc);
  return Status(Code::kProtocol, "CRC32C mismatch on hop reducer " + params_.endpoint.ToString() + " -> rank " +
                                     std::to_string(params_.hello.rank) + ": the result of operation " +
                                     std::to_string(h.seq) + " piece " + std::to_string(h.piece) + " arrived as " +
                                     values + " (data corrupted in transit: NIC, memory or a middlebox)");
}

void ReducerStream::OnResultRead(OpLease lease, bool claimed, const asio::error_code& ec) {
  // The window reopens by what this result answered, even for a dropped one.
  unanswered_bytes_ -= std::min<uint64_t>(unanswered_bytes_, result_header_.PayloadBytes());
  SampleWindow();
  if (!queue_.empty() && state_ != State::kClosed) framed_.Flush();  // not while a write is in flight or failed
  if (lease) {
    if (claimed && !ec) {
      uint8_t* recv = nullptr;
      const uint8_t* data = discard_.data();
      if (!lease->shadow()) {
        recv = static_cast<uint8_t*>(lease->recv()) + result_header_.offset * DataTypeSize(lease->dtype());
        data = result_narrow_ ? wire_result_.data() : recv;
      }
      Status corrupt = CheckResultCrc(data);
      if (!corrupt.ok()) {
        lease.reset();
        Fail(corrupt);
        return;
      }
      if (result_narrow_ && !lease->shadow()) {
        WidenPart(result_header_.dtype, reinterpret_cast<const uint16_t*>(wire_result_.data()),
                  reinterpret_cast<float*>(recv), result_header_.count);
      }
      if (result_ends_piece_ && lease->PieceDone(result_header_.epoch)) {
        result_op_.reset();
        owner_->OperationComplete(lease->seq());
      }
    }
    lease.reset();  // the result is in place (or dropped): before reading on
  }
  if (state_ == State::kClosed) return;
  if (ec) {
    Lose(Status(Code::kPeerFailed, "lost connection to " + Name() + " while receiving a result: " + ec.message()));
    return;
  }
  ReadFrame();
}

void ReducerStream::PrepareWideSum(PieceSend* piece) {
  const DataType wire = piece->wire;
  piece->wire = DataType::kFloat32;
  const size_t count = piece->header.count;
  piece->narrowed.resize(count);
  if (NarrowPiece(wire, reinterpret_cast<const float*>(piece->data), piece->narrowed.data(), count)) {
    piece->header.dtype = wire;
    piece->data = reinterpret_cast<const uint8_t*>(piece->narrowed.data());
    piece->bytes = count * sizeof(uint16_t);
  } else {
    // Inf, NaN or beyond the wire type's range: the piece goes in float32,
    // so the wire never carries an Inf or NaN it made; the values that fit
    // are rounded all the same (wire_codec.h).
    piece->fallback.resize(count);
    FallbackPiece(wire, piece->narrowed.data(), reinterpret_cast<const float*>(piece->data),
                  piece->fallback.data(), count);
    piece->narrowed = {};
    piece->header.dtype = DataType::kFloat32;
    piece->data = reinterpret_cast<const uint8_t*>(piece->fallback.data());
    if (params_.wire_fallbacks != nullptr) params_.wire_fallbacks->fetch_add(1, std::memory_order_relaxed);
  }
  protocol::EncodePieceFrame(protocol::FrameType::kData, piece->header, &piece->head);
}

void ReducerStream::Send(std::vector<PieceSend> sends) {
  asio::post(io_, [self = shared_from_this(), sends = std::move(sends)]() mutable {
    const bool open = self->state_ == State::kReady && !self->framed_.write_failed();
    for (auto& s : sends) {
      if (open && s.epoch == self->epoch_) {
        self->queue_.push_back(Outgoing{{}, std::move(s)});
      } else if (open && s.epoch > self->epoch_) {
        // Issued in a new epoch whose Reset has not run here yet. The owner
        // posts the Reset and the epoch's Sends under its lock, and posts
        // run in order (common/io_context.h), so it does not happen through
        // the owner; it did while asio's private queue could hold a Reset
        // back. Should a Send still come first, its pieces wait for the
        // Reset, to go after the Reset's own.
        self->early_.push_back(std::move(s));
      } else {
        s.lease.reset();  // this stream has moved on, or is gone
      }
    }
    if (open) self->framed_.Flush();
  });
}

void ReducerStream::Reset(uint32_t epoch, std::vector<uint8_t> announce, std::vector<PieceSend> sends) {
  asio::post(io_, [self = shared_from_this(), epoch, announce = std::move(announce),
                   sends = std::move(sends)]() mutable {
    self->epoch_ = std::max(self->epoch_, epoch);
    if (self->state_ != State::kReady || self->framed_.write_failed()) {
      sends.clear();  // their leases go back
      self->early_.clear();
      return;
    }
    self->DropQueuedPieces();
    // Pieces already written in older epochs will not be answered.
    self->unanswered_bytes_ = 0;
    self->queue_.push_back(Outgoing{std::move(announce), {}});
    for (auto& s : sends) {
      if (s.epoch >= self->epoch_) {
        self->queue_.push_back(Outgoing{{}, std::move(s)});
      } else {
        s.lease.reset();  // an older epoch's: not sent
      }
    }
    // Then what was issued in this epoch before this Reset ran, in order.
    while (!self->early_.empty() && self->early_.front().epoch <= self->epoch_) {
      PieceSend s = std::move(self->early_.front());
      self->early_.pop_front();
      // One for an epoch passed over is dropped here (its lease goes back):
      // it is redone in this one.
      if (s.epoch == self->epoch_) self->queue_.push_back(Outgoing{{}, std::move(s)});
    }
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
      self->DropQueued(/*keep_partial=*/true);
      self->CloseAfter(std::move(evict));
      return;
    }
    self->Shutdown();
  });
}

void ReducerStream::CloseAfter(std::vector<uint8_t> last) {
  state_ = State::kClosed;
  closing_arrivals_ = {};
  if (!framed_.write_failed()) queue_.push_back(Outgoing{std::move(last), {}});
  // With a write failed already it shuts at once: nothing more can go out.
  framed_.CloseAfterWrites(CloseWriteLimit());
}

std::chrono::milliseconds ReducerStream::CloseWriteLimit() const {
  if (!liveness_.enabled()) return kCloseWriteLimitWithoutLiveness;
  return std::max<std::chrono::milliseconds>(FramedSocket::kLinger, 2 * params_.liveness_timeout);
}

void ReducerStream::WriteControl(std::vector<uint8_t> frame) {
  if (framed_.write_failed()) return;
  queue_.push_back(Outgoing{std::move(frame), {}});
  framed_.Flush();
}

void ReducerStream::WriteUrgent(std::vector<uint8_t> frame) {
  if (framed_.write_failed()) return;
  urgent_.push_back(std::move(frame));
  framed_.Flush();
}

size_t ReducerStream::GatherFrames(size_t max_frames, std::vector<asio::const_buffer>* out) {
  // Urgent frames go between frames only, never inside a piece half written.
  urgent_in_flight_ = front_written_ > 0 ? 0 : std::min(urgent_.size(), max_frames);
  in_flight_ = front_written_ > 0 ? 1 : BatchSize(max_frames);
  if (in_flight_ == 0 && urgent_in_flight_ == 0) return 0;  // the window is full: a result flushes again
  std::vector<asio::const_buffer>& buffers = *out;
  buffers.reserve(urgent_in_flight_ + 2 * in_flight_);
  for (size_t i = 0; i < urgent_in_flight_; ++i) buffers.emplace_back(urgent_[i].data(), urgent_[i].size());
  // Pieces up to the slice; the last one taken may be cut (write_end_).
  const size_t chosen = params_.write_slice_bytes.value_or(window_.write_slice());
  const size_t slice = params_.interleave && chosen != 0 ? chosen : SIZE_MAX;
  size_t taken = 0;
  for (size_t i = 0; i < in_flight_; ++i) {
    Outgoing& out = queue_[i];
    if (!out.piece.lease) {
      buffers.emplace_back(out.control.data(), out.control.size());
      write_end_ = out.control.size();
      continue;
    }
    const size_t begin = i == 0 ? front_written_ : 0;
    if (begin == 0) {
      if (out.piece.wire != DataType::kFloat32) PrepareWideSum(&out.piece);
      if (out.piece.crc) {
        // Here rather than when the operation is issued: off the caller's
        // thread, and on the bytes as they are about to leave.
        protocol::SetPieceCrc(protocol::Crc32c(out.piece.data, out.piece.bytes), &out.piece.head);
        out.piece.crc = false;
      }
      unanswered_bytes_ += out.piece.bytes;
    }
    const size_t head = out.piece.head.size();
    const size_t end = std::min(head + out.piece.bytes, begin + (slice - taken));
    if (begin < head) buffers.emplace_back(out.piece.head.data() + begin, std::min(end, head) - begin);
    if (end > head) buffers.emplace_back(out.piece.data + (std::max(begin, head) - head), end - std::max(begin, head));
    taken += end - begin;
    write_end_ = end;
    if (taken >= slice) {
      in_flight_ = i + 1;
      break;
    }
  }
  return urgent_in_flight_ + in_flight_;
}

void ReducerStream::FramesWritten(const asio::error_code& ec) {
  for (size_t i = 0; i < urgent_in_flight_; ++i) urgent_.pop_front();
  urgent_in_flight_ = 0;
  for (size_t i = 0; i < in_flight_; ++i) {
    Outgoing& out = queue_.front();
    const size_t size = out.piece.lease ? out.piece.head.size() + out.piece.bytes : out.control.size();
    if (!ec && i + 1 == in_flight_ && write_end_ < size) {
      front_written_ = write_end_;  // the rest goes in the next write
      break;
    }
    queue_.pop_front();  // a piece written: its lease goes back
    front_written_ = 0;
  }
  in_flight_ = 0;
  if (!ec) return;  // FramedSocket writes the next batch
  if (state_ == State::kClosed) {
    Shutdown();
    return;
  }
  // The reducer closed on us, most likely after an ERROR frame that the
  // pending read is about to deliver: let the reader report the cause (no
  // write starts after a failed one, FramedSocket).
  DropQueued(/*keep_partial=*/false);
}

// Frames for the next write: up to `max_frames`, control frames always,
// pieces while the send window has room (the first piece always, so nothing
// can stall).
size_t ReducerStream::BatchSize(size_t max_frames) const {
  const uint64_t window = window_.bytes();
  uint64_t unanswered = unanswered_bytes_;
  size_t n = 0;
  for (; n < std::min(queue_.size(), max_frames); ++n) {
    const Outgoing& out = queue_[n];
    if (out.piece.lease) {
      if (window != 0 && unanswered != 0 && unanswered + out.piece.bytes > window) break;
      unanswered += out.piece.bytes;
    }
  }
  return n;
}

void ReducerStream::SampleWindow() {
  const auto now = Clock::now();
  if (!window_.WantSample(now)) return;
  if (std::optional<TcpPath> path = ReadTcpPath(framed_.socket().native_handle())) {
    window_.OnSample({std::chrono::microseconds(path->min_rtt_us), path->delivery_rate_bps}, now);
    window_now_.store(window_.bytes(), std::memory_order_relaxed);
    const std::chrono::microseconds min_rtt(path->min_rtt_us);
    if (std::optional<std::chrono::microseconds> floor = rto_floor_.OnPath(framed_.socket().native_handle(), min_rtt)) {
      if (auto line = RtoFloorLineOnce(*floor, min_rtt)) owner_->Log(LogLevel::kInfo, *line);
    }
    if (auto warning = IdleRestartWarningOnce(min_rtt, [this] { return Name(); })) {
      owner_->Log(LogLevel::kWarn, *warning);
    }
    std::optional<TcpWaitFinding> finding = waits_.OnSample(*path, now);
    const TcpWaitTotals& totals = waits_.totals();
    busy_us_.store(totals.busy_us, std::memory_order_relaxed);
    rwnd_limited_us_.store(totals.rwnd_limited_us, std::memory_order_relaxed);
    sndbuf_limited_us_.store(totals.sndbuf_limited_us, std::memory_order_relaxed);
    if (finding) {
      owner_->Log(LogLevel::kWarn,
                  Name() + ": " + DescribeTcpWait(*finding, "the reducer", SendBufferBytes(framed_.socket().native_handle())));
    }
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
      self->DropQueued(/*keep_partial=*/true);  // pieces not yet sent are moot now
      self->CloseAfter(protocol::EncodeError({why.code(), why.message()}));
      return;
    }
    self->Shutdown();
  });
}

size_t ReducerStream::Pinned(bool keep_partial) const {
  return std::max(in_flight_, keep_partial && front_written_ > 0 ? size_t{1} : size_t{0});
}

void ReducerStream::DropQueued(bool keep_partial) {
  // What is not being written goes; its leases go back to the operations.
  early_.clear();
  const size_t pinned = Pinned(keep_partial);
  while (queue_.size() > pinned) queue_.pop_back();
  if (queue_.empty()) front_written_ = 0;
  while (urgent_.size() > urgent_in_flight_) urgent_.pop_back();
}

void ReducerStream::DropQueuedPieces() {
  // The frames being written stay where they are: the write in flight points
  // into them (a piece's header lives in its queue entry), so they must not
  // move. Only the tail is taken off (pop_back leaves the other entries in
  // place) and its control frames put back.
  // A piece partly written is finished first: the reducer discards it.
  std::vector<std::vector<uint8_t>> controls;
  const size_t pinned = Pinned(/*keep_partial=*/true);
  for (size_t i = pinned; i < queue_.size(); ++i) {
    if (!queue_[i].piece.lease) controls.push_back(std::move(queue_[i].control));
  }
  while (queue_.size() > pinned) queue_.pop_back();  // the pieces' leases go back
  for (auto& control : controls) queue_.push_back(Outgoing{std::move(control), {}});
}

void ReducerStream::Shutdown() {
  const bool was_open = state_ != State::kClosed || framed_.closing();
  state_ = State::kClosed;
  DropQueued(/*keep_partial=*/false);
  result_op_.reset();
  asio::error_code ignored;
  retry_timer_.cancel();
  liveness_timer_.cancel();
  resolver_.cancel();
  framed_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  framed_.Close();  // ends the linger too
  if (was_open) owner_->OnStreamClosed();
}

}  // namespace rs::client
