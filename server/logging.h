// reducerd's log setup: spdlog's default logger, in the daemon's text
// format or as one JSON object per line (for log collectors), at the chosen
// level. Call once from main() before any thread logs.
#pragma once

#include <string>
#include <string_view>

namespace rs::server {

// level: trace, debug, info, warn, error; format: text or json (both
// validated by the options parser).
void ConfigureLogging(const std::string& level, const std::string& format);

// Cloud Logging's severity for one of spdlog's level names (trace and debug:
// DEBUG, info: INFO, warn(ing): WARNING, err(or): ERROR, critical:
// CRITICAL; anything else DEFAULT). The JSON format writes it as `severity`.
std::string_view CloudLoggingSeverity(std::string_view level);

// `text` as the contents of a JSON string (quotes, backslashes and control
// characters escaped). Exposed for tests.
std::string JsonEscape(const std::string& text);

}  // namespace rs::server
