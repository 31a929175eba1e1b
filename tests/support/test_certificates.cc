#include "tests/support/test_certificates.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "tests/support/control_helpers.h"

namespace rs::testing {
namespace {

constexpr auto kOpensslTimeout = std::chrono::seconds(30);

}  // namespace

TestCertificates::TestCertificates() {
  char tmpl[] = "/tmp/rs-tls-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    error_ = "cannot make a temporary folder";
    return;
  }
  dir_ = tmpl;
  Make("ca", "/CN=reducer control CA", "", "");
  Make("server", "/CN=reducerd", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost");
  Make("client", "/CN=operator", "ca", "");
  Run({RS_OPENSSL, "pkey", "-in", client_key(), "-aes256", "-passout", "pass:test", "-out", encrypted_client_key()});
  Make("other-ca", "/CN=another CA", "", "");
  Make("stranger", "/CN=stranger", "other-ca", "");
}

TestCertificates::~TestCertificates() {
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

// A CA (no signer: self-signed, CA:true from openssl's defaults) or a leaf
// certificate signed by `signer` (CA:false): key in STEM.key, certificate in
// STEM.pem.
void TestCertificates::Make(const std::string& stem, const std::string& subject, const std::string& signer,
                            const std::string& extensions) {
  if (!error_.empty()) return;
  const std::string base = dir_ + "/" + stem;
  std::vector<std::string> argv = {RS_OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                   "ec_paramgen_curve:P-256", "-noenc", "-days", "2", "-subj", subject,
                                   "-keyout", base + ".key", "-out", base + ".pem"};
  if (!signer.empty()) {
    argv.insert(argv.end(), {"-CA", dir_ + "/" + signer + ".pem", "-CAkey", dir_ + "/" + signer + ".key",
                             "-addext", "basicConstraints=CA:FALSE"});
  }
  if (!extensions.empty()) argv.insert(argv.end(), {"-addext", extensions});
  Run(argv);
}

void TestCertificates::Run(const std::vector<std::string>& argv) {
  if (!error_.empty()) return;
  const CommandResult r = RunCommand(argv, kOpensslTimeout);
  if (r.code == 0) return;
  error_ = "openssl (" + std::string(RS_OPENSSL) + ") exited " + std::to_string(r.code) + ":";
  for (const std::string& arg : argv) error_ += " " + arg;
  error_ += "\n" + r.output;
}

std::string TestCertificates::Write(const std::string& name, const std::string& text) const {
  const std::string path = dir_ + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace rs::testing
