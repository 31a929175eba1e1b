// The library's state: one Plugin per load (destroyed when NCCL unloads the
// library) and NCCL's logger, installed as the plugin's log sink.
#include <atomic>
#include <memory>
#include <mutex>

#include "nccl_plugin/abi/abi_support.h"
#include "nccl_plugin/abi/preload.h"
#include "nccl_plugin/report/nccl_version.h"

namespace rs::plugin::abi {
namespace {

std::mutex g_init_mu;
std::unique_ptr<Plugin> g_plugin;           // guarded by g_init_mu; set once
std::atomic<Plugin*> g_plugin_ptr{nullptr};  // lock-free reads after init
std::atomic<Logger> g_logger{nullptr};

void NcclLogSink(LogLevel level, const char* func, int line, const char* message) {
  Logger logger = g_logger.load(std::memory_order_acquire);
  if (logger == nullptr) return;
  // NCCL shows INFO only for the subsystems in NCCL_DEBUG_SUBSYS (INIT by
  // default); our INFO lines are all setup-time, so they carry INIT too.
  unsigned long flags = level == LogLevel::kInfo ? (kLogFlagInit | kLogFlagNet) : kLogFlagNet;
  logger(static_cast<int>(level), flags, func, line, "NET/Reducer : %s", message);
}

}  // namespace

void InitLibrary(Logger logger) {
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (logger != nullptr) g_logger.store(logger, std::memory_order_release);
  SetLogSink(&NcclLogSink);
  if (g_plugin == nullptr) {
    LogPreloadOutcome();  // what LD_PRELOAD set up, before the plugin's own lines
    // NCCL's logger lives in libnccl: the library to ask for its version.
    g_plugin = Plugin::Create(Env::Process(), ListSystemInterfaces(),
                              FindNcclVersion(reinterpret_cast<const void*>(logger)));
    g_plugin_ptr.store(g_plugin.get(), std::memory_order_release);
  }
}

StatusOr<Plugin*> Instance() {
  Plugin* plugin = g_plugin_ptr.load(std::memory_order_acquire);
  if (plugin == nullptr) return Status(Code::kInternal, "called before init()");
  return plugin;
}

}  // namespace rs::plugin::abi
