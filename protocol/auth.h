// Job authentication: both sides prove knowledge of the shared job token by
// HMAC-SHA256 over a transcript that includes fresh nonces from both sides,
// so the token never crosses the wire and a recorded exchange cannot be
// replayed. Also derives session ids from names. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "protocol/wire.h"

namespace rs::protocol {

// Cryptographically random nonce (OpenSSL RAND_bytes).
protocol::Nonce RandomNonce();

// What the worker sends in AUTH: binds the token to this session, rank,
// stream and both nonces.
protocol::Mac ClientProof(std::string_view token, const protocol::Hello& hello, const protocol::Nonce& server_nonce);
// What the reducer sends in WELCOME so the worker knows it is talking to a
// reducer of its own job.
protocol::Mac ServerProof(std::string_view token, const protocol::Hello& hello, const protocol::Nonce& server_nonce);

// Constant-time comparison.
bool MacEqual(const protocol::Mac& a, const protocol::Mac& b);

// A session id derived from a name every rank knows (a job id, say):
// the first 16 bytes of SHA-256(name).
protocol::SessionId SessionIdFromName(std::string_view name);

// Reads a job token from a file, trimming one trailing newline. Errors name
// the file; an empty token is an error.
StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace rs::protocol
