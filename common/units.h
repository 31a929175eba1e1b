// Parsing of human-friendly sizes ("64MiB", "1G", "4096") and durations
// ("30s", "500ms", "2m"), and formatting of byte counts, shared by the
// daemon's flags, the benchmark and the tests. Pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace rs {

// Binary and decimal suffixes are both taken as binary (K = KiB = 1024),
// case-insensitive, optional "B": what operators mean for memory.
StatusOr<uint64_t> ParseSize(std::string_view text);
// Units ms, s, m (or min), h, case-insensitive, fractions allowed ("1.5m").
// A number without a unit is refused (except 0): "90000" means seconds to
// some readers and milliseconds to others.
StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text);
// The same to the microsecond, with "us" as well ("200us", "0.3ms"): for
// round trips, not for settings, where a value rounding to 0 could turn
// something off.
StatusOr<std::chrono::microseconds> ParseFineDuration(std::string_view text);
// "4 KiB", "1.5 MiB", "12 B".
std::string FormatBytes(uint64_t bytes);

struct HostPort {
  std::string host;
  uint16_t port = 0;
};
// "host:port", "[v6addr]:port" or ":port" (host defaults to `default_host`).
StatusOr<HostPort> ParseHostPort(std::string_view text, std::string_view default_host = "0.0.0.0");

}  // namespace rs
