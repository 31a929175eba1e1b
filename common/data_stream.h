// One data-plane TCP stream's bytes, plain or inside TLS 1.3 (data_tls.h),
// for both ends: the reducer's Connection and the worker's ReducerStream read
// and write through it (by way of FramedSocket, framed_socket.h) with
// asio::async_read / async_write and their own completion conditions,
// whichever it carries. Plain, every call goes
// straight to the socket. With TLS, reads are OpenSSL's (records decrypted in
// user space), and writes are the kernel's where it took the sending side
// over (kernel_send(): the socket then takes plain bytes, gathered, and
// encrypts them itself), OpenSSL's otherwise.
//
// With TLS the callers keep the socket's receive low-water mark off: OpenSSL
// reads ahead of what a read asks, so the socket may hold less than the
// read still needs, and a mark would wait for bytes that never come.
//
// Threading: as the socket's: one thread (its io_context's) at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include <sys/socket.h>

#include <asio.hpp>

#include "common/data_tls.h"
#include "common/status.h"

namespace rs {

class DataStream {
 public:
  using executor_type = asio::ip::tcp::socket::executor_type;

  explicit DataStream(asio::ip::tcp::socket& socket) : socket_(socket) {}
  ~DataStream();
  DataStream(const DataStream&) = delete;
  DataStream& operator=(const DataStream&) = delete;

  executor_type get_executor() { return socket_.get_executor(); }

  // From here on TLS, in `tls`'s role: the TLS handshake runs on the
  // connected socket, then `done` gets Ok, or why it failed: kAuth
  // when TLS refused (DataTls::DescribeFailure), kIo when the connection
  // failed. Bounded by the caller: closing the socket ends it (kIo).
  void StartTls(std::shared_ptr<const DataTls> tls, std::function<void(const Status&)> done);
  // Plain again, for the next connection on the same socket (reconnects).
  void Reset();

  bool tls() const { return ssl_ != nullptr; }
  bool kernel_send() const { return kernel_send_; }
  // Plain TCP: the writes from here on end a record (MSG_EOR), so the
  // kernel sends each as packets of its own instead of joining the next
  // write to a packet still waiting to go (TCP's autocorking). For writes
  // cut small on purpose (client/transport_plan.h, OperationSlice).
  void set_end_of_record(bool on) { end_of_record_ = on; }

  // asio's AsyncReadStream and AsyncWriteStream.
  template <typename Buffers, typename Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler);
  template <typename Buffers, typename Handler>
  void async_write_some(const Buffers& buffers, Handler&& handler);

 private:
  enum class Io { kDone, kWantRead, kWantWrite };
  // Writes with TLS take up to this many buffers at a time.
  static constexpr size_t kMaxWriteBuffers = 16;
  struct WriteBuffers {
    std::array<asio::const_buffer, kMaxWriteBuffers> items{};
    size_t count = 0;
  };

  // One non-blocking attempt; kDone with `ec` and `n` set.
  Io TryRead(asio::mutable_buffer buffer, size_t* n, asio::error_code* ec);
  Io TryWrite(const WriteBuffers& buffers, size_t* n, asio::error_code* ec);
  Io Failed(int rc, int saved_errno, const asio::error_code& end, asio::error_code* ec);
  void Handshake(std::function<void(const Status&)> done);

  // Makes `attempt` (TryRead or TryWrite, bound to its buffers) until it
  // is done, waiting for the socket between attempts, then completes.
  template <typename Attempt, typename Handler>
  void Drive(Attempt attempt, Handler handler, bool in_completion);
  // Calls `handler` now when already inside a completion, else posts it
  // (asio never calls a handler from the function that started the work).
  template <typename Handler>
  void Complete(Handler handler, const asio::error_code& ec, size_t n, bool in_completion);

  asio::ip::tcp::socket& socket_;
  std::shared_ptr<const DataTls> tls_;
  SSL* ssl_ = nullptr;
  bool kernel_send_ = false;
  bool end_of_record_ = false;
  // A TLS write of small buffers gathers up to one record here first, so a
  // frame header does not go out as a record of its own.
  std::array<uint8_t, 16 << 10> gather_{};
};

template <typename Buffers, typename Handler>
void DataStream::async_read_some(const Buffers& buffers, Handler&& handler) {
  if (ssl_ == nullptr) {
    socket_.async_read_some(buffers, std::forward<Handler>(handler));
    return;
  }
  asio::mutable_buffer first;
  for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers); ++it) {
    first = asio::mutable_buffer(*it);
    if (first.size() > 0) break;
  }
  Drive([this, first](size_t* n, asio::error_code* ec) { return first.size() == 0 ? Io::kDone : TryRead(first, n, ec); },
        std::forward<Handler>(handler), false);
}

template <typename Buffers, typename Handler>
void DataStream::async_write_some(const Buffers& buffers, Handler&& handler) {
  if (ssl_ == nullptr) {
    socket_.async_send(buffers, end_of_record_ ? MSG_EOR : 0, std::forward<Handler>(handler));
    return;
  }
  if (kernel_send_) {
    socket_.async_write_some(buffers, std::forward<Handler>(handler));
    return;
  }
  WriteBuffers some;
  for (auto it = asio::buffer_sequence_begin(buffers);
       it != asio::buffer_sequence_end(buffers) && some.count < kMaxWriteBuffers; ++it) {
    const asio::const_buffer b(*it);
    if (b.size() > 0) some.items[some.count++] = b;
  }
  Drive([this, some](size_t* n, asio::error_code* ec) { return some.count == 0 ? Io::kDone : TryWrite(some, n, ec); },
        std::forward<Handler>(handler), false);
}

template <typename Handler>
void DataStream::Complete(Handler handler, const asio::error_code& ec, size_t n, bool in_completion) {
  if (in_completion) {
    handler(ec, n);
    return;
  }
  asio::post(socket_.get_executor(), [handler = std::move(handler), ec, n]() mutable { handler(ec, n); });
}

template <typename Attempt, typename Handler>
void DataStream::Drive(Attempt attempt, Handler handler, bool in_completion) {
  size_t n = 0;
  asio::error_code ec;
  const Io io = attempt(&n, &ec);
  if (io == Io::kDone) {
    Complete(std::move(handler), ec, n, in_completion);
    return;
  }
  socket_.async_wait(io == Io::kWantRead ? asio::socket_base::wait_read : asio::socket_base::wait_write,
                     [this, attempt, handler = std::move(handler)](const asio::error_code& wait_ec) mutable {
                       if (wait_ec) {
                         handler(wait_ec, 0);
                         return;
                       }
                       Drive(attempt, std::move(handler), true);
                     });
}

}  // namespace rs
