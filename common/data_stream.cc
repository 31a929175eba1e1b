#include "common/data_stream.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rs {
namespace {

// An OpenSSL error as an asio error_code, its text OpenSSL's reason.
class TlsCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "tls"; }
  std::string message(int value) const override {
    const char* reason = ERR_reason_error_string(static_cast<unsigned long>(value));
    return std::string("TLS: ") + (reason != nullptr ? reason : "error " + std::to_string(value));
  }
};

const TlsCategory& tls_category() {
  static const TlsCategory category;
  return category;
}

// Most plain bytes one write takes: OpenSSL writes them as 16 KiB records,
// one call each (partial writes on), until the socket is full.
constexpr size_t kMaxTlsWrite = 256 << 10;

}  // namespace

DataStream::~DataStream() { Reset(); }

void DataStream::Reset() {
  // No close_notify: the frames end the stream (data_tls.cc).
  if (ssl_ != nullptr) SSL_free(ssl_);
  ssl_ = nullptr;
  tls_.reset();
  kernel_send_ = false;
}

void DataStream::StartTls(std::shared_ptr<const DataTls> tls, std::function<void(const Status&)> done) {
  Reset();
  asio::error_code ec;
  socket_.native_non_blocking(true, ec);  // OpenSSL reads and writes the socket itself
  ssl_ = ec ? nullptr : tls->NewSession(socket_.native_handle());
  if (ssl_ == nullptr) {
    done(Status(Code::kInternal, "TLS: cannot start a session on the socket" + (ec ? ": " + ec.message() : "")));
    return;
  }
  tls_ = std::move(tls);
  Handshake(std::move(done));
}

void DataStream::Handshake(std::function<void(const Status&)> done) {
  ERR_clear_error();
  const int rc = [&] {
    const SigpipeGuard quiet;
    return SSL_do_handshake(ssl_);
  }();
  if (rc == 1) {
    kernel_send_ = BIO_get_ktls_send(SSL_get_wbio(ssl_));
    done(Status::Ok());
    return;
  }
  const int err = SSL_get_error(ssl_, rc);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    socket_.async_wait(err == SSL_ERROR_WANT_READ ? asio::socket_base::wait_read : asio::socket_base::wait_write,
                       [this, done = std::move(done)](const asio::error_code& ec) mutable {
                         if (ec) {
                           done(Status(Code::kIo, "TLS handshake: " + ec.message()));
                           return;
                         }
                         if (ssl_ != nullptr) Handshake(std::move(done));
                       });
    return;
  }
  const int saved_errno = errno;
  const unsigned long openssl_error = ERR_peek_last_error();
  ERR_clear_error();
  if (openssl_error == 0) {  // the connection failed, not TLS
    done(Status(Code::kIo, "TLS handshake: " + std::string(saved_errno != 0 && err == SSL_ERROR_SYSCALL
                                                                 ? std::strerror(saved_errno)
                                                                 : "connection closed by the peer")));
    return;
  }
  done(Status(Code::kAuth, DataTls::DescribeFailure(openssl_error, tls_->role())));
}

// What a failed SSL_read_ex or SSL_write_ex means: wait for the socket, or
// done with `*ec` set. `end` is the error for a connection that just ended.
DataStream::Io DataStream::Failed(int rc, int saved_errno, const asio::error_code& end, asio::error_code* ec) {
  switch (SSL_get_error(ssl_, rc)) {
    case SSL_ERROR_WANT_READ:
      return Io::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return Io::kWantWrite;
    case SSL_ERROR_ZERO_RETURN:  // close_notify, or EOF (SSL_OP_IGNORE_UNEXPECTED_EOF)
      *ec = end;
      return Io::kDone;
    case SSL_ERROR_SYSCALL:
      *ec = saved_errno != 0 ? asio::error_code(saved_errno, asio::system_category()) : end;
      return Io::kDone;
    default:
      *ec = asio::error_code(static_cast<int>(ERR_peek_last_error()), tls_category());
      ERR_clear_error();
      return Io::kDone;
  }
}

DataStream::Io DataStream::TryRead(asio::mutable_buffer buffer, size_t* n, asio::error_code* ec) {
  // Every record OpenSSL has or the socket holds, up to the buffer's size,
  // in one completion: a record is at most 16 KiB.
  uint8_t* const data = static_cast<uint8_t*>(buffer.data());
  const SigpipeGuard quiet;  // a read may write too (an alert); one guard per call, not per record
  *n = 0;
  while (*n < buffer.size()) {
    ERR_clear_error();
    size_t got = 0;
    const int rc = SSL_read_ex(ssl_, data + *n, buffer.size() - *n, &got);
    if (rc == 1) {
      *n += got;
      continue;
    }
    // What was read goes first; an error comes again on the next call.
    if (*n > 0) return Io::kDone;
    return Failed(rc, errno, asio::error::eof, ec);
  }
  return Io::kDone;
}

DataStream::Io DataStream::TryWrite(const WriteBuffers& buffers, size_t* n, asio::error_code* ec) {
  const SigpipeGuard quiet;  // one guard for every record this call writes
  *n = 0;
  size_t index = 0;   // buffers.items[index] holds the next byte,
  size_t offset = 0;  // at this offset
  while (index < buffers.count && *n < kMaxTlsWrite) {
    // Small buffers are gathered into one record, so that a frame header
    // does not go as a record of its own; a large one goes as it is. After a
    // retry OpenSSL asks for the same bytes again: this makes them again.
    const asio::const_buffer& b = buffers.items[index];
    const void* data = static_cast<const uint8_t*>(b.data()) + offset;
    size_t size = std::min(b.size() - offset, kMaxTlsWrite - *n);
    if (size < gather_.size() && index + 1 < buffers.count) {
      size = 0;
      size_t i = index, off = offset;
      while (i < buffers.count && size < gather_.size()) {
        const size_t take = std::min(buffers.items[i].size() - off, gather_.size() - size);
        std::memcpy(gather_.data() + size, static_cast<const uint8_t*>(buffers.items[i].data()) + off, take);
        size += take;
        off = 0;
        ++i;
      }
      data = gather_.data();
    }
    ERR_clear_error();
    size_t wrote = 0;
    const int rc = SSL_write_ex(ssl_, data, size, &wrote);
    if (rc == 1) {
      *n += wrote;
      // Advance past what was written.
      while (wrote > 0 && index < buffers.count) {
        const size_t step = std::min(wrote, buffers.items[index].size() - offset);
        wrote -= step;
        offset += step;
        if (offset == buffers.items[index].size()) {
          ++index;
          offset = 0;
        }
      }
      continue;
    }
    if (*n > 0) return Io::kDone;  // the next call repeats this write, as OpenSSL needs
    return Failed(rc, errno, asio::error::broken_pipe, ec);
  }
  return Io::kDone;
}

}  // namespace rs
