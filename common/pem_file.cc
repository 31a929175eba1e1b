#include "common/pem_file.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>

namespace rs {
namespace {

// A certificate bundle of a few hundred CAs is about 200 KiB; a file much
// larger than that is not what the flag meant (and /dev/zero never ends).
constexpr std::streamsize kMaxPemBytes = 1 << 20;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

Bio MemoryBio(const std::string& text) { return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))); }

// libcrypto's most recent reason, and its error queue emptied.
std::string TakeCryptoError() {
  const unsigned long err = ERR_peek_last_error();
  const char* reason = err == 0 ? nullptr : ERR_reason_error_string(err);
  ERR_clear_error();
  return reason ? reason : "unknown error";
}

// Never asks a terminal for a passphrase (libcrypto's default would).
int NoPassphrase(char*, int, int, void*) { return -1; }

Status Invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

Status CheckCertificates(const std::string& text, const std::string& path) {
  Bio bio = MemoryBio(text);
  int count = 0;
  // PEM_read_bio_X509 skips blocks of other kinds (a key in the same file)
  // and ends with "no start line" after the last certificate.
  while (Cert cert{PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr)}) ++count;
  const unsigned long err = ERR_peek_last_error();
  const bool clean_end = ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE;
  if (!clean_end) {
    return Invalid("certificate " + std::to_string(count + 1) + " in '" + path +
                   "' cannot be parsed: " + TakeCryptoError());
  }
  ERR_clear_error();
  if (count == 0) return Invalid("'" + path + "' holds no certificate (PEM: -----BEGIN CERTIFICATE-----)");
  return Status::Ok();
}

Status CheckPrivateKey(const std::string& text, const std::string& path) {
  Bio bio = MemoryBio(text);
  if (Pkey key{PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr)}) return Status::Ok();
  const std::string why = TakeCryptoError();
  if (text.find("ENCRYPTED") != std::string::npos) {
    return Invalid("the private key in '" + path +
                   "' is encrypted; give it without a passphrase (openssl pkey -in KEY -out PLAIN_KEY), "
                   "readable only by the user that runs the program");
  }
  if (text.find("PRIVATE KEY-----") == std::string::npos) {
    return Invalid("'" + path + "' holds no private key (PEM: -----BEGIN PRIVATE KEY-----)");
  }
  return Invalid("the private key in '" + path + "' cannot be parsed: " + why);
}

}  // namespace

StatusOr<std::string> ReadPemFile(const std::string& path, PemContent content) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Invalid("'" + path + "' is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Invalid("cannot read '" + path + "' (missing, or not readable by this user)");
  std::string text(static_cast<size_t>(kMaxPemBytes) + 1, '\0');
  in.read(text.data(), kMaxPemBytes + 1);
  if (in.bad()) return Invalid("cannot read '" + path + "'");
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > static_cast<size_t>(kMaxPemBytes)) {
    return Invalid("'" + path + "' is larger than 1 MiB: not a PEM certificate or key file");
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return Invalid("'" + path + "' is empty");
  if (text.find("-----BEGIN ") == std::string::npos) {
    return Invalid("'" + path + "' is not PEM (no -----BEGIN line)");
  }
  const Status ok = content == PemContent::kCertificates ? CheckCertificates(text, path) : CheckPrivateKey(text, path);
  if (!ok.ok()) return ok;
  return text;
}

Status CheckKeyMatchesCertificate(const std::string& cert_pem, const std::string& cert_file,
                                  const std::string& key_pem, const std::string& key_file) {
  Bio cert_bio = MemoryBio(cert_pem);
  Bio key_bio = MemoryBio(key_pem);
  Cert cert{PEM_read_bio_X509(cert_bio.get(), nullptr, NoPassphrase, nullptr)};
  Pkey key{PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassphrase, nullptr)};
  if (!cert || !key) {
    TakeCryptoError();
    return Invalid("'" + cert_file + "' or '" + key_file + "' cannot be parsed");
  }
  if (X509_check_private_key(cert.get(), key.get()) == 1) return Status::Ok();
  TakeCryptoError();
  return Invalid("the private key in '" + key_file + "' is not the key of the (first) certificate in '" + cert_file +
                 "'");
}

}  // namespace rs
