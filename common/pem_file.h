// The PEM files of the control plane's TLS (reducerd's --grpc-tls-*,
// reducerctl's --tls-*): read whole and parsed with libcrypto before gRPC sees
// them, so that a wrong file is an error naming it when the program starts,
// not a listener that fails to open or a handshake that fails later with
// gRPC's generic message.
//
// Thread-safety: free functions, safe from any thread.
#pragma once

#include <string>

#include "common/status.h"

namespace rs {

enum class PemContent {
  kCertificates,  // one or more certificates: a chain, or a bundle of CAs
  kPrivateKey,    // one private key, not encrypted
};

// The file's text, once it holds what `content` says. Errors name the file
// and what is wrong: cannot be read, empty, not PEM, no certificate or no
// private key in it, encrypted.
StatusOr<std::string> ReadPemFile(const std::string& path, PemContent content);

// Ok when `key_pem` is the private key of the first certificate in
// `cert_pem` (the texts ReadPemFile returned for the files named); an error
// naming both files otherwise.
Status CheckKeyMatchesCertificate(const std::string& cert_pem, const std::string& cert_file,
                                  const std::string& key_pem, const std::string& key_file);

}  // namespace rs
