// A peer's ERROR text, made fit for a log line and for passing on to other
// ranks: the ERROR frame carries up to 64 KiB of whatever bytes the peer
// chose, and a newline in it would forge a line of a text log.
//
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rs::protocol {

// Control bytes (C1 controls included) and bytes that are not UTF-8 written
// as \xNN, a backslash as \\, and the text cut to `max_bytes` of the
// original with "..." after: the result is printable UTF-8.
std::string PrintableErrorText(std::string_view text, size_t max_bytes = 1024);

}  // namespace rs::protocol
