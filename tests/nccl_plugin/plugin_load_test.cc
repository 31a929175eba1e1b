// The built libnccl-net-reducer.so as NCCL sees it, in this process: what it
// exports, what init/devices report under various environments, and that it
// can be loaded, used, closed and unloaded many times without leaking
// threads, descriptors or memory (the AddressSanitizer build checks memory).
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/nccl_plugin/plugin_harness.h"

namespace rs::plugin::test {
namespace {

int CountEntries(const char* dir) {
  int n = 0;
  if (DIR* d = ::opendir(dir)) {
    while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.' ? 1 : 0;
    ::closedir(d);
  }
  return n;
}

// A joined thread can linger in /proc for a moment after pthread_join
// returns (the kernel reaps it just after waking the joiner): re-read until
// the count matches or a deadline passes.
int ThreadsSettlingTo(int expected) {
  const Deadline deadline = After(std::chrono::seconds(5));
  int n = CountEntries("/proc/self/task");
  while (n != expected && Clock::now() < deadline) {
    sched_yield();
    n = CountEntries("/proc/self/task");
  }
  return n;
}

// Sets the variables the plugin reads for the lifetime of the object (each
// load of the library reads the environment afresh at its first init).
using Vars = std::map<std::string, std::string>;

class ScopedPluginEnv {
 public:
  explicit ScopedPluginEnv(const Vars& vars) {
    for (const char* name : {"REDUCER_ADDRS", "CLUSTER_SPEC", "REDUCER_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME",
                             "REDUCER_JOB_TOKEN", "REDUCER_JOB_TOKEN_FILE"}) {
      ::unsetenv(name);
    }
    ::setenv("REDUCER_SOCKET_IFNAME", "lo", 1);
    for (const auto& [k, v] : vars) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedPluginEnv() {
    for (const char* name : {"REDUCER_ADDRS", "CLUSTER_SPEC", "REDUCER_SOCKET_IFNAME"}) ::unsetenv(name);
  }
};

std::unique_ptr<LoadedPlugin> Load() {
  std::string error;
  std::unique_ptr<LoadedPlugin> plugin = LoadedPlugin::Open(RS_PLUGIN_SO, &error);
  EXPECT_NE(plugin, nullptr) << error;
  return plugin;
}

TEST(PluginSymbols, ExportsExactlyTheFourTables) {
  FILE* nm = ::popen("nm -D --defined-only '" RS_PLUGIN_SO "'", "r");
  ASSERT_NE(nm, nullptr);
  std::set<std::string> names;
  char line[1024];
  while (std::fgets(line, sizeof(line), nm) != nullptr) {
    char addr[64], type[8], name[512];
    if (std::sscanf(line, "%63s %7s %511s", addr, type, name) != 3) continue;
    // Data, not code: NCCL reads tables.
    if (std::string(name).rfind("ncclNet", 0) == 0 || std::string(name).rfind("ncclCollNet", 0) == 0) {
      EXPECT_TRUE(type[0] == 'D' || type[0] == 'R') << name << " has type " << type;
    }
    names.insert(name);
  }
  ASSERT_EQ(::pclose(nm), 0) << "nm failed";
  const std::set<std::string> runtime = {"_init", "_fini", "__bss_start", "_edata", "_end"};
  std::set<std::string> ours;
  for (const std::string& n : names) {
    if (!runtime.count(n)) ours.insert(n);
  }
  EXPECT_EQ(ours, (std::set<std::string>{"ncclNetPlugin_v8", "ncclNetPlugin_v7", "ncclCollNetPlugin_v8",
                                         "ncclCollNetPlugin_v7"}));
}

TEST(PluginTables, ShapeAsNcclExpects) {
  ScopedPluginEnv env(Vars{});
  std::unique_ptr<LoadedPlugin> plugin = Load();
  ASSERT_NE(plugin, nullptr);
  for (int version : {7, 8}) {
    NetApi api = plugin->Net(version);
    EXPECT_STREQ(api.name, "Reducer");
    ResetLogCounts();
    ASSERT_EQ(api.init(&TestLogger), Result::kSuccess);
    int ndev = 0;
    ASSERT_EQ(api.devices(&ndev), Result::kSuccess);
    ASSERT_EQ(ndev, 1);
    abi::PropertiesV8 props{};
    ASSERT_EQ(api.getProperties(0, &props), Result::kSuccess);
    EXPECT_STREQ(props.name, "lo");
    EXPECT_EQ(props.ptrSupport, abi::kPtrHost);
    EXPECT_EQ(props.maxRecvs, 1);
    EXPECT_GT(props.speed, 0);
    EXPECT_EQ(api.getProperties(1, &props), Result::kInvalidArgument);
    void* mh = nullptr;
    char buf[64];
    EXPECT_EQ(api.regMr(nullptr, buf, sizeof(buf), abi::kPtrHost, &mh), Result::kSuccess);
    EXPECT_NE(mh, nullptr);
    EXPECT_EQ(api.regMr(nullptr, buf, sizeof(buf), abi::kPtrCuda, &mh), Result::kInvalidArgument);
    // Misuse: a pointer that is no request of ours.
    int done = 0;
    int junk[16] = {};
    EXPECT_EQ(api.test(junk, &done, nullptr), Result::kInternalError);
    // Misuse: a comm passed to the slot of the other direction.
    void* send = nullptr;
    void* recv = nullptr;
    ASSERT_EQ(ConnectPair(api, 0, &send, &recv, After(std::chrono::seconds(20))), Result::kSuccess);
    void* req = nullptr;
    EXPECT_EQ(api.isend(recv, buf, 1, 0, nullptr, &req), Result::kInternalError);
    EXPECT_EQ(PostRecv(api, send, buf, 1, 0, &req, After(std::chrono::seconds(1))), Result::kInternalError);
    EXPECT_EQ(api.closeSend(recv), Result::kInternalError);
    EXPECT_EQ(api.closeSend(send), Result::kSuccess);
    EXPECT_EQ(api.closeRecv(recv), Result::kSuccess);
  }
  // NCCL 2.24+ treats a NULL iallgather/ireducescatter as supported: ours
  // must be real functions that refuse.
  const abi::CollNetV8* coll = plugin->CollV8();
  ASSERT_NE(coll->iallgather, nullptr);
  ASSERT_NE(coll->ireducescatter, nullptr);
  void* req = nullptr;
  EXPECT_EQ(coll->ireducescatter(nullptr, 0, nullptr, nullptr, 0, 0, 0, abi::kNcclFloat32, abi::kNcclSum, nullptr,
                                 &req),
            Result::kInternalError);
  EXPECT_STREQ(coll->name, "Reducer");
  EXPECT_STREQ(plugin->CollV7()->name, "Reducer");
}

TEST(PluginInit, NoReducersMeansZeroCollNetDevicesAndOneInfoLine) {
  ScopedPluginEnv env(Vars{});
  std::unique_ptr<LoadedPlugin> plugin = Load();
  ASSERT_NE(plugin, nullptr);
  ResetLogCounts();
  ASSERT_EQ(plugin->CollV8()->init(&TestLogger), Result::kSuccess);
  ASSERT_EQ(plugin->Net(8).init(&TestLogger), Result::kSuccess);  // idempotent, logs nothing more
  int ndev = -1;
  ASSERT_EQ(plugin->CollV8()->devices(&ndev), Result::kSuccess);
  EXPECT_EQ(ndev, 0);
  ASSERT_EQ(plugin->CollV7()->devices(&ndev), Result::kSuccess);
  EXPECT_EQ(ndev, 0);
  // One line for point-to-point, one saying why CollNet is off; no warnings.
  EXPECT_EQ(LogCount(abi::kLogInfo), 2);
  EXPECT_EQ(LogCount(abi::kLogWarn), 0);
}

TEST(PluginInit, ReducersFromClusterSpecEnableCollNet) {
  ScopedPluginEnv env(Vars{{"CLUSTER_SPEC",
                        R"({"cluster":{"workerpool0":["w0:2222"],"workerpool2":["r0:2222","r1:2222"]},)"
                        R"("environment":"cloud","task":{"type":"workerpool0","index":0}})"}});
  std::unique_ptr<LoadedPlugin> plugin = Load();
  ASSERT_NE(plugin, nullptr);
  ASSERT_EQ(plugin->CollV8()->init(&TestLogger), Result::kSuccess);
  int ndev = -1;
  ASSERT_EQ(plugin->CollV8()->devices(&ndev), Result::kSuccess);
  EXPECT_EQ(ndev, 1);
  abi::PropertiesV8 props{};
  ASSERT_EQ(plugin->CollV8()->getProperties(0, &props), Result::kSuccess);
  EXPECT_STREQ(props.name, "lo");  // CollNet device i is named like net device i
}

TEST(PluginInit, MisconfigurationIsInvalidUsageAndInitStillSucceeds) {
  {
    ScopedPluginEnv env(Vars{{"REDUCER_ADDRS", "reducer-without-port"}});
    std::unique_ptr<LoadedPlugin> plugin = Load();
    ASSERT_NE(plugin, nullptr);
    ASSERT_EQ(plugin->CollV8()->init(&TestLogger), Result::kSuccess);
    int ndev = -1;
    EXPECT_EQ(plugin->CollV8()->devices(&ndev), Result::kInvalidUsage);
    EXPECT_EQ(plugin->Net(8).devices(&ndev), Result::kSuccess);  // point-to-point unaffected
    EXPECT_EQ(ndev, 1);
  }
  {
    ScopedPluginEnv env(Vars{{"REDUCER_SOCKET_IFNAME", "no-such-interface"}});
    std::unique_ptr<LoadedPlugin> plugin = Load();
    ASSERT_NE(plugin, nullptr);
    ASSERT_EQ(plugin->Net(7).init(&TestLogger), Result::kSuccess);
    int ndev = -1;
    EXPECT_EQ(plugin->Net(7).devices(&ndev), Result::kInvalidUsage);
  }
  {
    // Vertex sets CLUSTER_SPEC on every job: one we cannot read turns CollNet
    // off with a warning, it does not fail NCCL.
    ScopedPluginEnv env(Vars{{"CLUSTER_SPEC", "{not json"}});
    std::unique_ptr<LoadedPlugin> plugin = Load();
    ASSERT_NE(plugin, nullptr);
    ResetLogCounts();
    ASSERT_EQ(plugin->CollV8()->init(&TestLogger), Result::kSuccess);
    int ndev = -1;
    EXPECT_EQ(plugin->CollV8()->devices(&ndev), Result::kSuccess);
    EXPECT_EQ(ndev, 0);
    EXPECT_EQ(LogCount(abi::kLogWarn), 1);
  }
}

TEST(PluginReload, LoadUseCloseUnload50Times) {
  ScopedPluginEnv env(Vars{});
  const int fds_before = CountEntries("/proc/self/fd");
  const int threads_before = CountEntries("/proc/self/task");
  for (int i = 0; i < 50; ++i) {
    SCOPED_TRACE("iteration " + std::to_string(i));
    std::unique_ptr<LoadedPlugin> plugin = Load();
    ASSERT_NE(plugin, nullptr);
    NetApi api = plugin->Net(i % 2 ? 7 : 8);
    ASSERT_EQ(api.init(&TestLogger), Result::kSuccess);
    int ndev = -1;
    ASSERT_EQ(plugin->CollV8()->devices(&ndev), Result::kSuccess);
    ASSERT_EQ(ndev, 0);
    void* send = nullptr;
    void* recv = nullptr;
    ASSERT_EQ(ConnectPair(api, 0, &send, &recv, After(std::chrono::seconds(20))), Result::kSuccess);
    // 2 helper threads per comm by default: they exist while the comms do.
    EXPECT_EQ(CountEntries("/proc/self/task"), threads_before + 4);
    for (int size : {1, (1 << 20) + 3}) {
      std::vector<uint8_t> out(static_cast<size_t>(size)), in(static_cast<size_t>(size));
      FillPattern(out.data(), out.size(), 0, i);
      void* rreq = nullptr;
      void* sreq = nullptr;
      const Deadline deadline = After(std::chrono::seconds(20));
      ASSERT_EQ(PostRecv(api, recv, in.data(), size, 0, &rreq, deadline), Result::kSuccess);
      ASSERT_EQ(PostSend(api, send, out.data(), size, 0, &sreq, deadline), Result::kSuccess);
      int got = 0;
      ASSERT_EQ(Wait(api, sreq, &got, deadline), Result::kSuccess);
      ASSERT_EQ(Wait(api, rreq, &got, deadline), Result::kSuccess);
      ASSERT_EQ(got, size);
      ASSERT_LT(CheckPattern(in.data(), in.size(), 0, i), 0);
    }
    ASSERT_EQ(api.closeSend(send), Result::kSuccess);
    ASSERT_EQ(api.closeRecv(recv), Result::kSuccess);
    // Helper threads are joined at close, not later.
    EXPECT_EQ(ThreadsSettlingTo(threads_before), threads_before);
    plugin.reset();
    // Really unloaded, not pinned in memory (e.g. by GNU unique symbols).
    void* still = ::dlopen(RS_PLUGIN_SO, RTLD_NOW | RTLD_NOLOAD);
    EXPECT_EQ(still, nullptr) << "the library stayed loaded after dlclose";
    if (still != nullptr) ::dlclose(still);
  }
  EXPECT_EQ(CountEntries("/proc/self/fd"), fds_before);
  EXPECT_EQ(ThreadsSettlingTo(threads_before), threads_before);
}

}  // namespace
}  // namespace rs::plugin::test
