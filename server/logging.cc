#include "server/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <cstdio>

namespace rs::server {
namespace {

void AppendEscaped(std::string_view text, std::string& out) {
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
}

// %* in the pattern: the message, escaped for a JSON string. Messages quote
// peers' error texts, so they may hold anything.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string escaped;
    AppendEscaped(std::string_view(msg.payload.data(), msg.payload.size()), escaped);
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessageFlag>(); }
};

// %! in the pattern: the level as Cloud Logging's `severity` names it
// (its LogSeverity enum). Cloud Logging classifies a JSON line only by
// `severity`; `level` stays for the collectors that already read it.
class CloudSeverityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const auto& level = spdlog::level::to_string_view(msg.level);
    const std::string_view name = CloudLoggingSeverity(std::string_view(level.data(), level.size()));
    dest.append(name.data(), name.data() + name.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<CloudSeverityFlag>(); }
};

}  // namespace

std::string_view CloudLoggingSeverity(std::string_view level) {
  if (level == "trace" || level == "debug") return "DEBUG";
  if (level == "info") return "INFO";
  if (level == "warning" || level == "warn") return "WARNING";
  if (level == "error" || level == "err") return "ERROR";
  if (level == "critical") return "CRITICAL";
  return "DEFAULT";
}

std::string JsonEscape(const std::string& text) {
  std::string out;
  AppendEscaped(text, out);
  return out;
}

void ConfigureLogging(const std::string& level, const std::string& format) {
  spdlog::set_level(spdlog::level::from_str(level));
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<JsonMessageFlag>('*');
    formatter->add_flag<CloudSeverityFlag>('!').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","severity":"%!","level":"%l","logger":"reducerd","message":"%*"})");
    spdlog::set_formatter(std::move(formatter));
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ reducerd: %v");
  }
}

}  // namespace rs::server
