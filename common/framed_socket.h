// The transport under both ends of a data-plane stream, the reducer's
// Connection (server/net/connection.h) and the worker's ReducerStream
// (client/reducer_stream.h): the socket and its DataStream (plain or TLS
// bytes), reads that keep track of whether one is pending, gathered writes of
// the owner's queue of frames, and the close that does not lose the last
// frame. What a frame means, which frames queue and in what order, stays with
// the owner; this layer only moves bytes and ends the socket.
//
// Writes. The owner keeps its own queue (a reducer's results, a worker's
// pieces and urgent frames) and implements Owner: Flush() asks it for the
// buffers of the next write, at most kMaxBatch frames gathered into one
// write (small pieces need it: one system call and one wake-up for many),
// and tells it when that write ended. One write is in flight at a time. A
// write that fails is reported once (FramesWritten with the error): no write
// starts after it, so the owner can let its pending read report the cause
// (a peer that gives up sends its reason, then closes).
//
// Closing. Closing a socket with unread input resets the connection, and a
// reset throws away what the kernel has not sent yet: the peer would lose the
// last frame (an ERROR with the reason, a BYE). So a closing end writes its
// last frame (CloseAfterWrites), sends FIN, then reads and discards until the
// peer closes too, for at most the linger (kLinger); then it closes.
//
// Threading: one thread, the socket's io_context's, calls everything here
// and runs every handler (the owner's callbacks included). Handlers keep the
// owner alive with Owner::KeepAlive, so the owner (which holds this) outlives
// every operation this layer starts.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <asio.hpp>

#include "common/data_stream.h"
#include "common/transfer_progress.h"

namespace rs {

class FramedSocket {
 public:
  // How long a closing end reads on after its last frame, waiting for the
  // peer to close. The peer closes as soon as it has read that frame: one
  // round trip plus the bytes queued ahead of it (a socket buffer drains at
  // line rate in milliseconds), far under a second on any path the data
  // plane works over. The worker's close (Client destruction, Abort, Evict)
  // waits this long for a reducer that does not close, so longer costs every
  // program's exit; shorter risks a reset on a slow path. One value for both
  // ends (the reducer lingered 2 s before, for no stated reason).
  static constexpr std::chrono::milliseconds kLinger{1000};
  // Frames one gathered write takes at most: 16 of the smallest pieces fill
  // a write well, and the buffers for them stay few (a piece is a header
  // and a payload: DataStream takes up to 16 buffers per TLS write).
  static constexpr size_t kMaxBatch = 16;

  // What the owner gives the layer: its queue of frames, and its part in
  // ending the socket. Called on the socket's thread only.
  class Owner {
   public:
    // Whether frames are queued (written or not, held back or not).
    virtual bool FramesQueued() const = 0;
    // Appends the buffers of the next write to `buffers`: frames from the
    // front of the queue, in order, at most `max_frames` of them (of each
    // queue, for an owner with two: a worker's urgent frames go first);
    // returns how many. 0 with frames queued: held back for now (a worker's send
    // window), the owner calls Flush() again when they may go. The buffers
    // must stay valid and in place until FramesWritten.
    virtual size_t GatherFrames(size_t max_frames, std::vector<asio::const_buffer>* buffers) = 0;
    // The write of what GatherFrames gave ended: all of it when `ec` is
    // clear. An error comes once: no write starts after it.
    virtual void FramesWritten(const asio::error_code& ec) = 0;
    // The layer ends the socket: the drain reached the peer's close or an
    // error, or the linger or the write limit passed. The owner's own
    // clean-up; the layer closes the socket right after.
    virtual void SocketEnded() = 0;
    // Held by every handler of this layer (the owner's shared_from_this()).
    virtual std::shared_ptr<void> KeepAlive() = 0;

   protected:
    ~Owner() = default;
  };

  // `linger`: kLinger but in this layer's own tests.
  FramedSocket(asio::ip::tcp::socket socket, Owner& owner, std::chrono::milliseconds linger = kLinger);
  FramedSocket(const FramedSocket&) = delete;
  FramedSocket& operator=(const FramedSocket&) = delete;

  // For connecting, socket options and the TLS start.
  asio::ip::tcp::socket& socket() { return socket_; }
  DataStream& stream() { return stream_; }

  // Every read goes through Read or WaitReadable: they track whether one is
  // pending, which the drain needs (one read at a time) and the owners ask
  // (read_pending()). `handler(ec, bytes)` runs first; then, once closing
  // (DiscardReads), the layer reads on and discards until the end.
  template <typename Condition, typename Handler>
  void Read(asio::mutable_buffer buffer, Condition condition, Handler&& handler);
  // Waits until the socket has something to read (`handler(ec)`), reading
  // nothing: the reducer peeks at a worker's first byte to tell TLS.
  template <typename Handler>
  void WaitReadable(Handler&& handler);
  bool read_pending() const { return read_pending_; }

  // Starts the next write of the owner's queue unless one is in flight or a
  // write failed; with the queue empty after CloseAfterWrites, lingers.
  void Flush();
  bool writing() const { return writing_; }
  bool write_failed() const { return write_failed_; }
  // Write completions, partial ones included: the owner's liveness counts
  // them as bytes it sent.
  uint64_t write_progress() const { return write_progress_; }

  // From now on every read that completes is followed by reads that discard
  // what arrives, until the peer closes (then the socket ends).
  void DiscardReads();
  // The frames queued now end the stream: once they are written, FIN, then
  // the linger. Bounded: if they are not written within `write_limit` (a
  // peer that reads nothing), the socket ends then. With a write failed
  // already, it ends at once. Queue the last frame first.
  void CloseAfterWrites(std::chrono::milliseconds write_limit);
  // Between CloseAfterWrites (or the linger) and Close.
  bool closing() const { return close_after_writes_ || lingering_; }
  bool lingering() const { return lingering_; }
  // Closes the socket now; no callback. Again is harmless.
  void Close();

 private:
  void Linger();
  void Drain(const asio::error_code& ec);
  void End();

  asio::ip::tcp::socket socket_;
  DataStream stream_{socket_};  // every read and write of socket_
  Owner& owner_;
  const std::chrono::milliseconds linger_;
  asio::steady_timer close_timer_;  // the write limit, then the linger
  bool read_pending_ = false;
  bool writing_ = false;
  bool write_failed_ = false;
  bool draining_ = false;
  bool close_after_writes_ = false;
  bool lingering_ = false;
  uint64_t write_progress_ = 0;
  std::array<uint8_t, 4096> drain_buf_{};
};

template <typename Condition, typename Handler>
void FramedSocket::Read(asio::mutable_buffer buffer, Condition condition, Handler&& handler) {
  read_pending_ = true;
  asio::async_read(stream_, buffer, std::move(condition),
                   [this, keep = owner_.KeepAlive(), handler = std::forward<Handler>(handler)](
                       const asio::error_code& ec, size_t bytes) mutable {
                     read_pending_ = false;
                     handler(ec, bytes);
                     if (draining_ && !read_pending_) Drain(ec);
                   });
}

template <typename Handler>
void FramedSocket::WaitReadable(Handler&& handler) {
  read_pending_ = true;
  socket_.async_wait(asio::socket_base::wait_read,
                     [this, keep = owner_.KeepAlive(), handler = std::forward<Handler>(handler)](
                         const asio::error_code& ec) mutable {
                       read_pending_ = false;
                       handler(ec);
                       if (draining_ && !read_pending_) Drain(ec);
                     });
}

}  // namespace rs
