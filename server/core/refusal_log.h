// Rate-limited logging of refused connections. A port scanner, a
// misconfigured job or a flood can refuse thousands of connections a second;
// the log must still say what happened without a line per connection. The
// first refusal after a quiet interval is logged in full at once; later ones
// within the interval are counted by kind and summarised in one line (with
// the last one as an example) when the interval is over: at most one line
// per interval, whatever the rate.
//
// No I/O: callers log the lines it returns, and pass the time in.
// Thread-safe: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace rs::server {

class RefusalLog {
 public:
  explicit RefusalLog(std::chrono::milliseconds interval = std::chrono::seconds(10)) : interval_(interval) {}

  // One refused connection of `kind` ("protocol", "timeout", ...) described
  // by `line`. Returns what to log now, if anything.
  std::optional<std::string> Record(std::string_view kind, std::string line, Clock::time_point now);
  // Call periodically: the summary of what was held back, once the interval
  // since the last line is over.
  std::optional<std::string> Flush(Clock::time_point now);

 private:
  std::optional<std::string> SummaryLocked(Clock::time_point now);

  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  Clock::time_point next_line_{};                // guarded by mu_: earliest time of the next line
  Clock::time_point held_since_{};               // guarded by mu_
  std::map<std::string, uint64_t, std::less<>> held_;  // guarded by mu_: kind -> refusals not logged
  uint64_t held_total_ = 0;                      // guarded by mu_
  std::string last_;                             // guarded by mu_: the last one held
};

}  // namespace rs::server
