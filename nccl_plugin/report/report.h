// What the plugin tells the user without NCCL_DEBUG. NCCL prints nothing,
// not even WARN, while NCCL_DEBUG is unset, so a plugin that must be heard
// writes to stderr itself: one line for what it does (the reducers it uses,
// for which all-reduce sizes, the wire type) and one per case in which the
// reducers will not carry the traffic they were configured for, naming the
// cause and the fix (report/collnet_watch.h lists the cases).
//
// Every line also goes to NCCL's logger (log.h) at the same level, so
// NCCL_DEBUG output stays as it was. REDUCER_LOG chooses what reaches stderr:
// `info` (default: the line of what it does and every warning), `warn`
// (warnings only) or `off`.
//
// Once per process, not per node: a process cannot tell which others share
// its node without a file or a rendezvous of its own, and NCCL's host hash
// (what makes a node) is not given to plugins. The line of what the plugin
// does comes only from the processes that connect CollNet, which NCCL makes
// one per node (the node's head), so in practice it is once per node; a
// warning about a setting every process reads (NCCL_COLLNET_ENABLE) comes
// from every process, as each would act on it.
//
// The stderr line is "reduction_server[<host>:<pid>]: <message>", or
// "... WARNING: <message>", written with one write(2), so lines of
// concurrent ranks and threads do not interleave.
//
// Thread-safety: every function may be called from any thread; the level is
// an atomic set once at the plugin's creation.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace rs::plugin {

enum class ReportLevel : int { kOff, kWarn, kInfo };

// REDUCER_LOG's value: "info", "warn" or "off" (any case; "" is the default).
StatusOr<ReportLevel> ParseReportLevel(std::string_view text);
void SetReportLevel(ReportLevel level);

// Where stderr lines go: fd 2 by default; tests pass a pipe.
void SetReportFd(int fd);

// The line of what the plugin does, at INFO.
void ReportInfo(const std::string& message);
// A case in which the reducers are not used as configured, at WARN.
void ReportWarn(const std::string& message);

}  // namespace rs::plugin
