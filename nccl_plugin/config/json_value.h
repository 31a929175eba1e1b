// A minimal JSON reader, just enough for Vertex AI's CLUSTER_SPEC (the
// dependency list has no JSON library). It parses the whole RFC 8259 grammar
// (objects, arrays, strings with escapes including \u surrogate pairs,
// numbers, true/false/null) into an immutable tree, rejects anything else
// with a message that says where, and bounds nesting depth and input size so
// hostile input cannot exhaust the stack or memory.
//
// Thread-safety: JsonValue is an immutable value type; Parse is reentrant.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace rs::plugin {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  static constexpr size_t kMaxInputBytes = 1 << 20;
  static constexpr int kMaxDepth = 64;

  // Errors are kInvalidArgument with the byte offset of the problem.
  static StatusOr<JsonValue> Parse(std::string_view text);

  Kind kind() const { return kind_; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_string() const { return kind_ == Kind::kString; }

  bool as_bool() const { return bool_; }
  double as_number() const { return number_; }
  // For strings: the decoded text. For numbers: the literal as written.
  const std::string& text() const { return text_; }

  // Arrays: the elements. Objects: the values, parallel to keys().
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<std::string>& keys() const { return keys_; }
  // Objects: the value of the last member named `key`, or nullptr.
  const JsonValue* Find(std::string_view key) const;

 private:
  friend class JsonParser;
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string text_;
  std::vector<std::string> keys_;
  std::vector<JsonValue> items_;
};

}  // namespace rs::plugin
