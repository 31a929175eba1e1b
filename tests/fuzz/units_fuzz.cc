// Fuzz target: the size, duration and HOST:PORT parsers (common/units.*),
// which read every flag and environment variable of the daemon and the
// tools. Properties: any text is parsed or refused (no crash, no undefined
// arithmetic); accepted values are in range; a formatted size reads back as
// itself when whole, within its rounding otherwise; a HOST:PORT written back
// parses to the same host and port.
#include <cmath>
#include <string>
#include <string_view>

#include "common/units.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto bytes = rs::ParseSize(text); bytes.ok()) {
    FUZZ_CHECK(*bytes <= 9'000'000'000'000'000'000ull);
    // What the logs print reads back as the same size when it is a whole
    // number of its unit ("3 MiB"), within the rounding of "%.1f" otherwise
    // ("2.2 KiB" is refused: not a whole number of bytes).
    const std::string formatted = rs::FormatBytes(*bytes);
    auto back = rs::ParseSize(formatted);
    if (formatted.find('.') == std::string::npos) FUZZ_CHECK(back.ok() && *back == *bytes);
    const double v = static_cast<double>(*bytes);
    if (back.ok()) FUZZ_CHECK(std::fabs(static_cast<double>(*back) - v) <= 0.05 * v + 0.5);
  } else {
    FUZZ_CHECK(bytes.status().code() == rs::Code::kInvalidArgument);
  }

  if (auto ms = rs::ParseDuration(text); ms.ok()) {
    FUZZ_CHECK(ms->count() >= 0 && ms->count() <= 1'000'000'000'000'000ll);
  } else {
    FUZZ_CHECK(ms.status().code() == rs::Code::kInvalidArgument);
  }

  if (auto hp = rs::ParseHostPort(text, "default-host"); hp.ok()) {
    FUZZ_CHECK(!hp->host.empty());
    const bool brackets = hp->host.find(':') != std::string::npos || hp->host.front() == '[';
    const std::string again = (brackets ? "[" + hp->host + "]" : hp->host) + ":" + std::to_string(hp->port);
    auto back = rs::ParseHostPort(again, "default-host");
    FUZZ_CHECK(back.ok());
    FUZZ_CHECK(back->host == hp->host && back->port == hp->port);
  }
  return 0;
}
