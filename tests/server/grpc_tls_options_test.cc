// reducerd's TLS settings for the gRPC control plane: a certificate and its
// key give TLS, a client CA on top mutual TLS; the files are read at start
// and every mistake (a missing half, a CA alone, a file that cannot be read,
// is empty, is not PEM, holds the wrong thing, a key of another certificate)
// is an error naming the flag or variable and the file.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "server/options.h"
#include "tests/support/test_certificates.h"
#include "tests/support/test_cluster.h"

namespace rs::server {
namespace {

using Vars = std::map<std::string, std::string>;

// Parses reducerd's options with the gRPC control plane listening.
StatusOr<Options> ParseGrpc(std::vector<std::string> args, const Vars& env = {}) {
  args.insert(args.begin(), {"reducerd", "--grpc-listen", "127.0.0.1:0"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return ParseOptions(static_cast<int>(argv.size()), argv.data(), [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

std::string ErrorOf(const StatusOr<Options>& o) { return o.ok() ? "(no error)" : o.status().message(); }

class GrpcTlsOptions : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(certs_.error(), ""); }
  testing::TestCertificates certs_;
};

TEST_F(GrpcTlsOptions, PlaintextUntilACertificateIsGiven) {
  StatusOr<Options> o = ParseGrpc({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->control.grpc_tls.mode(), GrpcTls::Mode::kPlaintext);
}

TEST_F(GrpcTlsOptions, CertificateAndKeyGiveTlsAndAClientCaMutualTls) {
  StatusOr<Options> o = ParseGrpc({"--grpc-tls-cert", certs_.server_cert(), "--grpc-tls-key", certs_.server_key()});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->control.grpc_tls.mode(), GrpcTls::Mode::kTls);
  EXPECT_EQ(o->control.grpc_tls.cert_file, certs_.server_cert());
  EXPECT_EQ(o->control.grpc_tls.cert_chain, testing::ReadFile(certs_.server_cert()));
  EXPECT_EQ(o->control.grpc_tls.private_key, testing::ReadFile(certs_.server_key()));

  o = ParseGrpc({}, {{"REDUCER_GRPC_TLS_CERT", certs_.server_cert()},
                 {"REDUCER_GRPC_TLS_KEY", certs_.server_key()},
                 {"REDUCER_GRPC_TLS_CLIENT_CA", certs_.ca()}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->control.grpc_tls.mode(), GrpcTls::Mode::kMutualTls);
  EXPECT_EQ(o->control.grpc_tls.client_ca_file, certs_.ca());
  EXPECT_EQ(o->control.grpc_tls.client_ca, testing::ReadFile(certs_.ca()));
}

TEST_F(GrpcTlsOptions, AMissingHalfOrACaAloneIsAnErrorNamingTheSettings) {
  EXPECT_EQ(ErrorOf(ParseGrpc({"--grpc-tls-cert", certs_.server_cert()})),
            "--grpc-tls-cert is set but --grpc-tls-key (REDUCER_GRPC_TLS_KEY) is not: TLS needs the certificate "
            "and its private key");
  EXPECT_EQ(ErrorOf(ParseGrpc({}, {{"REDUCER_GRPC_TLS_KEY", certs_.server_key()}})),
            "REDUCER_GRPC_TLS_KEY is set but --grpc-tls-cert (REDUCER_GRPC_TLS_CERT) is not: TLS needs the "
            "certificate and its private key");
  EXPECT_EQ(ErrorOf(ParseGrpc({"--grpc-tls-client-ca", certs_.ca()})),
            "--grpc-tls-client-ca (mutual TLS) needs --grpc-tls-cert and --grpc-tls-key too: reducerd presents its "
            "own certificate before it asks clients for theirs");
}

TEST_F(GrpcTlsOptions, AFileThatDoesNotHoldWhatItShouldIsAnErrorNamingIt) {
  const std::string key = certs_.server_key();
  const std::string empty = certs_.Write("empty.pem", "\n");
  const std::string text = certs_.Write("text.pem", "hello\n");
  const std::string broken =
      certs_.Write("broken.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
  struct Case {
    std::string cert, message;
  };
  for (const Case& c : std::vector<Case>{
           {"/nonexistent/server.pem", "--grpc-tls-cert: cannot read '/nonexistent/server.pem'"},
           {"/tmp", "--grpc-tls-cert: '/tmp' is a folder, not a file"},
           {empty, "--grpc-tls-cert: '" + empty + "' is empty"},
           {text, "--grpc-tls-cert: '" + text + "' is not PEM (no -----BEGIN line)"},
           {broken, "--grpc-tls-cert: certificate 1 in '" + broken + "' cannot be parsed"},
           {key, "--grpc-tls-cert: '" + key + "' holds no certificate"},
       }) {
    const std::string error = ErrorOf(ParseGrpc({"--grpc-tls-cert", c.cert, "--grpc-tls-key", key}));
    EXPECT_EQ(error.rfind(c.message, 0), 0u) << error;
  }
  std::string error =
      ErrorOf(ParseGrpc({"--grpc-tls-cert", certs_.server_cert(), "--grpc-tls-key", certs_.server_cert()}));
  EXPECT_EQ(error, "--grpc-tls-key: '" + certs_.server_cert() +
                       "' holds no private key (PEM: -----BEGIN PRIVATE KEY-----)");
  // Read without asking a terminal for the passphrase.
  error = ErrorOf(
      ParseGrpc({"--grpc-tls-cert", certs_.client_cert(), "--grpc-tls-key", certs_.encrypted_client_key()}));
  EXPECT_EQ(error.rfind("--grpc-tls-key: the private key in '" + certs_.encrypted_client_key() + "' is encrypted", 0),
            0u)
      << error;
  error = ErrorOf(ParseGrpc({"--grpc-tls-cert", certs_.server_cert(), "--grpc-tls-key", certs_.client_key()}));
  EXPECT_EQ(error, "the private key in '" + certs_.client_key() + "' is not the key of the (first) certificate in '" +
                       certs_.server_cert() + "'");
  error = ErrorOf(ParseGrpc(
      {"--grpc-tls-cert", certs_.server_cert(), "--grpc-tls-key", key, "--grpc-tls-client-ca", certs_.client_key()}));
  EXPECT_EQ(error.rfind("--grpc-tls-client-ca: '" + certs_.client_key() + "' holds no certificate", 0), 0u) << error;
}

TEST_F(GrpcTlsOptions, WithoutGrpcListenTheFilesAreIgnoredWithANotice) {
  std::vector<std::string> args = {"reducerd", "--grpc-tls-cert", "/nonexistent/server.pem"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  StatusOr<Options> o =
      ParseOptions(static_cast<int>(argv.size()), argv.data(), [](const char*) -> const char* { return nullptr; });
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->control.grpc_tls.mode(), GrpcTls::Mode::kPlaintext);
  ASSERT_EQ(o->notices.size(), 1u);
  EXPECT_EQ(o->notices[0], "--grpc-tls-cert is ignored: the gRPC control plane is off (no --grpc-listen)");
}

}  // namespace
}  // namespace rs::server
