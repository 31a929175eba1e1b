// Throwaway certificates for the control plane's TLS tests, made at test time
// with the openssl command (the same commands as the user guide's mutual-TLS
// section) in a fresh temporary folder, removed with the object: a CA,
// reducerd's certificate for 127.0.0.1 and localhost signed by it, a client
// certificate signed by it (and its key encrypted), and a client certificate
// signed by another CA.
// EC P-256 keys: made in milliseconds.
//
// Thread-compatible; each test makes its own.
#pragma once

#include <string>
#include <vector>

namespace rs::testing {

class TestCertificates {
 public:
  TestCertificates();
  ~TestCertificates();
  TestCertificates(const TestCertificates&) = delete;
  TestCertificates& operator=(const TestCertificates&) = delete;

  // Empty when every file was made; else what failed, with openssl's output.
  const std::string& error() const { return error_; }

  // Paths of PEM files.
  std::string ca() const { return dir_ + "/ca.pem"; }
  std::string server_cert() const { return dir_ + "/server.pem"; }
  std::string server_key() const { return dir_ + "/server.key"; }
  std::string client_cert() const { return dir_ + "/client.pem"; }
  std::string client_key() const { return dir_ + "/client.key"; }
  std::string encrypted_client_key() const { return dir_ + "/client-encrypted.key"; }  // passphrase "test"
  std::string other_ca() const { return dir_ + "/other-ca.pem"; }
  std::string stranger_cert() const { return dir_ + "/stranger.pem"; }  // signed by other_ca()
  std::string stranger_key() const { return dir_ + "/stranger.key"; }

  // Writes `text` to a new file in the folder; returns its path.
  std::string Write(const std::string& name, const std::string& text) const;

 private:
  void Make(const std::string& stem, const std::string& subject, const std::string& signer,
            const std::string& extensions);
  void Run(const std::vector<std::string>& argv);  // an openssl command; error_ if it fails

  std::string dir_;
  std::string error_;
};

}  // namespace rs::testing
