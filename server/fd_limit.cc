#include "server/fd_limit.h"

#include <sys/resource.h>

#include <algorithm>

namespace rs::server {

FdBudget ReserveFileDescriptors(size_t max_connections) {
  FdBudget out{max_connections, {}};
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return out;
  const rlim_t want = static_cast<rlim_t>(max_connections + kReservedFileDescriptors);
  if (lim.rlim_cur < want) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max == RLIM_INFINITY ? want : std::min(want, lim.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= want) return out;
  const size_t fit = lim.rlim_cur > 2 * kReservedFileDescriptors ? lim.rlim_cur - kReservedFileDescriptors
                                                                 : lim.rlim_cur / 2;
  out.max_connections = std::max<size_t>(fit, 1);
  out.warning = "--max-connections " + std::to_string(max_connections) + " needs " + std::to_string(want) +
                " file descriptors but the limit is " + std::to_string(lim.rlim_cur) +
                " (ulimit -n); accepting at most " + std::to_string(out.max_connections) + " connections";
  return out;
}

}  // namespace rs::server
