#include "nccl_plugin/report/report.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <string>

#include "nccl_plugin/log.h"

namespace rs::plugin {
namespace {

std::atomic<int> g_level{static_cast<int>(ReportLevel::kInfo)};
std::atomic<int> g_fd{STDERR_FILENO};

const std::string& Prefix() {
  static const std::string prefix = [] {
    char host[256] = "";
    if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
    return "reduction_server[" + std::string(host) + ":" + std::to_string(::getpid()) + "]: ";
  }();
  return prefix;
}

void WriteLine(const char* label, const std::string& message) {
  std::string line = Prefix() + label + message + "\n";
  const int fd = g_fd.load(std::memory_order_relaxed);
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n <= 0) return;  // stderr closed or full: nothing else to do
    done += static_cast<size_t>(n);
  }
}

bool Allows(ReportLevel level) { return g_level.load(std::memory_order_relaxed) >= static_cast<int>(level); }

}  // namespace

StatusOr<ReportLevel> ParseReportLevel(std::string_view text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.empty() || lower == "info") return ReportLevel::kInfo;
  if (lower == "warn" || lower == "warning") return ReportLevel::kWarn;
  if (lower == "off" || lower == "none" || lower == "0") return ReportLevel::kOff;
  return Status(Code::kInvalidArgument, "REDUCER_LOG: '" + std::string(text) + "' is not info, warn or off");
}

void SetReportLevel(ReportLevel level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }
void SetReportFd(int fd) { g_fd.store(fd, std::memory_order_relaxed); }

void ReportInfo(const std::string& message) {
  RS_PLOG_INFO("%s", message.c_str());
  if (Allows(ReportLevel::kInfo)) WriteLine("", message);
}

void ReportWarn(const std::string& message) {
  RS_PLOG_WARN("%s", message.c_str());
  if (Allows(ReportLevel::kWarn)) WriteLine("WARNING: ", message);
}

}  // namespace rs::plugin
