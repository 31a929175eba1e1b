#include "server/core/refusal_log.h"

#include <cstdio>

namespace rs::server {

std::optional<std::string> RefusalLog::Record(std::string_view kind, std::string line, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (now >= next_line_ && held_total_ == 0) {
    next_line_ = now + interval_;
    return line;
  }
  if (held_total_ == 0) held_since_ = now;
  auto it = held_.find(kind);
  if (it == held_.end()) it = held_.emplace(std::string(kind), 0).first;
  ++it->second;
  ++held_total_;
  last_ = std::move(line);
  return SummaryLocked(now);
}

std::optional<std::string> RefusalLog::Flush(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  return SummaryLocked(now);
}

std::optional<std::string> RefusalLog::SummaryLocked(Clock::time_point now) {
  if (held_total_ == 0 || now < next_line_) return std::nullopt;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f",
                std::chrono::duration<double>(now - held_since_).count());
  std::string out = std::to_string(held_total_) + (held_total_ == 1 ? " more connection" : " more connections") +
                    " refused in the last " + seconds + " s (";
  bool first = true;
  for (const auto& [kind, count] : held_) {
    if (!first) out += ", ";
    first = false;
    out += std::to_string(count) + " " + kind;
  }
  out += "); the last: " + last_;
  held_.clear();
  held_total_ = 0;
  last_.clear();
  next_line_ = now + interval_;
  return out;
}

}  // namespace rs::server
