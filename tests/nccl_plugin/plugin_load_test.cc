// The built libnccl-net-reducer.so as NCCL sees it, in this process: what it
// exports (every table's size and slot order), what init/devices report under
// various environments, the v11 per-communicator contexts, and that it can
// be loaded, used, closed and unloaded many times without leaking threads,
// descriptors or memory (the AddressSanitizer build checks memory).
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/nccl_plugin/plugin_harness.h"
#include "tests/support/sanitizer_build.h"

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

// The exported symbols with their sizes, from the library's dynamic symbol
// table (nm -D -S), as NCCL's dlsym sees them.
std::map<std::string, size_t> ExportedSymbols() {
  std::map<std::string, size_t> out;
  FILE* nm = ::popen("nm -D -S --defined-only '" RS_PLUGIN_SO "'", "r");
  if (nm == nullptr) return out;
  char line[1024];
  while (std::fgets(line, sizeof(line), nm) != nullptr) {
    char addr[64], size[64], type[8], name[512];
    if (std::sscanf(line, "%63s %63s %7s %511s", addr, size, type, name) != 4) continue;
    // Data, not code: NCCL reads tables.
    if (type[0] != 'D' && type[0] != 'R') continue;
    out[name] = std::strtoul(size, nullptr, 16);
  }
  EXPECT_EQ(::pclose(nm), 0) << "nm failed";
  return out;
}

TEST(PluginSymbols, ExportsExactlyTheTablesNccl230AndOlderLookFor) {
  std::map<std::string, size_t> symbols = ExportedSymbols();
  std::set<std::string> names;
  for (const auto& [name, size] : symbols) names.insert(name);
  // No ncclCollNetPlugin_v8: NCCL's v8 adapter would make all_gather and
  // reduce_scatter look supported. v6 and v5: NCCL 2.13 - 2.18 look up only
  // v6, v5 and v4, NCCL 2.12 only v5 and v4 (PyTorch 2.0/2.1, TensorFlow
  // 2.12/2.13 ship them). Tuners v1 - v5: NCCL 2.19 - 2.20 take v1, 2.21 v2,
  // 2.22 - 2.23 v3, 2.24 - 2.27 v4, 2.28 - 2.30 v5.
  EXPECT_EQ(names, (std::set<std::string>{"ncclNetPlugin_v11", "ncclNetPlugin_v8", "ncclNetPlugin_v7",
                                          "ncclNetPlugin_v6", "ncclNetPlugin_v5", "ncclCollNetPlugin_v11",
                                          "ncclCollNetPlugin_v7", "ncclCollNetPlugin_v6", "ncclCollNetPlugin_v5",
                                          "ncclTunerPlugin_v5", "ncclTunerPlugin_v4", "ncclTunerPlugin_v3",
                                          "ncclTunerPlugin_v2", "ncclTunerPlugin_v1"}));
}

// Each table's slots in NCCL's order (from NCCL's own headers: ext-net and
// src/include/plugin, tag v2.28.9-1; src/include/nccl_net.h, tags v2.18.3-1
// and v2.12.12-1, for v6 and v5), written here independently of our
// declarations in nccl_abi.h: a slot is the name string, a function, or NULL.
enum class Slot { kName, kFunction, kNull };
struct TableSpec {
  const char* symbol;
  std::vector<std::pair<const char*, Slot>> slots;
};
constexpr Slot F = Slot::kFunction;
constexpr Slot N = Slot::kNull;

const std::vector<TableSpec>& Tables() {
  static const std::vector<TableSpec> tables = {
      {"ncclNetPlugin_v11",
       {{"name", Slot::kName}, {"init", F}, {"devices", F}, {"getProperties", F}, {"listen", F}, {"connect", F},
        {"accept", F}, {"regMr", F}, {"regMrDmaBuf", F}, {"deregMr", F}, {"isend", F}, {"irecv", F},
        {"iflush", F}, {"test", F}, {"closeSend", F}, {"closeRecv", F}, {"closeListen", F},
        {"getDeviceMr", N}, {"irecvConsumed", N}, {"makeVDevice", N}, {"finalize", F}, {"setNetAttr", N}}},
      {"ncclNetPlugin_v8",
       {{"name", Slot::kName}, {"init", F}, {"devices", F}, {"getProperties", F}, {"listen", F}, {"connect", F},
        {"accept", F}, {"regMr", F}, {"regMrDmaBuf", F}, {"deregMr", F}, {"isend", F}, {"irecv", F},
        {"iflush", F}, {"test", F}, {"closeSend", F}, {"closeRecv", F}, {"closeListen", F},
        {"getDeviceMr", N}, {"irecvConsumed", N}}},
      {"ncclNetPlugin_v7",
       {{"name", Slot::kName}, {"init", F}, {"devices", F}, {"getProperties", F}, {"listen", F}, {"connect", F},
        {"accept", F}, {"regMr", F}, {"regMrDmaBuf", F}, {"deregMr", F}, {"isend", F}, {"irecv", F},
        {"iflush", F}, {"test", F}, {"closeSend", F}, {"closeRecv", F}, {"closeListen", F},
        {"getDeviceMr", N}, {"irecvConsumed", N}}},
      {"ncclNetPlugin_v6",
       {{"name", Slot::kName}, {"init", F}, {"devices", F}, {"getProperties", F}, {"listen", F}, {"connect", F},
        {"accept", F}, {"regMr", F}, {"regMrDmaBuf", F}, {"deregMr", F}, {"isend", F}, {"irecv", F},
        {"iflush", F}, {"test", F}, {"closeSend", F}, {"closeRecv", F}, {"closeListen", F}}},
      {"ncclNetPlugin_v5",
       {{"name", Slot::kName}, {"init", F}, {"devices", F}, {"getProperties", F}, {"listen", F}, {"connect", F},
        {"accept", F}, {"regMr", F}, {"deregMr", F}, {"isend", F}, {"irecv", F}, {"iflush", F}, {"test", F},
        {"closeSend", F}, {"closeRecv", F}, {"closeListen", F}}},
      {"ncclCollNetPlugin_v11",
       {{"name", Slot::kName}, {"init", F}, {"devices", F}, {"getProperties", F}, {"listen", F}, {"connect", F},
        {"reduceSupport", F}, {"regMr", F}, {"regMrDmaBuf", F}, {"deregMr", F}, {"iallreduce", F},
        {"iallgather", N}, {"ireducescatter", N}, {"iflush", F}, {"test", F}, {"closeColl", F},
        {"closeListen", F}, {"makeVDevice", N}, {"finalize", F}}},
      {"ncclCollNetPlugin_v7",
       {{"name", Slot::kName}, {"init", F}, {"devices", F}, {"getProperties", F}, {"listen", F}, {"connect", F},
        {"reduceSupport", F}, {"regMr", F}, {"regMrDmaBuf", F}, {"deregMr", F}, {"iallreduce", F},
        {"iflush", F}, {"test", F}, {"closeColl", F}, {"closeListen", F}}},
      {"ncclCollNetPlugin_v6",
       {{"name", Slot::kName}, {"init", F}, {"devices", F}, {"getProperties", F}, {"listen", F}, {"connect", F},
        {"reduceSupport", F}, {"regMr", F}, {"regMrDmaBuf", F}, {"deregMr", F}, {"iallreduce", F},
        {"iflush", F}, {"test", F}, {"closeColl", F}, {"closeListen", F}}},
      {"ncclCollNetPlugin_v5",
       {{"name", Slot::kName}, {"init", F}, {"devices", F}, {"getProperties", F}, {"listen", F}, {"connect", F},
        {"reduceSupport", F}, {"regMr", F}, {"deregMr", F}, {"iallreduce", F}, {"iflush", F}, {"test", F},
        {"closeColl", F}, {"closeListen", F}}},
      {"ncclTunerPlugin_v5", {{"name", Slot::kName}, {"init", F}, {"getCollInfo", F}, {"finalize", F}}},
      // ext-tuner/example/nccl/tuner.h at v2.27.7-1, v2.23.4-1, v2.21.5-1, v2.19.3-1.
      {"ncclTunerPlugin_v4", {{"name", Slot::kName}, {"init", F}, {"getCollInfo", F}, {"destroy", F}}},
      {"ncclTunerPlugin_v3", {{"name", Slot::kName}, {"init", F}, {"getCollInfo", F}, {"destroy", F}}},
      {"ncclTunerPlugin_v2", {{"name", Slot::kName}, {"init", F}, {"getCollInfo", F}, {"destroy", F}}},
      {"ncclTunerPlugin_v1", {{"name", Slot::kName}, {"init", F}, {"getCollInfo", F}, {"destroy", F}}},
  };
  return tables;
}

#if defined(__clang__)
constexpr bool kClang = true;
#else
constexpr bool kClang = false;
#endif

TEST(PluginTables, EveryExportedTableHasNcclsSizeAndSlotOrder) {
  const std::map<std::string, size_t> sizes = ExportedSymbols();
  ScopedPluginEnv env(Vars{});
  std::unique_ptr<LoadedPlugin> plugin = Load();
  ASSERT_NE(plugin, nullptr);
  for (const TableSpec& table : Tables()) {
    SCOPED_TRACE(table.symbol);
    ASSERT_TRUE(sizes.count(table.symbol));
    // Clang's AddressSanitizer pads every global with a redzone that its
    // symbol's size counts: there only the slots are checked (the optimized
    // build checks the sizes).
    if (!(rs::testing::kAddressSanitizer && kClang)) {
      EXPECT_EQ(sizes.at(table.symbol), 8 * table.slots.size());
    }
    auto* const* slots = static_cast<void* const*>(plugin->Symbol(table.symbol));
    ASSERT_NE(slots, nullptr);
    for (size_t i = 0; i < table.slots.size(); ++i) {
      const auto& [name, kind] = table.slots[i];
      SCOPED_TRACE(std::string("slot ") + std::to_string(i) + " " + name);
      if (kind == Slot::kName) {
        EXPECT_STREQ(static_cast<const char*>(slots[i]), "Reducer");
      } else if (kind == Slot::kNull) {
        EXPECT_EQ(slots[i], nullptr);
      } else {
        EXPECT_NE(slots[i], nullptr);
      }
    }
  }
}

// Calls through raw slot positions (NCCL's numbering, not our structs): the
// function at each position answers as that slot must.
TEST(PluginTables, SlotsAnswerAtNcclsPositions) {
  ScopedPluginEnv env(Vars{});
  std::unique_ptr<LoadedPlugin> plugin = Load();
  ASSERT_NE(plugin, nullptr);
  using Res = Result;
  auto slots = [&](const char* symbol) { return static_cast<void* const*>(plugin->Symbol(symbol)); };
  {
    void* const* t = slots("ncclNetPlugin_v11");
    void* ctx = nullptr;
    abi::CommConfigV11 config{-1};
    ASSERT_EQ(reinterpret_cast<Res (*)(void**, uint64_t, abi::CommConfigV11*, abi::Logger, abi::ProfilerCallback)>(
                  t[1])(&ctx, 1, &config, &TestLogger, nullptr),
              Res::kSuccess);
    int ndev = 0;
    ASSERT_EQ(reinterpret_cast<Res (*)(int*)>(t[2])(&ndev), Res::kSuccess);
    EXPECT_EQ(ndev, 1);
    abi::PropertiesV11 props{};
    ASSERT_EQ(reinterpret_cast<Res (*)(int, abi::PropertiesV11*)>(t[3])(0, &props), Res::kSuccess);
    EXPECT_STREQ(props.name, "lo");
    EXPECT_EQ(props.maxP2pBytes, size_t{1} << 30);
    EXPECT_EQ(reinterpret_cast<Res (*)(void*)>(t[20])(ctx), Res::kSuccess);  // finalize
  }
  for (const char* symbol : {"ncclNetPlugin_v8", "ncclNetPlugin_v7"}) {
    void* const* t = slots(symbol);
    ASSERT_EQ(reinterpret_cast<Res (*)(abi::Logger)>(t[1])(&TestLogger), Res::kSuccess);
    int ndev = 0;
    ASSERT_EQ(reinterpret_cast<Res (*)(int*)>(t[2])(&ndev), Res::kSuccess);
    EXPECT_EQ(ndev, 1) << symbol;
  }
  for (const char* symbol : {"ncclCollNetPlugin_v11", "ncclCollNetPlugin_v7", "ncclCollNetPlugin_v6",
                             "ncclCollNetPlugin_v5"}) {
    void* const* t = slots(symbol);
    auto reduce_support = reinterpret_cast<Res (*)(int, int, int*)>(t[6]);
    int supported = -1;
    ASSERT_EQ(reduce_support(abi::kNcclBfloat16, abi::kNcclSum, &supported), Res::kSuccess);
    EXPECT_EQ(supported, 1) << symbol;
    ASSERT_EQ(reduce_support(abi::kNcclFloat8e4m3, abi::kNcclSum, &supported), Res::kSuccess);
    EXPECT_EQ(supported, 0) << symbol;
  }
}

// NCCL 2.12 - 2.18's tables through raw positions: the v6 properties (48
// bytes, no device type), and every slot after regMr one position earlier in
// v5, which has no regMrDmaBuf.
TEST(PluginTables, V6AndV5SlotsAnswerAtNcclsPositions) {
  ScopedPluginEnv env(Vars{});
  std::unique_ptr<LoadedPlugin> plugin = Load();
  ASSERT_NE(plugin, nullptr);
  using Res = Result;
  struct Positions {
    const char* symbol;
    int dereg_mr, test, close_listen;
  };
  for (const Positions& pos : {Positions{"ncclNetPlugin_v6", 9, 13, 16}, Positions{"ncclNetPlugin_v5", 8, 12, 15}}) {
    SCOPED_TRACE(pos.symbol);
    auto* const* t = static_cast<void* const*>(plugin->Symbol(pos.symbol));
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(reinterpret_cast<Res (*)(abi::Logger)>(t[1])(&TestLogger), Res::kSuccess);
    int ndev = 0;
    ASSERT_EQ(reinterpret_cast<Res (*)(int*)>(t[2])(&ndev), Res::kSuccess);
    EXPECT_EQ(ndev, 1);
    // NCCL 2.18 passes a 48-byte struct: bytes beyond it must stay untouched.
    struct {
      abi::PropertiesV6 props;
      unsigned char guard[16];
    } out;
    std::memset(&out, 0xAB, sizeof(out));
    ASSERT_EQ(reinterpret_cast<Res (*)(int, abi::PropertiesV6*)>(t[3])(0, &out.props), Res::kSuccess);
    EXPECT_STREQ(out.props.name, "lo");
    EXPECT_EQ(out.props.ptrSupport, abi::kPtrHost);
    EXPECT_GT(out.props.speed, 0);
    EXPECT_EQ(out.props.maxRecvs, 1);
    for (unsigned char b : out.guard) EXPECT_EQ(b, 0xAB);
    // regMr (int size) at 7, then deregMr where v5 has it (in v6 slot 8 is
    // regMrDmaBuf, which refuses).
    char buf[64];
    void* mh = nullptr;
    ASSERT_EQ(reinterpret_cast<Res (*)(void*, void*, int, int, void**)>(t[7])(nullptr, buf, 64, abi::kPtrHost, &mh),
              Res::kSuccess);
    EXPECT_NE(mh, nullptr);
    EXPECT_EQ(reinterpret_cast<Res (*)(void*, void*)>(t[pos.dereg_mr])(nullptr, mh), Res::kSuccess);
    int done = 0;
    int junk[16] = {};
    EXPECT_EQ(reinterpret_cast<Res (*)(void*, int*, int*)>(t[pos.test])(junk, &done, nullptr), Res::kInternalError);
    EXPECT_EQ(reinterpret_cast<Res (*)(void*)>(t[pos.close_listen])(nullptr), Res::kSuccess);
  }
  for (const char* symbol : {"ncclCollNetPlugin_v6", "ncclCollNetPlugin_v5"}) {
    SCOPED_TRACE(symbol);
    auto* const* t = static_cast<void* const*>(plugin->Symbol(symbol));
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(reinterpret_cast<Res (*)(abi::Logger)>(t[1])(&TestLogger), Res::kSuccess);
    int ndev = -1;
    ASSERT_EQ(reinterpret_cast<Res (*)(int*)>(t[2])(&ndev), Res::kSuccess);
    EXPECT_EQ(ndev, 0);  // no reducers configured
    const int test = std::string(symbol) == "ncclCollNetPlugin_v6" ? 12 : 11;
    int done = 0;
    int junk[16] = {};
    EXPECT_EQ(reinterpret_cast<Res (*)(void*, int*, int*)>(t[test])(junk, &done, nullptr), Res::kInternalError);
  }
}

TEST(PluginTables, ShapeAsNcclExpects) {
  ScopedPluginEnv env(Vars{});
  std::unique_ptr<LoadedPlugin> plugin = Load();
  ASSERT_NE(plugin, nullptr);
  for (int version : {5, 6, 7, 8, 11}) {
    SCOPED_TRACE("net v" + std::to_string(version));
    NetApi api = plugin->Net(version);
    EXPECT_STREQ(api.name, "Reducer");
    ResetLogCounts();
    ASSERT_EQ(api.init(&TestLogger), Result::kSuccess);
    int ndev = 0;
    ASSERT_EQ(api.devices(&ndev), Result::kSuccess);
    ASSERT_EQ(ndev, 1);
    abi::PropertiesV11 props{};
    ASSERT_EQ(api.getProperties(0, &props), Result::kSuccess);
    EXPECT_STREQ(props.name, "lo");
    EXPECT_EQ(props.ptrSupport, abi::kPtrHost);
    EXPECT_EQ(props.maxRecvs, 1);
    EXPECT_GT(props.speed, 0);
    if (version == 11) {
      // NCCL 2.28 refuses a device whose limits are 0 or above 1 TiB.
      EXPECT_GT(props.maxP2pBytes, 0u);
      EXPECT_LE(props.maxP2pBytes, abi::kMaxNetSizeBytes);
      EXPECT_GT(props.maxCollBytes, 0u);
      EXPECT_LE(props.maxCollBytes, abi::kMaxNetSizeBytes);
      EXPECT_EQ(props.vProps.ndevs, 1);
      EXPECT_EQ(props.maxMultiRequestSize, 1);
    }
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
    EXPECT_EQ(api.finalize(), Result::kSuccess);
  }
  for (int version : {5, 6, 7, 11}) {
    CollApi coll = plugin->Coll(version);
    EXPECT_STREQ(coll.name, "Reducer");
  }
}

TEST(PluginContexts, V11InitAndFinalizeOncePerCommunicator) {
  ScopedPluginEnv env(Vars{});
  std::unique_ptr<LoadedPlugin> plugin = Load();
  ASSERT_NE(plugin, nullptr);
  // Two communicators at once, each with its own context; both work.
  NetApi a = plugin->Net(11);
  NetApi b = plugin->Net(11);
  ASSERT_EQ(a.init(&TestLogger), Result::kSuccess);
  ASSERT_EQ(b.init(&TestLogger), Result::kSuccess);
  ASSERT_NE(*a.ctx, nullptr);
  EXPECT_NE(*a.ctx, *b.ctx);
  for (NetApi* api : {&a, &b}) {
    void* send = nullptr;
    void* recv = nullptr;
    ASSERT_EQ(ConnectPair(*api, 0, &send, &recv, After(std::chrono::seconds(20))), Result::kSuccess);
    EXPECT_EQ(api->closeSend(send), Result::kSuccess);
    EXPECT_EQ(api->closeRecv(recv), Result::kSuccess);
  }
  // A CollNet context is no net context, and the reverse.
  CollApi coll = plugin->Coll(11);
  ASSERT_EQ(coll.init(&TestLogger, 7), Result::kSuccess);
  const abi::NetV11* net = plugin->NetV11();
  alignas(8) char handle[abi::kHandleMaxBytes] = {};
  void* listen = nullptr;
  EXPECT_EQ(net->listen(*coll.ctx, 0, handle, &listen), Result::kInternalError);
  EXPECT_EQ(net->finalize(*coll.ctx), Result::kInternalError);
  EXPECT_EQ(plugin->CollV11()->finalize(*a.ctx), Result::kInternalError);
  void* a_ctx = *a.ctx;
  EXPECT_EQ(a.finalize(), Result::kSuccess);
  EXPECT_EQ(b.finalize(), Result::kSuccess);
  EXPECT_EQ(coll.finalize(), Result::kSuccess);
  // A finalized context is refused, not read.
  EXPECT_EQ(net->finalize(a_ctx), Result::kInternalError);
  EXPECT_EQ(net->listen(a_ctx, 0, handle, &listen), Result::kInternalError);
  // NCCL may finalize a context it got from a failed setup as NULL.
  EXPECT_EQ(net->finalize(nullptr), Result::kSuccess);
  // After every communicator is gone, a new one works on the same library.
  NetApi c = plugin->Net(11);
  ASSERT_EQ(c.init(&TestLogger), Result::kSuccess);
  void* send = nullptr;
  void* recv = nullptr;
  ASSERT_EQ(ConnectPair(c, 0, &send, &recv, After(std::chrono::seconds(20))), Result::kSuccess);
  EXPECT_EQ(c.closeSend(send), Result::kSuccess);
  EXPECT_EQ(c.closeRecv(recv), Result::kSuccess);
  EXPECT_EQ(c.finalize(), Result::kSuccess);
}

TEST(PluginInit, NoReducersMeansZeroCollNetDevicesAndOneInfoLine) {
  ScopedPluginEnv env(Vars{});
  std::unique_ptr<LoadedPlugin> plugin = Load();
  ASSERT_NE(plugin, nullptr);
  ResetLogCounts();
  CollApi v11 = plugin->Coll(11);
  ASSERT_EQ(v11.init(&TestLogger, 1), Result::kSuccess);
  NetApi net = plugin->Net(11);
  ASSERT_EQ(net.init(&TestLogger), Result::kSuccess);  // the plugin exists once: logs nothing more
  int ndev = -1;
  ASSERT_EQ(v11.devices(&ndev), Result::kSuccess);
  EXPECT_EQ(ndev, 0);
  for (int version : {7, 6, 5}) {
    ASSERT_EQ(plugin->Coll(version).devices(&ndev), Result::kSuccess);
    EXPECT_EQ(ndev, 0) << "CollNet v" << version;
  }
  // One line for point-to-point, one saying why CollNet is off; no warnings.
  EXPECT_EQ(LogCount(abi::kLogInfo), 2);
  EXPECT_EQ(LogCount(abi::kLogWarn), 0);
  EXPECT_EQ(v11.finalize(), Result::kSuccess);
  EXPECT_EQ(net.finalize(), Result::kSuccess);
}

TEST(PluginInit, ReducersFromClusterSpecEnableCollNet) {
  ScopedPluginEnv env(Vars{{"CLUSTER_SPEC",
                        R"({"cluster":{"workerpool0":["w0:2222"],"workerpool2":["r0:2222","r1:2222"]},)"
                        R"("environment":"cloud","task":{"type":"workerpool0","index":0}})"}});
  std::unique_ptr<LoadedPlugin> plugin = Load();
  ASSERT_NE(plugin, nullptr);
  for (int version : {11, 7, 6, 5}) {
    SCOPED_TRACE("CollNet v" + std::to_string(version));
    CollApi coll = plugin->Coll(version);
    ASSERT_EQ(coll.init(&TestLogger, 1), Result::kSuccess);
    int ndev = -1;
    ASSERT_EQ(coll.devices(&ndev), Result::kSuccess);
    EXPECT_EQ(ndev, 1);
    abi::PropertiesV11 props{};
    ASSERT_EQ(coll.getProperties(0, &props), Result::kSuccess);
    EXPECT_STREQ(props.name, "lo");  // CollNet device i is named like net device i
    if (version == 11) {
      EXPECT_GT(props.maxCollBytes, 0u);
      EXPECT_LE(props.maxCollBytes, abi::kMaxNetSizeBytes);
    }
    EXPECT_EQ(coll.finalize(), Result::kSuccess);
  }
}

TEST(PluginInit, MisconfigurationIsInvalidUsageAndInitStillSucceeds) {
  {
    ScopedPluginEnv env(Vars{{"REDUCER_ADDRS", "reducer-without-port"}});
    std::unique_ptr<LoadedPlugin> plugin = Load();
    ASSERT_NE(plugin, nullptr);
    CollApi coll = plugin->Coll(11);
    ASSERT_EQ(coll.init(&TestLogger, 1), Result::kSuccess);
    int ndev = -1;
    EXPECT_EQ(coll.devices(&ndev), Result::kInvalidUsage);
    EXPECT_EQ(plugin->Net(11).devices(&ndev), Result::kSuccess);  // point-to-point unaffected
    EXPECT_EQ(ndev, 1);
    EXPECT_EQ(coll.finalize(), Result::kSuccess);
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
    CollApi coll = plugin->Coll(7);
    ASSERT_EQ(coll.init(&TestLogger, 0), Result::kSuccess);
    int ndev = -1;
    EXPECT_EQ(coll.devices(&ndev), Result::kSuccess);
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
    constexpr int kVersions[] = {7, 8, 11, 6, 5};
    NetApi api = plugin->Net(kVersions[i % 5]);
    ASSERT_EQ(api.init(&TestLogger), Result::kSuccess);
    int ndev = -1;
    ASSERT_EQ(plugin->Coll(11).devices(&ndev), Result::kSuccess);
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
    ASSERT_EQ(api.finalize(), Result::kSuccess);
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
