#include "protocol/error_text.h"

#include <cstdio>

namespace rs::protocol {

std::string PrintableErrorText(std::string_view text, size_t max_bytes) {
  const std::string_view kept = text.substr(0, max_bytes);
  std::string out;
  out.reserve(kept.size());
  for (const char c : kept) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  if (kept.size() < text.size()) out += "...";
  return out;
}

}  // namespace rs::protocol
