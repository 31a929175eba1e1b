#include "nccl_plugin/config/json_value.h"

#include <cstdlib>

namespace rs::plugin {

// Recursive descent over the input; `depth` bounds recursion.
class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}

  StatusOr<JsonValue> ParseDocument() {
    JsonValue value;
    RS_RETURN_IF_ERROR(ParseValue(&value, 0));
    SkipSpace();
    if (pos_ != s_.size()) return Error("unexpected text after the JSON value");
    return value;
  }

 private:
  Status Error(const std::string& what) const {
    return Status(Code::kInvalidArgument, "JSON: " + what + " at byte " + std::to_string(pos_));
  }

  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Status ParseValue(JsonValue* out, int depth) {
    if (depth > JsonValue::kMaxDepth) return Error("nesting deeper than " + std::to_string(JsonValue::kMaxDepth));
    SkipSpace();
    if (pos_ >= s_.size()) return Error("unexpected end of input");
    char c = s_[pos_];
    if (c == '{') return ParseObject(out, depth);
    if (c == '[') return ParseArray(out, depth);
    if (c == '"') {
      out->kind_ = JsonValue::Kind::kString;
      return ParseString(&out->text_);
    }
    if (Consume("true")) {
      out->kind_ = JsonValue::Kind::kBool;
      out->bool_ = true;
      return Status::Ok();
    }
    if (Consume("false")) {
      out->kind_ = JsonValue::Kind::kBool;
      return Status::Ok();
    }
    if (Consume("null")) return Status::Ok();
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber(out);
    return Error(std::string("unexpected character '") + c + "'");
  }

  Status ParseObject(JsonValue* out, int depth) {
    out->kind_ = JsonValue::Kind::kObject;
    ++pos_;  // '{'
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return Status::Ok();
    }
    while (true) {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return Error("expected a member name");
      std::string key;
      RS_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Error("expected ':'");
      ++pos_;
      JsonValue value;
      RS_RETURN_IF_ERROR(ParseValue(&value, depth + 1));
      out->keys_.push_back(std::move(key));
      out->items_.push_back(std::move(value));
      SkipSpace();
      if (pos_ >= s_.size()) return Error("unterminated object");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == '}') {
        ++pos_;
        return Status::Ok();
      }
      return Error("expected ',' or '}'");
    }
  }

  Status ParseArray(JsonValue* out, int depth) {
    out->kind_ = JsonValue::Kind::kArray;
    ++pos_;  // '['
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return Status::Ok();
    }
    while (true) {
      JsonValue value;
      RS_RETURN_IF_ERROR(ParseValue(&value, depth + 1));
      out->items_.push_back(std::move(value));
      SkipSpace();
      if (pos_ >= s_.size()) return Error("unterminated array");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == ']') {
        ++pos_;
        return Status::Ok();
      }
      return Error("expected ',' or ']'");
    }
  }

  static int HexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  Status ParseHex4(uint32_t* out) {
    if (pos_ + 4 > s_.size()) return Error("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      int d = HexDigit(s_[pos_ + i]);
      if (d < 0) return Error("bad hex digit in \\u escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    pos_ += 4;
    *out = v;
    return Status::Ok();
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  Status ParseEscape(std::string* out) {
    if (pos_ >= s_.size()) return Error("unterminated escape");
    char c = s_[pos_++];
    switch (c) {
      case '"': out->push_back('"'); return Status::Ok();
      case '\\': out->push_back('\\'); return Status::Ok();
      case '/': out->push_back('/'); return Status::Ok();
      case 'b': out->push_back('\b'); return Status::Ok();
      case 'f': out->push_back('\f'); return Status::Ok();
      case 'n': out->push_back('\n'); return Status::Ok();
      case 'r': out->push_back('\r'); return Status::Ok();
      case 't': out->push_back('\t'); return Status::Ok();
      case 'u': break;
      default: return Error(std::string("unknown escape '\\") + c + "'");
    }
    uint32_t cp = 0;
    RS_RETURN_IF_ERROR(ParseHex4(&cp));
    if (cp >= 0xDC00 && cp <= 0xDFFF) return Error("unpaired low surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (!Consume("\\u")) return Error("unpaired high surrogate");
      uint32_t low = 0;
      RS_RETURN_IF_ERROR(ParseHex4(&low));
      if (low < 0xDC00 || low > 0xDFFF) return Error("bad low surrogate");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    AppendUtf8(cp, out);
    return Status::Ok();
  }

  Status ParseString(std::string* out) {
    ++pos_;  // opening quote
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return Status::Ok();
      if (c == '\\') {
        RS_RETURN_IF_ERROR(ParseEscape(out));
      } else if (static_cast<unsigned char>(c) < 0x20) {
        return Error("control character in string");
      } else {
        out->push_back(c);
      }
    }
    return Error("unterminated string");
  }

  Status ParseNumber(JsonValue* out) {
    size_t start = pos_;
    auto digits = [&] {
      size_t n = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_, ++n;
      return n;
    };
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (digits() == 0) {
      return Error("bad number");
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) return Error("bad fraction");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (digits() == 0) return Error("bad exponent");
    }
    out->kind_ = JsonValue::Kind::kNumber;
    out->text_ = std::string(s_.substr(start, pos_ - start));
    out->number_ = std::strtod(out->text_.c_str(), nullptr);
    return Status::Ok();
  }

  std::string_view s_;
  size_t pos_ = 0;
};

StatusOr<JsonValue> JsonValue::Parse(std::string_view text) {
  if (text.size() > kMaxInputBytes) {
    return Status(Code::kInvalidArgument,
                  "JSON: input of " + std::to_string(text.size()) + " bytes exceeds the limit");
  }
  return JsonParser(text).ParseDocument();
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (size_t i = keys_.size(); i-- > 0;) {
    if (keys_[i] == key) return &items_[i];
  }
  return nullptr;
}

}  // namespace rs::plugin
