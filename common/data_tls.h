// TLS 1.3 on the data plane (reducerd --tls, REDUCER_TLS=1 on the workers),
// keyed by the job token: both ends derive the same external pre-shared key
// from it (HKDF-SHA256), so TLS needs nothing a job does not already have (no
// certificates to issue, mount or rotate), and a party without the token
// cannot finish the TLS handshake at all. The key exchange adds ephemeral
// ECDHE (TLS 1.3's psk_dhe_ke), so a token that leaks later does not decrypt
// traffic recorded before. The token's HELLO / CHALLENGE / AUTH handshake
// then runs inside TLS, unchanged.
//
// Kernel TLS: OpenSSL is asked to hand the sending direction to the kernel
// (SSL_OP_ENABLE_KTLS) where the kernel has the `tls` module; OpenSSL 3.0
// (Debian 12) hands over receiving only for TLS 1.2, so received records are
// decrypted by OpenSSL in user space. DataStream::kernel_send() says which.
//
// Threading: a DataTls is immutable once made and shared by every stream of
// a process; each SSL made from it belongs to one stream.
#pragma once

#include <signal.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace rs {

class DataTls {
 public:
  enum class Role { kReducer, kWorker };

  // Fails with kInvalidArgument on an empty token (TLS here is keyed by it),
  // or kInternal when OpenSSL cannot make the context.
  static StatusOr<std::shared_ptr<const DataTls>> Create(Role role, std::string_view token);
  ~DataTls();
  DataTls(const DataTls&) = delete;
  DataTls& operator=(const DataTls&) = delete;

  Role role() const { return role_; }
  // A new TLS session on a connected socket, in the role's state (accept or
  // connect). Null when OpenSSL cannot make one.
  SSL* NewSession(int fd) const;

  // Why a handshake failed, for the logs of the side that saw it: OpenSSL's
  // reason, and what it means here when it has a usual cause (the peer
  // speaks no TLS, or holds another token).
  static std::string DescribeFailure(unsigned long openssl_error, Role role);

  // What encrypts here, for a start-up line: "TLS 1.3 (...), sending
  // encrypted by the kernel" where the kernel has its `tls` module, else
  // by OpenSSL, naming the module.
  static std::string Describe();

 private:
  struct Callbacks;  // OpenSSL's PSK callbacks (data_tls.cc)
  DataTls(Role role, SSL_CTX* ctx);

  const Role role_;
  SSL_CTX* const ctx_;
  std::array<uint8_t, 32> key_{};
};

// The first byte of a TLS handshake record: a reducer with TLS on tells a
// worker without it from one with it by this byte (a frame starts with the
// magic "RSRV").
inline constexpr uint8_t kTlsHandshakeRecord = 0x16;

// A fatal TLS alert record, protocol_version (70), that a reducer without TLS
// sends to a worker that opens with TLS: the worker's OpenSSL then reports
// "tlsv1 alert protocol version", which DescribeFailure names.
inline constexpr std::array<uint8_t, 7> kNoTlsAlert = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 70};

// While it lives, a SIGPIPE this thread raises is held back and then
// dropped. OpenSSL writes to the socket with write(), which raises SIGPIPE
// when the peer has gone; the signal's default action ends the process,
// and in a training process (the client library, the NCCL plugin) a reducer
// that dies mid-write would take the job with it instead of the failover
// taking over. Wrap every OpenSSL call that may write (handshake, read,
// write): the call then fails with EPIPE, which the caller reports.
class SigpipeGuard {
 public:
  SigpipeGuard();
  ~SigpipeGuard();
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t old_{};
  bool blocked_ = false;
  bool was_pending_ = false;  // a SIGPIPE pending before: not ours to drop
};

}  // namespace rs
