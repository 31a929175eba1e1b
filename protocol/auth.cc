#include "protocol/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "protocol/byte_io.h"

namespace rs::protocol {
namespace {

std::atomic<CryptoFault> g_fault{CryptoFault::kNone};

StatusOr<Mac> Proof(std::string_view role, std::string_view token, const Hello& hello, const Nonce& server_nonce) {
  std::vector<uint8_t> transcript;
  transcript.insert(transcript.end(), role.begin(), role.end());
  transcript.insert(transcript.end(), hello.session.begin(), hello.session.end());
  uint8_t fields[24];
  PutLE<uint32_t>(fields, hello.rank);
  PutLE<uint32_t>(fields + 4, hello.world);
  PutLE<uint16_t>(fields + 8, hello.stream);
  PutLE<uint16_t>(fields + 10, hello.streams);
  PutLE<uint32_t>(fields + 12, hello.flags);
  PutLE<uint32_t>(fields + 16, hello.liveness_ms);
  PutLE<uint32_t>(fields + 20, static_cast<uint32_t>(hello.wire));  // v3: a forged one could skew every sum
  transcript.insert(transcript.end(), fields, fields + sizeof(fields));
  transcript.insert(transcript.end(), hello.client_nonce.begin(), hello.client_nonce.end());
  transcript.insert(transcript.end(), server_nonce.begin(), server_nonce.end());

  Mac mac{};
  unsigned int len = 0;
  if (g_fault.load(std::memory_order_relaxed) == CryptoFault::kHmac ||
      HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()), transcript.data(), transcript.size(),
           mac.data(), &len) == nullptr ||
      len != mac.size()) {
    // OpenSSL failing to compute an HMAC means a broken installation.
    return Status(Code::kInternal, "OpenSSL could not compute HMAC-SHA256 for job authentication "
                                   "(broken libcrypto installation?)");
  }
  return mac;
}

}  // namespace

void SetCryptoFaultForTesting(CryptoFault fault) { g_fault.store(fault, std::memory_order_relaxed); }

StatusOr<Nonce> RandomNonce() {
  Nonce nonce{};
  if (g_fault.load(std::memory_order_relaxed) == CryptoFault::kRandom ||
      RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    return Status(Code::kInternal, "OpenSSL could not produce a random nonce (RAND_bytes failed: no entropy source?)");
  }
  return nonce;
}

StatusOr<Mac> ClientProof(std::string_view token, const Hello& hello, const Nonce& server_nonce) {
  return Proof("rs-auth-v3 worker", token, hello, server_nonce);
}

StatusOr<Mac> ServerProof(std::string_view token, const Hello& hello, const Nonce& server_nonce) {
  return Proof("rs-auth-v3 reducer", token, hello, server_nonce);
}

bool MacEqual(const Mac& a, const Mac& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

SessionId SessionIdFromName(std::string_view name) {
  uint8_t digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(name.data()), name.size(), digest);
  SessionId id{};
  std::memcpy(id.data(), digest, id.size());
  return id;
}

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Code::kInvalidArgument, "cannot read job token file '" + path + "'");
  std::ostringstream buf;
  buf << in.rdbuf();
  std::string token = buf.str();
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!token.empty() && blank(token.back())) token.pop_back();
  size_t start = 0;
  while (start < token.size() && blank(token[start])) ++start;
  token.erase(0, start);
  if (token.empty()) return Status(Code::kInvalidArgument, "job token file '" + path + "' is empty");
  return token;
}

}  // namespace rs::protocol
