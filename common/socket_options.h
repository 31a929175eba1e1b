// Kernel-side liveness for a connected TCP socket, to back up the
// application's heartbeats with what the kernel can see: TCP_USER_TIMEOUT
// (data left unacknowledged for the timeout aborts the connection, so a dead
// host or cut link fails pending writes) and keepalive probes tuned to end
// within about the same time on an idle connection. Linux only; elsewhere
// (and for a timeout of 0) it only turns keepalive on. Thread-safe.
#pragma once

#include <chrono>

#include "common/status.h"

namespace rs {

// `fd` is a connected TCP socket. Errors name the option that failed; callers
// may go on without it (the heartbeats still work).
Status SetTcpLiveness(int fd, std::chrono::milliseconds timeout);

}  // namespace rs
