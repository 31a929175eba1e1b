// A process that looks for the plugin as NCCL 2.28.9's first communicator
// would (nccl_loader.h), started by preload_test.cc with a controlled
// environment (LD_PRELOAD or not). It prints, one fact a line:
//   env NAME=VALUE | env NAME unset    the four variables LD_PRELOAD may set
//   tried NAME                         each name given to dlopen, in order
//   nccl LINE                          NCCL's INFO lines from the search
//   loaded NAME PATH net=V coll=V      or "loaded none"
//   refcount N                         NCCL_NET_PLUGIN_REF_COUNT as NCCL reads it
//   log LEVEL LINE                     the plugin's log lines during net init
//   init RESULT                        net v11 init's result
//   tuner NAME v5=0|1                  or "tuner none"
// Usage: nccl_preload_probe [--dlopen PATH | --thread-then-dlopen PATH]
//   --dlopen: PATH is dlopen'ed first, as by a program that loads the plugin
//   itself; --thread-then-dlopen: LD_PRELOAD=PATH is set in the running
//   process and PATH dlopen'ed while a second thread runs (as from Python
//   after its start).
#include <dlfcn.h>

#include <future>
#include <thread>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "nccl_plugin/abi/nccl_abi.h"
#include "tests/nccl_plugin/nccl_loader.h"

namespace {

using rs::plugin::abi::Result;

void ProbeLogger(int level, unsigned long /*flags*/, const char* /*file*/, int /*line*/, const char* fmt, ...) {
  char buf[2048];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  std::printf("log %d %s\n", level, buf);
}

void PrintEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value != nullptr) {
    std::printf("env %s=%s\n", name, value);
  } else {
    std::printf("env %s unset\n", name);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rs::plugin::test;
  if (argc == 3 && std::strcmp(argv[1], "--thread-then-dlopen") == 0) {
    ::setenv("LD_PRELOAD", argv[2], 1);
    std::promise<void> release;
    std::thread other([done = release.get_future()] { done.wait(); });
    void* dl = ::dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    release.set_value();
    other.join();
    if (dl == nullptr) {
      std::printf("dlopen failed: %s\n", ::dlerror());
      return 2;
    }
  } else if (argc == 3 && std::strcmp(argv[1], "--dlopen") == 0) {
    if (::dlopen(argv[2], RTLD_NOW | RTLD_LOCAL) == nullptr) {
      std::printf("dlopen failed: %s\n", ::dlerror());
      return 2;
    }
  }
  for (const char* name : {"NCCL_NET_PLUGIN", "NCCL_COLLNET_ENABLE", "NCCL_NET_PLUGIN_REF_COUNT", "NCCL_TUNER_PLUGIN"}) {
    PrintEnv(name);
  }

  const NcclNetLoad net = LoadNetPlugin(std::getenv("NCCL_NET_PLUGIN"));
  for (const std::string& name : net.tried) std::printf("tried %s\n", name.c_str());
  for (const std::string& line : net.info) std::printf("nccl %s\n", line.c_str());
  std::printf("refcount %lld\n", static_cast<long long>(NetPluginRefCount(std::getenv("NCCL_NET_PLUGIN_REF_COUNT"))));
  if (net.lib.handle == nullptr) {
    std::printf("loaded none\n");
    return 0;
  }
  std::printf("loaded %s %s net=%d coll=%d\n", net.lib.name.c_str(), net.lib.path.c_str(), net.net_version,
              net.coll_version);

  if (net.net_version == 11) {
    auto* table = static_cast<const rs::plugin::abi::NetV11*>(::dlsym(net.lib.handle, "ncclNetPlugin_v11"));
    void* ctx = nullptr;
    rs::plugin::abi::CommConfigV11 config{-1};
    const Result r = table->init(&ctx, 0x5eed, &config, &ProbeLogger, nullptr);
    std::printf("init %d\n", static_cast<int>(r));
    if (r == Result::kSuccess) table->finalize(ctx);
  }

  const NcclLibOpen tuner = OpenTunerLib(std::getenv("NCCL_TUNER_PLUGIN"), net);
  if (tuner.handle != nullptr) {
    std::printf("tuner %s v5=%d\n", tuner.name.c_str(), ::dlsym(tuner.handle, "ncclTunerPlugin_v5") != nullptr);
    ::dlclose(tuner.handle);
  } else {
    std::printf("tuner none\n");
  }
  ::dlclose(net.lib.handle);
  std::fflush(stdout);
  return 0;
}
