#include "nccl_plugin/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace rs::plugin {
namespace {
// Trivially destructible, so it stays valid during static destruction.
std::atomic<LogSink> g_sink{nullptr};
}  // namespace

void SetLogSink(LogSink sink) { g_sink.store(sink, std::memory_order_release); }
LogSink GetLogSink() { return g_sink.load(std::memory_order_acquire); }

void LogAt(LogLevel level, const char* func, int line, const char* fmt, ...) {
  LogSink sink = GetLogSink();
  if (sink == nullptr) return;
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  sink(level, func, line, buf);
}

}  // namespace rs::plugin
