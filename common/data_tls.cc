#include "common/data_tls.h"

#include <errno.h>
#include <pthread.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/ssl.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rs {
namespace {

// The PSK identity both ends name: it versions the key derivation, so a
// later change of it is refused by name instead of failing as a wrong key.
constexpr std::string_view kIdentity = "reduction-server/data-tls/1";
constexpr std::string_view kKeyInfo = "reduction-server data plane TLS 1.3 PSK v1";

// Both suites hash with SHA-256, the hash the PSK session is made for; AES-GCM
// first (AES-NI), ChaCha20 for hosts without it. Both have kernel TLS offload.
constexpr const char* kCipherSuites = "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256";
constexpr unsigned char kAes128GcmSha256[] = {0x13, 0x01};

Status DeriveKey(std::string_view token, std::array<uint8_t, 32>* key) {
  EVP_PKEY_CTX* pctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  size_t len = key->size();
  const bool ok =
      pctx != nullptr && EVP_PKEY_derive_init(pctx) == 1 && EVP_PKEY_CTX_set_hkdf_md(pctx, EVP_sha256()) == 1 &&
      EVP_PKEY_CTX_set1_hkdf_key(pctx, reinterpret_cast<const unsigned char*>(token.data()),
                                 static_cast<int>(token.size())) == 1 &&
      EVP_PKEY_CTX_add1_hkdf_info(pctx, reinterpret_cast<const unsigned char*>(kKeyInfo.data()),
                                  static_cast<int>(kKeyInfo.size())) == 1 &&
      EVP_PKEY_derive(pctx, key->data(), &len) == 1 && len == key->size();
  EVP_PKEY_CTX_free(pctx);
  if (!ok) return Status(Code::kInternal, "TLS: cannot derive the key from the job token (OpenSSL's HKDF failed)");
  return Status::Ok();
}

}  // namespace

struct DataTls::Callbacks {
  static const DataTls& Of(SSL* ssl) {
    return *static_cast<const DataTls*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  }

  // A TLS 1.3 session that carries only the derived key.
  static SSL_SESSION* PskSession(SSL* ssl) {
    const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kAes128GcmSha256);
    if (cipher == nullptr) return nullptr;
    SSL_SESSION* session = SSL_SESSION_new();
    const std::array<uint8_t, 32>& key = Of(ssl).key_;
    if (session == nullptr || SSL_SESSION_set1_master_key(session, key.data(), key.size()) != 1 ||
        SSL_SESSION_set_cipher(session, cipher) != 1 ||
        SSL_SESSION_set_protocol_version(session, TLS1_3_VERSION) != 1) {
      SSL_SESSION_free(session);
      return nullptr;
    }
    return session;
  }

  // The worker offers the key under kIdentity.
  static int Use(SSL* ssl, const EVP_MD* md, const unsigned char** id, size_t* id_len, SSL_SESSION** session) {
    *session = nullptr;
    SSL_SESSION* psk = PskSession(ssl);
    if (psk == nullptr) return 0;
    // After a HelloRetryRequest the hash is fixed: offer the key only for it.
    if (md != nullptr && md != SSL_CIPHER_get_handshake_digest(SSL_SESSION_get0_cipher(psk))) {
      SSL_SESSION_free(psk);
      return 1;
    }
    *id = reinterpret_cast<const unsigned char*>(kIdentity.data());
    *id_len = kIdentity.size();
    *session = psk;
    return 1;
  }

  // The reducer knows one identity; another gets no key, and the handshake
  // fails (a reducer has no certificate to fall back to).
  static int Find(SSL* ssl, const unsigned char* id, size_t id_len, SSL_SESSION** session) {
    *session = nullptr;
    if (std::string_view(reinterpret_cast<const char*>(id), id_len) != kIdentity) return 1;
    *session = PskSession(ssl);
    return *session == nullptr ? 0 : 1;
  }
};

StatusOr<std::shared_ptr<const DataTls>> DataTls::Create(Role role, std::string_view token) {
  if (token.empty()) {
    return Status(Code::kInvalidArgument,
                  "TLS on the data plane is keyed by the job token, and none is set (a token file is needed on "
                  "every reducer and worker)");
  }
  SSL_CTX* ctx = SSL_CTX_new(role == Role::kReducer ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) return Status(Code::kInternal, "TLS: OpenSSL cannot make a context");
  std::shared_ptr<DataTls> tls(new DataTls(role, ctx));
  RS_RETURN_IF_ERROR(DeriveKey(token, &tls->key_));
  const bool ok = SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) == 1 &&
                  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) == 1 &&
                  SSL_CTX_set_ciphersuites(ctx, kCipherSuites) == 1 && SSL_CTX_set_num_tickets(ctx, 0) == 1;
  if (!ok) return Status(Code::kInternal, "TLS: OpenSSL refuses TLS 1.3 with " + std::string(kCipherSuites));
  // No tickets and no cache: every connection runs the full PSK + ECDHE
  // handshake (they are few and long-lived). Unexpected EOF is a plain end
  // of stream: the frames say where they end, and a cut one is a lost
  // connection either way. Partial writes: a write returns after each record.
  SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS | SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  // Read several records per system call.
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_default_read_buffer_len(ctx, 64 << 10);
  SSL_CTX_set_app_data(ctx, tls.get());
  if (role == Role::kReducer) {
    SSL_CTX_set_psk_find_session_callback(ctx, &Callbacks::Find);
  } else {
    SSL_CTX_set_psk_use_session_callback(ctx, &Callbacks::Use);
  }
  return std::shared_ptr<const DataTls>(std::move(tls));
}

DataTls::DataTls(Role role, SSL_CTX* ctx) : role_(role), ctx_(ctx) {}

DataTls::~DataTls() {
  SSL_CTX_free(ctx_);
  OPENSSL_cleanse(key_.data(), key_.size());
}

SSL* DataTls::NewSession(int fd) const {
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return nullptr;
  }
  if (role_ == Role::kReducer) {
    SSL_set_accept_state(ssl);
  } else {
    SSL_set_connect_state(ssl);
  }
  return ssl;
}

std::string DataTls::Describe() {
  // The `tls` upper-layer protocol on a socket not yet connected: ENOTCONN
  // where the kernel has it, ENOENT where it does not.
  bool kernel = false;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0) {
    kernel = ::setsockopt(fd, IPPROTO_TCP, TCP_ULP, "tls", 3) == 0 || errno == ENOTCONN;
    ::close(fd);
  }
  return std::string("TLS 1.3, keyed by the job token (PSK with ECDHE), ") +
         (kernel ? "sending encrypted by the kernel (kernel TLS), receiving by OpenSSL"
                 : "encrypted by OpenSSL (no kernel TLS here: `modprobe tls` lets the kernel encrypt what is sent)");
}

std::string DataTls::DescribeFailure(unsigned long openssl_error, Role role) {
  const char* reason = ERR_reason_error_string(openssl_error);
  std::string out = "TLS handshake failed: ";
  out += reason != nullptr ? reason : "error " + std::to_string(openssl_error);
  if (ERR_GET_LIB(openssl_error) != ERR_LIB_SSL) return out;
  switch (ERR_GET_REASON(openssl_error)) {
    case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:  // kNoTlsAlert, from a reducer without --tls
      return out + (role == Role::kWorker ? " (the reducer has no TLS on its data plane: start reducerd with --tls, "
                                            "or set REDUCER_TLS=0 on every worker)"
                                          : "");
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
      return out + " (the peer does not speak TLS)";
    case SSL_R_BINDER_DOES_NOT_VERIFY:  // the reducer's side of a wrong token
      return out + " (the worker's job token differs from this reducer's)";
    case SSL_R_SSLV3_ALERT_ILLEGAL_PARAMETER:  // the worker's side of it, as OpenSSL's reducer sends it
    case SSL_R_TLSV1_ALERT_DECRYPT_ERROR:
    case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
      return out + (role == Role::kWorker ? " (most likely this worker's job token differs from the reducer's)" : "");
    default:
      return out;
  }
}

SigpipeGuard::SigpipeGuard() {
  sigset_t pipe, pending;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  blocked_ = pthread_sigmask(SIG_BLOCK, &pipe, &old_) == 0;
}

SigpipeGuard::~SigpipeGuard() {
  if (!blocked_) return;
  const int saved_errno = errno;  // the caller reads the failed call's next
  sigset_t pipe, pending;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
    const timespec now{};
    while (sigtimedwait(&pipe, nullptr, &now) == -1 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  errno = saved_errno;
}

}  // namespace rs
