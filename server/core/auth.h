// Job authentication: both sides prove knowledge of the shared job token by
// HMAC-SHA256 over a transcript that includes fresh nonces from both sides,
// so the token never crosses the wire and a recorded exchange cannot be
// replayed. Also derives session ids from names. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "server/core/status.h"
#include "server/core/wire.h"

namespace rs::auth {

// Cryptographically random nonce (OpenSSL RAND_bytes).
wire::Nonce RandomNonce();

// What the worker sends in AUTH: binds the token to this session, rank,
// stream and both nonces.
wire::Mac ClientProof(std::string_view token, const wire::Hello& hello, const wire::Nonce& server_nonce);
// What the reducer sends in WELCOME so the worker knows it is talking to a
// reducer of its own job.
wire::Mac ServerProof(std::string_view token, const wire::Hello& hello, const wire::Nonce& server_nonce);

// Constant-time comparison.
bool MacEqual(const wire::Mac& a, const wire::Mac& b);

// A session id derived from a name every rank knows (a job id, say):
// the first 16 bytes of SHA-256(name).
wire::SessionId SessionIdFromName(std::string_view name);

// Reads a job token from a file, trimming one trailing newline. Errors name
// the file; an empty token is an error.
StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace rs::auth
