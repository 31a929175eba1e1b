#include "common/framed_socket.h"

namespace rs {

FramedSocket::FramedSocket(asio::ip::tcp::socket socket, Owner& owner, std::chrono::milliseconds linger)
    : socket_(std::move(socket)), owner_(owner), linger_(linger), close_timer_(socket_.get_executor()) {}

void FramedSocket::Flush() {
  if (writing_) return;  // its completion flushes again
  if (write_failed_) {
    // Nothing more can go out: a close the owner asked for happens now
    // rather than at the write limit.
    if (close_after_writes_ && !lingering_) End();
    return;
  }
  if (!owner_.FramesQueued()) {
    if (close_after_writes_) Linger();
    return;
  }
  std::vector<asio::const_buffer> buffers;  // asio::async_write keeps its own copy
  if (owner_.GatherFrames(kMaxBatch, &buffers) == 0) return;  // held back: the owner flushes again
  writing_ = true;
  asio::async_write(stream_, buffers, CountProgress{&write_progress_},
                    [this, keep = owner_.KeepAlive()](const asio::error_code& ec, size_t bytes) {
                      if (bytes > 0) ++write_progress_;  // the last call is not seen by the condition
                      writing_ = false;
                      if (ec) write_failed_ = true;  // before the owner hears: it may enqueue
                      owner_.FramesWritten(ec);
                      if (!ec) Flush();
                    });
}

void FramedSocket::DiscardReads() { draining_ = true; }

void FramedSocket::CloseAfterWrites(std::chrono::milliseconds write_limit) {
  if (lingering_) return;
  close_after_writes_ = true;
  // A write in flight to a peer that stopped reading would never end, and
  // the owner's frames (a reducer's piece memory, a worker's leases on its
  // operations) would be held for ever. The linger replaces this timer.
  close_timer_.expires_after(write_limit);
  close_timer_.async_wait([this, keep = owner_.KeepAlive()](const asio::error_code& ec) {
    if (!ec && close_after_writes_ && !lingering_) End();
  });
  Flush();
}

void FramedSocket::Linger() {
  if (lingering_) return;
  // Everything is written, the last frame last: FIN, then read until the
  // peer closes too (see the header: a close with unread input would reset
  // the connection and could destroy the last frame before the peer reads it).
  lingering_ = true;
  asio::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  close_timer_.expires_after(linger_);
  close_timer_.async_wait([this, keep = owner_.KeepAlive()](const asio::error_code& ec) {
    if (!ec && lingering_) End();
  });
  draining_ = true;
  if (!read_pending_) Drain({});  // else the pending read's completion drains on
}

void FramedSocket::Drain(const asio::error_code& ec) {
  if (ec || !socket_.is_open()) {  // the peer's close (EOF), a reset, or closed here
    End();
    return;
  }
  read_pending_ = true;
  stream_.async_read_some(asio::buffer(drain_buf_),
                          [this, keep = owner_.KeepAlive()](const asio::error_code& ec2, size_t) {
                            read_pending_ = false;
                            if (draining_) Drain(ec2);
                          });
}

void FramedSocket::End() {
  // The owner first: it may still look at closing() (a worker tells its
  // owner the stream closed only if it was open or closing).
  owner_.SocketEnded();
  Close();
}

void FramedSocket::Close() {
  draining_ = false;
  close_after_writes_ = false;
  lingering_ = false;
  close_timer_.cancel();
  asio::error_code ignored;
  socket_.close(ignored);
}

}  // namespace rs
