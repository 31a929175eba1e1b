// Host settings that change how reducerd's connections perform, read once at
// start and reported in the log, so that an operator sees them before a job
// does. Nothing is changed: they belong to the host (or the container's
// network namespace), not to the daemon.
#pragma once

#include <string>
#include <vector>

namespace rs::server {

// Linux's per-namespace switch: 1 (its default) shrinks the congestion window
// of a connection left idle for longer than its retransmission timeout, so
// the first bytes after a pause (a training step's forward pass) go out
// slowly again; 0 keeps the window.
inline constexpr char kSlowStartAfterIdlePath[] = "/proc/sys/net/ipv4/tcp_slow_start_after_idle";

// One line per setting worth changing; empty when there is none, or when the
// setting cannot be read (not Linux, /proc not mounted).
std::vector<std::string> HostTuningNotices(const std::string& slow_start_after_idle_path = kSlowStartAfterIdlePath);

}  // namespace rs::server
