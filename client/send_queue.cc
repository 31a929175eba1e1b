#include "client/send_queue.h"

#include <algorithm>
#include <cstdint>

#include "client/wire_codec.h"
#include "protocol/crc32c.h"

namespace rs::client {

void SendQueue::Push(std::vector<PieceSend> sends) {
  for (auto& s : sends) {
    if (s.epoch == epoch_) {
      queue_.push_back(Outgoing{{}, std::move(s)});
    } else if (s.epoch > epoch_) {
      // Issued in a new epoch whose Reset has not run here yet. The owner
      // posts the Reset and the epoch's Sends under its lock, and posts
      // run in order (common/io_context.h), so it does not happen through
      // the owner; it did while asio's private queue could hold a Reset
      // back. Should a Send still come first, its pieces wait for the
      // Reset, to go after the Reset's own.
      early_.push_back(std::move(s));
    } else {
      s.lease.reset();  // this stream has moved on
    }
  }
}

void SendQueue::Reset(uint32_t epoch, std::vector<uint8_t> announce, std::vector<PieceSend> sends) {
  epoch_ = std::max(epoch_, epoch);
  DropPieces();
  // Pieces already written in older epochs will not be answered.
  unanswered_bytes_ = 0;
  queue_.push_back(Outgoing{std::move(announce), {}});
  for (auto& s : sends) {
    if (s.epoch >= epoch_) {
      queue_.push_back(Outgoing{{}, std::move(s)});
    } else {
      s.lease.reset();  // an older epoch's: not sent
    }
  }
  // Then what was issued in this epoch before this Reset ran, in order.
  while (!early_.empty() && early_.front().epoch <= epoch_) {
    PieceSend s = std::move(early_.front());
    early_.pop_front();
    // One for an epoch passed over is dropped here (its lease goes back):
    // it is redone in this one.
    if (s.epoch == epoch_) queue_.push_back(Outgoing{{}, std::move(s)});
  }
}

void SendQueue::SkipTo(uint32_t epoch) {
  epoch_ = std::max(epoch_, epoch);
  early_.clear();  // their leases go back
}

void SendQueue::PushControl(std::vector<uint8_t> frame) { queue_.push_back(Outgoing{std::move(frame), {}}); }

void SendQueue::PushUrgent(std::vector<uint8_t> frame) { urgent_.push_back(std::move(frame)); }

void SendQueue::PrepareWideSum(PieceSend* piece) {
  const DataType wire = piece->wire;
  piece->wire = DataType::kFloat32;
  const size_t count = piece->header.count;
  if (piece->lease->narrowed() != nullptr) {
    // The failover copy is the piece in the wire type (copy_behind.h), or,
    // where a value did not fit, its float32 values to narrow as below.
    const uint16_t* kept = piece->lease->WireElements(piece->header.offset, count, &piece->fallback);
    if (kept != nullptr) {
      piece->header.dtype = wire;
      piece->data = reinterpret_cast<const uint8_t*>(kept);
      piece->bytes = count * sizeof(uint16_t);
      protocol::EncodePieceFrame(protocol::FrameType::kData, piece->header, &piece->head);
      return;
    }
    piece->data = reinterpret_cast<const uint8_t*>(piece->fallback.data());
  }
  piece->narrowed.resize(count);
  if (NarrowPiece(wire, reinterpret_cast<const float*>(piece->data), piece->narrowed.data(), count)) {
    piece->header.dtype = wire;
    piece->data = reinterpret_cast<const uint8_t*>(piece->narrowed.data());
    piece->bytes = count * sizeof(uint16_t);
    piece->fallback = {};
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
    if (wire_fallbacks_ != nullptr) wire_fallbacks_->fetch_add(1, std::memory_order_relaxed);
  }
  protocol::EncodePieceFrame(protocol::FrameType::kData, piece->header, &piece->head);
}

size_t SendQueue::Gather(size_t max_frames, const WriteLimits& limits, std::vector<asio::const_buffer>* out) {
  // Urgent frames go between frames only, never inside a piece half written.
  urgent_in_flight_ = front_written_ > 0 ? 0 : std::min(urgent_.size(), max_frames);
  in_flight_ = front_written_ > 0 ? 1 : BatchSize(max_frames, limits.window);
  if (in_flight_ == 0 && urgent_in_flight_ == 0) return 0;  // the window is full: a result flushes again
  std::vector<asio::const_buffer>& buffers = *out;
  buffers.reserve(urgent_in_flight_ + 2 * in_flight_);
  for (size_t i = 0; i < urgent_in_flight_; ++i) buffers.emplace_back(urgent_[i].data(), urgent_[i].size());
  // Pieces up to the slice; the last one taken may be cut (write_end_).
  size_t slice = limits.slice != 0 ? limits.slice : SIZE_MAX;
  size_t taken = 0;
  cut_fine_ = false;
  for (size_t i = 0; i < in_flight_; ++i) {
    Outgoing& entry = queue_[i];
    if (!entry.piece.lease) {
      buffers.emplace_back(entry.control.data(), entry.control.size());
      write_end_ = entry.control.size();
      continue;
    }
    PieceSend& piece = entry.piece;
    // A piece's own bound counts where it cuts at least a quarter off the
    // write: a slice cut by a few KiB gains nothing and costs a write. (Half
    // was too much: 1 MiB over 3 reducers, an eighth of a 344 KiB share
    // against 64 KiB slices, went uncut and took 5 - 7 % longer.)
    const bool own_bound = limits.slice != 0 && limits.min_slice != 0 && piece.slice != 0;
    const size_t bound = own_bound ? std::max(piece.slice, limits.min_slice) : slice;
    if (bound <= slice / 4 * 3) {
      if (taken >= bound) {  // the write is as long as this piece allows already
        in_flight_ = i;
        break;
      }
      slice = bound;
      cut_fine_ = true;
    }
    const size_t begin = i == 0 ? front_written_ : 0;
    if (begin == 0) {
      if (piece.wire != DataType::kFloat32) PrepareWideSum(&piece);
      if (piece.crc) {
        // Here rather than when the operation is issued: off the caller's
        // thread, and on the bytes as they are about to leave.
        protocol::SetPieceCrc(protocol::Crc32c(piece.data, piece.bytes), &piece.head);
        piece.crc = false;
      }
      unanswered_bytes_ += piece.bytes;
    }
    const size_t head = piece.head.size();
    // Written as a sum of what is left, so that no slice can overflow it
    // (SIZE_MAX: none; a piece cut by a write continued without a slice).
    const size_t end = begin + std::min(head + piece.bytes - begin, slice - taken);
    if (begin < head) buffers.emplace_back(piece.head.data() + begin, std::min(end, head) - begin);
    if (end > head) buffers.emplace_back(piece.data + (std::max(begin, head) - head), end - std::max(begin, head));
    taken += end - begin;
    write_end_ = end;
    if (taken >= slice) {
      in_flight_ = i + 1;
      break;
    }
  }
  return urgent_in_flight_ + in_flight_;
}

void SendQueue::Written(bool ok) {
  for (size_t i = 0; i < urgent_in_flight_; ++i) urgent_.pop_front();
  urgent_in_flight_ = 0;
  for (size_t i = 0; i < in_flight_; ++i) {
    Outgoing& entry = queue_.front();
    const size_t size = entry.piece.lease ? entry.piece.head.size() + entry.piece.bytes : entry.control.size();
    if (ok && i + 1 == in_flight_ && write_end_ < size) {
      front_written_ = write_end_;  // the rest goes in the next write
      break;
    }
    queue_.pop_front();  // a piece written: its lease goes back
    front_written_ = 0;
  }
  in_flight_ = 0;
}

void SendQueue::Answered(uint64_t bytes) { unanswered_bytes_ -= std::min<uint64_t>(unanswered_bytes_, bytes); }

size_t SendQueue::BatchSize(size_t max_frames, uint64_t window) const {
  uint64_t unanswered = unanswered_bytes_;
  size_t n = 0;
  for (; n < std::min(queue_.size(), max_frames); ++n) {
    const Outgoing& entry = queue_[n];
    if (entry.piece.lease) {
      if (window != 0 && unanswered != 0 && unanswered + entry.piece.bytes > window) break;
      unanswered += entry.piece.bytes;
    }
  }
  return n;
}

size_t SendQueue::Pinned(bool keep_partial) const {
  return std::max(in_flight_, keep_partial && front_written_ > 0 ? size_t{1} : size_t{0});
}

void SendQueue::Drop(bool keep_partial) {
  // What is not being written goes; its leases go back to the operations.
  early_.clear();
  const size_t pinned = Pinned(keep_partial);
  while (queue_.size() > pinned) queue_.pop_back();
  if (queue_.empty()) front_written_ = 0;
  while (urgent_.size() > urgent_in_flight_) urgent_.pop_back();
}

void SendQueue::DropPieces() {
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

}  // namespace rs::client
