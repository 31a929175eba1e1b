// TLS on reducerd's gRPC control plane, with reducerd and reducerctl run as an
// operator runs them and certificates made for the test (TestCertificates):
// with mutual TLS only a client certificate of the configured CA is served,
// a refused client cannot drain, every mismatch of the two sides is explained
// in reducerctl's message, and bad TLS settings stop reducerd at start naming
// the flag or file.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "tests/support/built_programs.h"
#include "tests/support/control_helpers.h"
#include "tests/support/test_certificates.h"

namespace rs::testing {
namespace {

bool TextContains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class ControlTlsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(certs_.error(), "") << "cannot make the test's certificates"; }

  std::vector<std::string> ServerTls() const {
    return {"--grpc-tls-cert", certs_.server_cert(), "--grpc-tls-key", certs_.server_key()};
  }
  std::vector<std::string> MutualTls() const {
    std::vector<std::string> args = ServerTls();
    args.insert(args.end(), {"--grpc-tls-client-ca", certs_.ca()});
    return args;
  }
  std::vector<std::string> ClientCert() const {
    return {"--tls-ca", certs_.ca(), "--tls-cert", certs_.client_cert(), "--tls-key", certs_.client_key()};
  }

  // reducerctl TLS_ARGS... --target (the reducer) ARGS...
  static CommandResult Ctl(const ControlledReducer& reducer, const std::vector<std::string>& tls,
                           const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kCtl, "--target", reducer.grpc_target(), "--timeout", "10s"};
    argv.insert(argv.end(), tls.begin(), tls.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  }

  TestCertificates certs_;
};

TEST_F(ControlTlsTest, MutualTlsServesReducerctlWithACertificateOfItsCa) {
  ControlledReducer reducer(MutualTls());
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  EXPECT_TRUE(TextContains(reducer.process().Log(), "gRPC control plane: mutual TLS")) << reducer.process().Log();

  CommandResult r = Ctl(reducer, ClientCert(), {"status", "--json"});
  ASSERT_EQ(r.code, 0) << r.output;
  rs::control::v1::ServerStatus status;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.output, &status).ok()) << r.output;
  EXPECT_EQ(status.state(), rs::control::v1::ServerStatus::SERVING);

  // Everything from reducerctl's variables, checking the certificate's DNS
  // name (an IP target: a name would go through c-ares, which leaks a few
  // bytes that LeakSanitizer reports).
  r = RunCommand({"/usr/bin/env", "REDUCERCTL_TARGET=" + reducer.grpc_target(), "REDUCERCTL_TLS_CA=" + certs_.ca(),
                  "REDUCERCTL_TLS_CERT=" + certs_.client_cert(), "REDUCERCTL_TLS_KEY=" + certs_.client_key(),
                  "REDUCERCTL_TLS_SERVER_NAME=localhost", kCtl, "health"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output, "SERVING\n");
}

// The refused clients below try to drain: the reducer must still be serving.
TEST_F(ControlTlsTest, MutualTlsRefusesAClientWithoutACertificate) {
  ControlledReducer reducer(MutualTls());
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  const CommandResult r = Ctl(reducer, {"--tls-ca", certs_.ca()}, {"drain"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(TextContains(r.output, "ended the TLS handshake: it may require a client certificate")) << r.output;
  EXPECT_TRUE(TextContains(r.output, "--tls-cert and --tls-key")) << r.output;
  EXPECT_EQ(Ctl(reducer, ClientCert(), {"health"}).output, "SERVING\n");
}

TEST_F(ControlTlsTest, MutualTlsRefusesAClientCertificateOfAnotherCa) {
  ControlledReducer reducer(MutualTls());
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  const CommandResult r = Ctl(
      reducer, {"--tls-ca", certs_.ca(), "--tls-cert", certs_.stranger_cert(), "--tls-key", certs_.stranger_key()},
      {"drain"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(TextContains(r.output, "it may not accept the certificate in '" + certs_.stranger_cert() + "'"))
      << r.output;
  EXPECT_EQ(Ctl(reducer, ClientCert(), {"health"}).output, "SERVING\n");
}

TEST_F(ControlTlsTest, PlaintextReducerctlIsToldTheReducerMayRequireTls) {
  ControlledReducer reducer(MutualTls());
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  const CommandResult r = Ctl(reducer, {}, {"drain"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(TextContains(r.output, "closed the connection: it may require TLS (--grpc-tls-cert); give --tls-ca"))
      << r.output;
  EXPECT_EQ(Ctl(reducer, ClientCert(), {"health"}).output, "SERVING\n");
}

TEST_F(ControlTlsTest, TlsReducerctlAgainstAPlaintextReducerIsToldSo) {
  ControlledReducer reducer;
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  EXPECT_TRUE(TextContains(reducer.process().Log(), "gRPC control plane: plaintext")) << reducer.process().Log();
  const CommandResult r = Ctl(reducer, ClientCert(), {"health"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(TextContains(r.output, "does not answer in TLS: reducerd may be running without --grpc-tls-cert"))
      << r.output;
}

TEST_F(ControlTlsTest, ReducerctlRefusesAReducerItCannotVerify) {
  ControlledReducer reducer(MutualTls());
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  CommandResult r = Ctl(
      reducer, {"--tls-ca", certs_.other_ca(), "--tls-cert", certs_.client_cert(), "--tls-key", certs_.client_key()},
      {"health"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(TextContains(r.output, "is not signed by a CA in '" + certs_.other_ca() + "'")) << r.output;
  std::vector<std::string> tls = ClientCert();
  tls.insert(tls.end(), {"--tls-server-name", "reducer.example"});
  r = Ctl(reducer, tls, {"health"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(TextContains(r.output, "does not name 'reducer.example' (--tls-server-name)")) << r.output;
  tls.back() = "localhost";  // a name the certificate has, for an IP target
  r = Ctl(reducer, tls, {"health"});
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST_F(ControlTlsTest, ServerOnlyTlsServesAnyTlsClientWithAWarning) {
  ControlledReducer reducer(ServerTls());
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  EXPECT_TRUE(TextContains(reducer.process().Log(), "warning reducerd: gRPC control plane: TLS (certificate " +
                                                    certs_.server_cert() + ") without client certificates"))
      << reducer.process().Log();
  const CommandResult r = Ctl(reducer, {"--tls-ca", certs_.ca()}, {"health"});
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST_F(ControlTlsTest, BadTlsSettingsStopReducerdNamingTheFlagOrFile) {
  const std::string not_pem = certs_.Write("notes.txt", "not a certificate\n");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--grpc-tls-cert", certs_.server_cert()}, "--grpc-tls-cert is set but --grpc-tls-key"},
      {{"--grpc-tls-client-ca", certs_.ca()}, "--grpc-tls-client-ca (mutual TLS) needs --grpc-tls-cert"},
      {{"--grpc-tls-cert", not_pem, "--grpc-tls-key", certs_.server_key()},
       "--grpc-tls-cert: '" + not_pem + "' is not PEM"},
      {{"--grpc-tls-cert", certs_.server_cert(), "--grpc-tls-key", certs_.client_key()},
       "the private key in '" + certs_.client_key() + "' is not the key"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {kReducerd, "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_TRUE(TextContains(r.output, "reducerd: " + c.message)) << r.output;
  }
}

TEST_F(ControlTlsTest, ReducerctlTlsFlagsThatDoNotFitAreUsageErrors) {
  const std::string empty = certs_.Write("empty.pem", "");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--tls-cert", certs_.client_cert()}, "--tls-cert needs --tls-key"},
      {{"--tls-server-name", "localhost"}, "--tls-server-name needs TLS"},
      {{"--tls-ca", empty}, "--tls-ca: '" + empty + "' is empty"},
      {{"--tls-ca", certs_.ca(), "--tls-cert", certs_.client_cert(), "--tls-key", certs_.server_key()},
       "the private key in '" + certs_.server_key() + "' is not the key"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {kCtl, "--target", "127.0.0.1:1", "status"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_TRUE(TextContains(r.output, "reducerctl: " + c.message)) << r.output;
  }
}

}  // namespace
}  // namespace rs::testing
