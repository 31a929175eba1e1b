// Plugin logging. The plugin writes nothing itself: every line goes to the
// sink the ABI layer installs at init (NCCL's logger), prefixed
// "NET/Reducer : ". Until a sink is installed, and after the library is torn
// down, messages are dropped. Nothing per operation is logged above kTrace.
//
// Thread-safety: all functions may be called from any thread; the sink is an
// atomic pointer and must itself be thread-safe (NCCL's logger is).
#pragma once

namespace rs::plugin {

enum class LogLevel : int { kWarn = 2, kInfo = 3, kTrace = 5 };  // NCCL's numbering

// Receives one finished line (without the prefix added by the sink).
using LogSink = void (*)(LogLevel level, const char* func, int line, const char* message);

void SetLogSink(LogSink sink);
LogSink GetLogSink();

// printf-style; formats only when a sink is installed.
void LogAt(LogLevel level, const char* func, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace rs::plugin

#define RS_PLOG_WARN(...) ::rs::plugin::LogAt(::rs::plugin::LogLevel::kWarn, __func__, __LINE__, __VA_ARGS__)
#define RS_PLOG_INFO(...) ::rs::plugin::LogAt(::rs::plugin::LogLevel::kInfo, __func__, __LINE__, __VA_ARGS__)
