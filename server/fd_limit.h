// File descriptors for reducerd: every connection holds one, so
// --max-connections needs the process's descriptor limit (RLIMIT_NOFILE) to
// be at least that plus what the rest of the daemon uses (listeners, the
// control plane, logs). Called once by main before any thread starts.
#pragma once

#include <cstddef>
#include <string>

namespace rs::server {

// Descriptors kept for everything but data-plane connections.
inline constexpr size_t kReservedFileDescriptors = 256;

struct FdBudget {
  size_t max_connections = 0;  // what the limit allows (== wanted when it fits)
  std::string warning;         // non-empty when --max-connections had to be lowered
};

// Raises the soft RLIMIT_NOFILE toward max_connections + the reserve (never
// above the hard limit) and returns how many connections fit.
FdBudget ReserveFileDescriptors(size_t max_connections);

}  // namespace rs::server
