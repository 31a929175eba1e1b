// What one stream to a reducer has to write, and in what order, with no
// socket: the queues of ReducerStream (reducer_stream.h), which keeps the I/O
// and asks this class for each write (FramedSocket::Owner's GatherFrames and
// FramesWritten). Three queues:
//  - urgent control frames (heartbeats, membership reports), written ahead
//    of everything queued, between frames only, so that a full send window
//    never silences the stream;
//  - the ordered queue: pieces and the control frames that must go in order
//    with them (AUTH, an epoch's announce, the last frame of a close);
//  - early pieces, issued for an epoch whose Reset has not run yet: they
//    wait for it.
// A write takes frames from the front while the send window has room (the
// first piece always, so nothing can stall), and, with write slices, stops
// inside a piece: the rest of that piece then goes before anything else.
//
// Dropping never moves what a write in flight points into (a piece's header
// lives in its queue entry), and every piece dropped, written or not, gives
// its operation's lease back as it goes (operation.h), so an operation is
// never left waiting on a piece this stream will not write.
//
// Threading: not thread-safe; the stream's I/O thread owns it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include <asio/buffer.hpp>

#include "client/operation.h"
#include "common/dtype.h"
#include "protocol/wire.h"

namespace rs::client {

// A DATA frame to write: header plus a view of the operation's source.
// It holds the operation's lease until the bytes have been written: a piece
// dropped unwritten (or written) gives it back as it goes. The
// CRC32C, when asked for, is computed just before the frame is written.
// A float32 sum on a 16-bit wire (`wire` not kFloat32) is narrowed into
// `narrowed` just before it is written, like the CRC: on the I/O thread, one
// piece at a time, so no copy of the whole buffer is ever made. An operation
// whose failover copy is kept narrowed (OperationImpl::narrowed) goes out
// from that copy instead (`data` null until then).
struct PieceSend {
  std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> head{};
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  uint32_t epoch = 0;
  // At most this much of it per write while the slice is automatic
  // (OperationSlice of its operation's share of the stream; 0: no bound).
  size_t slice = 0;
  bool crc = false;
  OpLease lease;  // empty only in a queue entry that holds a control frame
  DataType wire = DataType::kFloat32;  // set back to kFloat32 once narrowed (or not)
  protocol::PieceHeader header;        // wide sums: `head` is re-encoded from it
  std::vector<uint16_t> narrowed;      // moves keep `data` valid: the storage moves with it
  std::vector<float> fallback;         // what goes instead when a value did not fit
};

// What bounds the next write; both follow the stream's path (path_sampler.h)
// unless the user set them.
struct WriteLimits {
  uint64_t window = 0;  // bytes of pieces written without their result, at most (0: no limit)
  size_t slice = 0;     // bytes of pieces one write takes, at most (0: whole batches)
  // A piece's own bound (PieceSend::slice) cuts a slice down to this, no
  // further (0: pieces' bounds do not count, as with a slice the user set).
  size_t min_slice = 0;
};

class SendQueue {
 public:
  // `wire_fallbacks` (may be null) counts the wide sums' pieces that went in
  // float32 because a value did not fit the wire type; it outlives this.
  explicit SendQueue(std::atomic<uint64_t>* wire_fallbacks = nullptr) : wire_fallbacks_(wire_fallbacks) {}
  SendQueue(const SendQueue&) = delete;
  SendQueue& operator=(const SendQueue&) = delete;

  // Pieces of older epochs are not sent.
  uint32_t epoch() const { return epoch_; }
  // Pieces of the current epoch queue; those of a newer one wait for its
  // Reset; those of an older one are dropped (their leases go back).
  void Push(std::vector<PieceSend> sends);
  // Moves to `epoch` (never back): drops the queued pieces (control frames
  // stay; a piece partly written is finished, the reducer discards it),
  // queues `announce`, then `sends` of the epoch, then the early pieces
  // issued for it. Early pieces of an epoch passed over are dropped.
  void Reset(uint32_t epoch, std::vector<uint8_t> announce, std::vector<PieceSend> sends);
  // Reset for a stream that writes nothing now (not ready, or its write
  // failed): it moves to `epoch` all the same, and the early pieces go.
  void SkipTo(uint32_t epoch);
  void PushControl(std::vector<uint8_t> frame);  // in order with the pieces
  void PushUrgent(std::vector<uint8_t> frame);   // ahead of what is not begun

  // Whether frames are queued, written or not, held back or not.
  bool frames_queued() const { return !queue_.empty() || !urgent_.empty(); }
  bool ordered_queued() const { return !queue_.empty(); }
  bool urgent_queued() const { return !urgent_.empty(); }

  // Appends the buffers of the next write to `buffers`: up to `max_frames`
  // urgent frames, then up to `max_frames` of the ordered queue within
  // `limits`; returns how many frames (a piece cut by the slice counts).
  // 0 with frames queued: the window is full, an answer opens it. The
  // buffers stay valid and in place until Written.
  size_t Gather(size_t max_frames, const WriteLimits& limits, std::vector<asio::const_buffer>* buffers);
  // The write Gather gave ended: all of it when `ok`. What it wrote is
  // released (a piece's lease goes back); a piece it cut stays at the
  // front, its rest first in the next write. Not `ok`: everything that
  // write took is released.
  void Written(bool ok);
  // The last Gather's write was cut by a piece's own bound: it should leave
  // as packets of its own (DataStream::set_end_of_record).
  bool cut_fine() const { return cut_fine_; }
  // A result answered `bytes` of the pieces written: the window reopens by
  // as much, even for a result that is dropped.
  void Answered(uint64_t bytes);
  // Pieces written (or being written) without their result yet.
  uint64_t unanswered_bytes() const { return unanswered_bytes_; }

  // Drops what is not being written, urgent frames and early pieces
  // included; their leases go back. keep_partial: a piece partly written
  // stays, to be finished (the stream goes on writing); otherwise only what
  // a write in flight points into.
  void Drop(bool keep_partial);
  // Drops the queued pieces not being written, keeping the control frames
  // in their order and a piece partly written.
  void DropPieces();

 private:
  struct Outgoing {
    std::vector<uint8_t> control;
    PieceSend piece;
  };

  // Entries of the ordered queue the next write takes: up to `max_frames`,
  // control frames always, pieces while `window` has room (the first piece
  // always, so nothing can stall).
  size_t BatchSize(size_t max_frames, uint64_t window) const;
  size_t Pinned(bool keep_partial) const;  // queue_ entries that must stay
  // Narrows a wide sum's piece (PieceSend::wire) before its first byte goes.
  void PrepareWideSum(PieceSend* piece);

  std::atomic<uint64_t>* const wire_fallbacks_;
  uint32_t epoch_ = 0;
  std::deque<std::vector<uint8_t>> urgent_;  // written before queue_
  std::deque<Outgoing> queue_;  // the first in_flight_ are being written: never moved or erased
  std::deque<PieceSend> early_;  // sent for a newer epoch than epoch_: they wait for its Reset
  size_t urgent_in_flight_ = 0;
  size_t in_flight_ = 0;
  // Bytes of queue_.front() already written (a write slice ended inside
  // it): nothing else may be written before the rest of it.
  size_t front_written_ = 0;
  size_t write_end_ = 0;  // where the write in flight ends inside its last entry
  bool cut_fine_ = false;
  uint64_t unanswered_bytes_ = 0;  // pieces written (or being written) without their result yet
};

}  // namespace rs::client
