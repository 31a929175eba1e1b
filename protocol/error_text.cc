#include "protocol/error_text.h"

#include <cstdint>
#include <cstdio>

namespace rs::protocol {
namespace {

// The length of the UTF-8 character that starts `text`, or 0 when it does
// not start with a valid one (a stray continuation byte, an overlong form, a
// surrogate, beyond U+10FFFF, or cut short).
size_t Utf8CharLength(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  size_t n = 0;
  uint32_t cp = 0;
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) {
    n = 2, cp = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    n = 3, cp = lead & 0x0f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    n = 4, cp = lead & 0x07;
  } else {
    return 0;
  }
  if (text.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (byte(i) & 0x3f);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  // C1 controls (U+0080 - U+009F): some terminals take U+009B for ESC [.
  return cp < 0xa0 ? 0 : n;
}

void AppendEscaped(unsigned char u, std::string* out) {
  char buf[5];
  std::snprintf(buf, sizeof(buf), "\\x%02x", u);
  *out += buf;
}

}  // namespace

std::string PrintableErrorText(std::string_view text, size_t max_bytes) {
  const std::string_view kept = text.substr(0, max_bytes);
  std::string out;
  out.reserve(kept.size());
  for (size_t i = 0; i < kept.size();) {
    const auto u = static_cast<unsigned char>(kept[i]);
    if (kept[i] == '\\') {
      out += "\\\\";
      ++i;
    } else if (u < 0x20 || u == 0x7f) {
      AppendEscaped(u, &out);
      ++i;
    } else if (const size_t n = Utf8CharLength(kept.substr(i)); n > 0) {
      out.append(kept, i, n);
      i += n;
    } else {
      // Not UTF-8: the text also goes where only UTF-8 may (the control
      // plane's protobuf strings, JSON logs, other ranks' exceptions).
      AppendEscaped(u, &out);
      ++i;
    }
  }
  if (kept.size() < text.size()) out += "...";
  return out;
}

}  // namespace rs::protocol
