// Job authentication: both sides prove knowledge of the shared job token by
// HMAC-SHA256 over a transcript that includes fresh nonces from both sides,
// so the token never crosses the wire and a recorded exchange cannot be
// replayed. Also derives session ids from names. Thread-safe.
//
// Nothing here throws: these run on I/O threads of the reducer and of the
// client library (inside the training process NCCL lives in), so an OpenSSL
// failure comes back as a Status for the caller to fail the connection with.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "protocol/wire.h"

namespace rs::protocol {

// Cryptographically random nonce (OpenSSL RAND_bytes). kInternal when the
// system has no entropy source.
StatusOr<Nonce> RandomNonce();

// What the worker sends in AUTH: binds the token to this session, rank,
// stream, the HELLO's options and both nonces. kInternal when OpenSSL
// cannot compute an HMAC (a broken installation).
StatusOr<Mac> ClientProof(std::string_view token, const Hello& hello, const Nonce& server_nonce);
// What the reducer sends in WELCOME so the worker knows it is talking to a
// reducer of its own job.
StatusOr<Mac> ServerProof(std::string_view token, const Hello& hello, const Nonce& server_nonce);

// Constant-time comparison.
bool MacEqual(const Mac& a, const Mac& b);

// A session id derived from a name every rank knows (a job id, say):
// the first 16 bytes of SHA-256(name).
SessionId SessionIdFromName(std::string_view name);

// Test seam: makes the calls above fail as a broken OpenSSL would, so tests
// can check that every caller turns the failure into an error instead of
// ending the process. Never used outside tests.
enum class CryptoFault { kNone, kRandom, kHmac };
void SetCryptoFaultForTesting(CryptoFault fault);

// Reads a job token from a file, without the blanks (spaces, tabs, CR, LF)
// around it: the one reader of every component (reducerd, the plugin,
// reducer-bench, rs-train), so that one file gives one token everywhere.
// Errors name the file; an empty token is an error.
StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace rs::protocol
