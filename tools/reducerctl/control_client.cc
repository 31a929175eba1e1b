#include "tools/reducerctl/control_client.h"

#include <grpcpp/grpcpp.h>

#include "common/pem_file.h"

namespace rs::reducerctl {
namespace {

Status Usage(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

// The channel's credentials from the --tls-* flags, their files read and
// checked first so that a wrong one is named here rather than in a failed
// handshake.
StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(const TlsFiles& files) {
  if (!files.enabled()) {
    if (!files.server_name.empty()) {
      return Usage("--tls-server-name needs TLS: give --tls-ca (or --tls-cert and --tls-key)");
    }
    return grpc::InsecureChannelCredentials();
  }
  if (files.cert_file.empty() != files.key_file.empty()) {
    return Usage(files.cert_file.empty() ? "--tls-key needs --tls-cert: the client certificate it is the key of"
                                         : "--tls-cert needs --tls-key: the certificate's private key");
  }
  grpc::SslCredentialsOptions options;
  if (!files.ca_file.empty()) {
    auto ca = ReadPemFile(files.ca_file, PemContent::kCertificates);
    if (!ca.ok()) return ca.status().Prefixed("--tls-ca");
    options.pem_root_certs = *ca;
  }
  if (!files.cert_file.empty()) {
    auto cert = ReadPemFile(files.cert_file, PemContent::kCertificates);
    if (!cert.ok()) return cert.status().Prefixed("--tls-cert");
    auto key = ReadPemFile(files.key_file, PemContent::kPrivateKey);
    if (!key.ok()) return key.status().Prefixed("--tls-key");
    RS_RETURN_IF_ERROR(CheckKeyMatchesCertificate(*cert, files.cert_file, *key, files.key_file));
    options.pem_cert_chain = *cert;
    options.pem_private_key = *key;
  }
  return grpc::SslCredentials(options);
}

bool Has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// Why a connection failed, from gRPC's message (which follows, as it is):
// the TLS cases that gRPC reports as a closed socket or an OpenSSL reason.
// The texts are those of Debian 12's gRPC 1.51 with OpenSSL 3.0, pinned by
// tests/integration/control_tls_test.cc; a text that changes loses its hint,
// never the message.
std::string ConnectHint(const std::string& target, const std::string& message, const TlsFiles& tls) {
  const bool closed = Has(message, "Socket closed");
  if (!tls.enabled() && closed) {
    return "reducerd at " + target + " closed the connection: it may require TLS (--grpc-tls-cert); give --tls-ca, "
           "and --tls-cert and --tls-key if it also requires client certificates";
  }
  if (tls.enabled() && closed && tls.cert_file.empty()) {
    return "reducerd at " + target + " ended the TLS handshake: it may require a client certificate "
           "(--grpc-tls-client-ca); give --tls-cert and --tls-key";
  }
  if (tls.enabled() && closed) {
    return "reducerd at " + target + " ended the TLS handshake: it may not accept the certificate in '" +
           tls.cert_file + "' (not signed by a CA in its --grpc-tls-client-ca, or expired)";
  }
  if (tls.enabled() && Has(message, "wrong version number")) {
    return target + " does not answer in TLS: reducerd may be running without --grpc-tls-cert (then leave out "
           "the --tls-* flags)";
  }
  if (tls.enabled() && Has(message, "certificate verify failed")) {
    return "reducerd's certificate at " + target + " is not signed by a CA in " +
           (tls.ca_file.empty() ? "gRPC's default roots (give --tls-ca)" : "'" + tls.ca_file + "'") +
           ", or has expired";
  }
  if (tls.enabled() && Has(message, "not in peer certificate")) {
    return "reducerd's certificate at " + target + " does not name " +
           (tls.server_name.empty() ? "that host: use a name it was issued for in --target, or --tls-server-name"
                                    : "'" + tls.server_name + "' (--tls-server-name)");
  }
  return "cannot reach reducerd at " + target + " (is it running with --grpc-listen on that address?)";
}

}  // namespace

StatusOr<std::unique_ptr<ControlClient>> ControlClient::Create(const std::string& target,
                                                               std::chrono::milliseconds timeout,
                                                               const TlsFiles& tls) {
  auto credentials = Credentials(tls);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments args;
  if (!tls.server_name.empty()) args.SetSslTargetNameOverride(tls.server_name);
  auto channel = grpc::CreateCustomChannel(target, *credentials, args);
  std::unique_ptr<ControlClient> client(new ControlClient(target, timeout, tls));
  client->control_ = v1::ReducerControl::NewStub(channel);
  client->health_ = health::Health::NewStub(channel);
  return client;
}

ControlClient::ControlClient(const std::string& target, std::chrono::milliseconds timeout, const TlsFiles& tls)
    : target_(target), timeout_(timeout), tls_(tls) {}

template <typename Response, typename Request, typename Method>
StatusOr<Response> ControlClient::Call(const Request& request, Method method) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout_);
  Response response;
  const grpc::Status st = method(&context, request, &response);
  if (st.ok()) return response;
  switch (st.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status(Code::kIo, ConnectHint(target_, st.error_message(), tls_) + ": " + st.error_message());
    case grpc::StatusCode::UNIMPLEMENTED:
      return Status(Code::kProtocol, target_ + " does not serve this call (is it a reducerd control port?): " +
                                         st.error_message());
    default:
      return Status(Code::kInvalidArgument, st.error_message());
  }
}

StatusOr<v1::ServerStatus> ControlClient::GetStatus() {
  return Call<v1::ServerStatus>(v1::GetStatusRequest(), [this](auto* c, const auto& req, auto* resp) {
    return control_->GetStatus(c, req, resp);
  });
}

StatusOr<v1::ListSessionsResponse> ControlClient::ListSessions() {
  return Call<v1::ListSessionsResponse>(v1::ListSessionsRequest(), [this](auto* c, const auto& req, auto* resp) {
    return control_->ListSessions(c, req, resp);
  });
}

StatusOr<v1::SessionInfo> ControlClient::GetSession(const std::string& id) {
  v1::GetSessionRequest request;
  request.set_id(id);
  return Call<v1::SessionInfo>(request, [this](auto* c, const auto& req, auto* resp) {
    return control_->GetSession(c, req, resp);
  });
}

StatusOr<v1::DrainResponse> ControlClient::Drain() {
  return Call<v1::DrainResponse>(v1::DrainRequest(), [this](auto* c, const auto& req, auto* resp) {
    return control_->Drain(c, req, resp);
  });
}

StatusOr<health::HealthCheckResponse> ControlClient::CheckHealth() {
  return Call<health::HealthCheckResponse>(health::HealthCheckRequest(), [this](auto* c, const auto& req, auto* resp) {
    return health_->Check(c, req, resp);
  });
}

}  // namespace rs::reducerctl
