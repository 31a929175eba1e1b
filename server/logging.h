// reducerd's log setup: spdlog's default logger, in the daemon's text
// format or as one JSON object per line (for log collectors), at the chosen
// level. Call once from main() before any thread logs.
#pragma once

#include <string>

namespace rs::server {

// level: trace, debug, info, warn, error; format: text or json (both
// validated by the options parser).
void ConfigureLogging(const std::string& level, const std::string& format);

// `text` as the contents of a JSON string (quotes, backslashes and control
// characters escaped). Exposed for tests.
std::string JsonEscape(const std::string& text);

}  // namespace rs::server
