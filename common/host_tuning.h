// Host settings that change how the data plane's connections perform. They
// belong to the host (or the container's network namespace), not to our
// programs, so nothing here changes them: reducerd reports them at start, and
// both ends warn once a connection's path shows that one of them will cost
// time.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace rs {

// Linux's per-namespace switch: 1 (its default) shrinks the congestion window
// of a connection left idle for longer than its retransmission timeout, so
// the first bytes after a pause (a training step's forward pass) go out
// slowly again; 0 keeps the window.
inline constexpr char kSlowStartAfterIdlePath[] = "/proc/sys/net/ipv4/tcp_slow_start_after_idle";

// The setting's value; nullopt where it cannot be read (not Linux, /proc
// not mounted).
std::optional<int> ReadSlowStartAfterIdle(const std::string& path = kSlowStartAfterIdlePath);

// One line per setting worth changing; empty when there is none, or when the
// setting cannot be read. For a start-up log (level info): whether it matters
// depends on the paths, which are not known yet.
std::vector<std::string> HostTuningNotices(const std::string& slow_start_after_idle_path = kSlowStartAfterIdlePath);

// The round trip from which the idle restart costs a step measurable time:
// the windows grow back at one round trip per doubling, so on a LAN (well
// under a millisecond) it is lost in the noise, and at 80 ms it cost
// 0.1 - 0.3 s a step on the harness (docs/performance.md).
inline constexpr std::chrono::milliseconds kIdleRestartRoundTrip{5};

// A warning when the setting is on and a connection to `peer` has a round
// trip of kIdleRestartRoundTrip or more; nullopt otherwise.
std::optional<std::string> IdleRestartWarning(std::optional<int> slow_start_after_idle,
                                              std::chrono::microseconds min_rtt, const std::string& peer);

// IdleRestartWarning for this host, at most once per process (the setting
// is the host's, whichever connection finds the long path first): the
// setting is read at the first call. Callers sample often (the client every
// few milliseconds per stream), so the peer's name is asked for only when
// the warning is written.
std::optional<std::string> IdleRestartWarningOnce(std::chrono::microseconds min_rtt,
                                                  const std::function<std::string()>& peer);

}  // namespace rs
