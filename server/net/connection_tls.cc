// A connection's TLS start, with --tls: the worker's first byte tells TLS
// from a worker without it, then the TLS handshake runs before HELLO
// (common/data_stream.h). The rest of the connection: connection.cc.
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "server/net/connection.h"
#include "server/net/reducer_server.h"

namespace rs::server {

void Connection::AwaitTls() {
  framed_.WaitReadable([self = shared_from_this()](const asio::error_code& ec) {
    if (self->state_ != State::kHandshake) return;  // closing: the layer drains on (Reject)
    if (ec) {
      self->CloseNow(Status(Code::kIo, ec.message()));
      return;
    }
    uint8_t first = 0;
    const ssize_t n = ::recv(self->framed_.socket().native_handle(), &first, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      self->AwaitTls();
      return;
    }
    if (n <= 0) {
      self->CloseNow(Status(Code::kIo, n == 0 ? "connection closed by the worker" : std::strerror(errno)));
      return;
    }
    if (first != kTlsHandshakeRecord) {
      const Status why(Code::kAuth,
                       "this reducer has TLS on its data plane (--tls) and the worker connected without it: set "
                       "REDUCER_TLS=1 on every worker");
      self->EndHandshake(HandshakeEnd::kRefused, why);
      self->Reject(why);
      return;
    }
    self->tls_handshake_ = true;
    self->framed_.stream().StartTls(self->server_.data_tls(),
                           [self](const Status& status) { self->OnTlsHandshake(status); });
  });
}

void Connection::OnTlsHandshake(const Status& status) {
  tls_handshake_ = false;
  if (state_ != State::kHandshake) return;
  if (!status.ok()) {
    // OpenSSL has sent its alert; the worker's TLS reports the cause.
    EndHandshake(HandshakeEnd::kRefused, status);
    CloseNow(status);
    return;
  }
  HandshakeStep(Handshake::Start());
}

}  // namespace rs::server
