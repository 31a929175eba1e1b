#include "common/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace rs {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "12.5MiB" into 12.5 and "mib".
bool SplitNumber(std::string_view text, double* number, std::string* suffix) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  s = s.substr(start);
  if (s.empty()) return false;
  char* end = nullptr;
  *number = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(*number) || *number < 0) return false;
  std::string rest(end);
  size_t i = 0;
  while (i < rest.size() && std::isspace(static_cast<unsigned char>(rest[i]))) ++i;
  *suffix = Lower(rest.substr(i));
  return true;
}

}  // namespace

StatusOr<uint64_t> ParseSize(std::string_view text) {
  double n = 0;
  std::string suffix;
  const Status bad(Code::kInvalidArgument,
                   "'" + std::string(text) + "' is not a size (examples: 4096, 64KiB, 16MiB, 1G)");
  if (!SplitNumber(text, &n, &suffix)) return bad;
  double mult = 1;
  if (suffix.empty() || suffix == "b") {
    mult = 1;
  } else if (suffix == "k" || suffix == "kb" || suffix == "kib") {
    mult = 1024.0;
  } else if (suffix == "m" || suffix == "mb" || suffix == "mib") {
    mult = 1024.0 * 1024;
  } else if (suffix == "g" || suffix == "gb" || suffix == "gib") {
    mult = 1024.0 * 1024 * 1024;
  } else if (suffix == "t" || suffix == "tb" || suffix == "tib") {
    mult = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return bad;
  }
  const double bytes = n * mult;
  if (bytes > 9.0e18 || bytes != std::floor(bytes)) return bad;
  return static_cast<uint64_t>(bytes);
}

namespace {

// A duration's milliseconds, fractions kept; `micros` also takes "us".
StatusOr<double> DurationMillis(std::string_view text, bool micros) {
  double n = 0;
  std::string suffix;
  const std::string examples = micros ? "examples: 200us, 1.5ms, 30s" : "examples: 500ms, 30s, 2m";
  const Status bad(Code::kInvalidArgument, "'" + std::string(text) + "' is not a duration (" + examples + ")");
  if (!SplitNumber(text, &n, &suffix)) return bad;
  // A bare number would be read as seconds by some and milliseconds by
  // others (the plugin's old *_MS variables): only 0 may go without a unit.
  if (suffix.empty() && n != 0) {
    return Status(Code::kInvalidArgument, "'" + std::string(text) + "' has no unit; durations need one (" +
                                              examples + ")");
  }
  double ms = 0;
  if (micros && suffix == "us") {
    ms = n / 1000;
  } else if (suffix == "ms") {
    ms = n;
  } else if (suffix.empty() || suffix == "s") {
    ms = n * 1000;
  } else if (suffix == "m" || suffix == "min") {
    ms = n * 60'000;
  } else if (suffix == "h") {
    ms = n * 3'600'000;
  } else {
    return bad;
  }
  if (ms > 1e15) return bad;
  return ms;
}

}  // namespace

StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  StatusOr<double> ms = DurationMillis(text, /*micros=*/false);
  if (!ms.ok()) return ms.status();
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(*ms)));
}

StatusOr<std::chrono::microseconds> ParseFineDuration(std::string_view text) {
  StatusOr<double> ms = DurationMillis(text, /*micros=*/true);
  if (!ms.ok()) return ms.status();
  return std::chrono::microseconds(static_cast<int64_t>(std::llround(*ms * 1000)));
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0 || v == std::floor(v)) {
    std::snprintf(buf, sizeof(buf), "%.0f %s", v, kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[unit]);
  }
  return buf;
}

StatusOr<HostPort> ParseHostPort(std::string_view text, std::string_view default_host) {
  const Status bad(Code::kInvalidArgument,
                   "'" + std::string(text) + "' is not HOST:PORT (examples: 0.0.0.0:7450, [::1]:0, :7450)");
  HostPort out;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') return bad;
    out.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad;
    out.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
    if (out.host.find(':') != std::string::npos) return bad;  // bare IPv6 needs brackets
  }
  if (out.host.empty()) out.host = std::string(default_host);
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port > 65535 || port_text.empty()) {
    return bad;
  }
  out.port = static_cast<uint16_t>(port);
  return out;
}

}  // namespace rs
