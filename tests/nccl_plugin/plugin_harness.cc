#include "tests/nccl_plugin/plugin_harness.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <tuple>
#include <type_traits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace rs::plugin::test {
namespace {

std::array<std::atomic<int>, 8> g_log_counts{};

template <typename T>
T* Lookup(void* dl, const char* name, std::string* error) {
  void* sym = ::dlsym(dl, name);
  if (sym == nullptr && error->empty()) *error = std::string("symbol not found: ") + name;
  return static_cast<T*>(sym);
}

template <typename Props>
abi::PropertiesV11 Widen(const Props& p) {
  abi::PropertiesV11 out{};
  out.name = p.name;
  out.pciPath = p.pciPath;
  out.guid = p.guid;
  out.ptrSupport = p.ptrSupport;
  if constexpr (requires { p.regIsGlobal; }) out.regIsGlobal = p.regIsGlobal;
  out.speed = p.speed;
  out.port = p.port;
  out.latency = p.latency;
  out.maxComms = p.maxComms;
  out.maxRecvs = p.maxRecvs;
  // v5/v6 have no device type: NCCL 2.12 - 2.18 treat every plugin as host.
  out.netDeviceType = abi::kNetDeviceHost;
  if constexpr (requires { p.netDeviceType; }) {
    out.netDeviceType = p.netDeviceType;
    out.netDeviceVersion = p.netDeviceVersion;
  }
  return out;
}

template <typename Props, typename Table>
std::function<Result(int, abi::PropertiesV11*)> WidenedProperties(const Table* t) {
  return [t](int dev, abi::PropertiesV11* out) {
    Props p{};
    const Result r = t->getProperties(dev, &p);
    *out = Widen(p);
    return r;
  };
}

// v5 - v8 tables as NCCL's adapters drive them: int sizes, no context. v5/v6
// (NCCL 2.12 - 2.18) take no device handle; NCCL 2.18's v5 adapter leaves
// regMrDmaBuf NULL, which NCCL calls only for DMA-BUF memory (never ours).
template <typename Props, typename RegSize, typename Table>
NetApi OldNet(const Table* t, int version) {
  NetApi api;
  api.version = version;
  api.name = t->name;
  api.init = [t](abi::Logger logger) { return t->init(logger); };
  api.finalize = [] { return Result::kSuccess; };
  api.devices = t->devices;
  api.getProperties = WidenedProperties<Props>(t);
  api.listen = [t](int dev, void* handle, void** comm) { return t->listen(dev, handle, comm); };
  api.connect = [t](int dev, void* handle, void** comm, abi::DeviceHandle** dh) {
    if constexpr (requires { t->connect(dev, handle, comm, dh); }) {
      return t->connect(dev, handle, comm, dh);
    } else {
      return t->connect(dev, handle, comm);
    }
  };
  api.accept = [t](void* listen, void** comm, abi::DeviceHandle** dh) {
    if constexpr (requires { t->accept(listen, comm, dh); }) {
      return t->accept(listen, comm, dh);
    } else {
      return t->accept(listen, comm);
    }
  };
  api.regMr = [t](void* comm, void* data, size_t size, int type, void** mh) {
    return t->regMr(comm, data, static_cast<RegSize>(size), type, mh);
  };
  api.deregMr = t->deregMr;
  api.isend = [t](void* comm, void* data, size_t size, int tag, void* mh, void** req) {
    return t->isend(comm, data, static_cast<int>(size), tag, mh, req);
  };
  api.irecv = [t](void* comm, int n, void** data, size_t* sizes, int* tags, void** mh, void** req) {
    std::vector<int> ints(static_cast<size_t>(n > 0 ? n : 0));
    for (int i = 0; i < n; ++i) ints[static_cast<size_t>(i)] = static_cast<int>(sizes[i]);
    return t->irecv(comm, n, data, ints.data(), tags, mh, req);
  };
  api.test = t->test;
  api.closeSend = t->closeSend;
  api.closeRecv = t->closeRecv;
  api.closeListen = t->closeListen;
  return api;
}

// The native v11 table, driven as NCCL 2.28 does: a context per
// communicator, size_t sizes, the "optional receive completion" hint in
// irecv's request on entry.
NetApi NetV11Api(const abi::NetV11* t) {
  NetApi api;
  api.version = 11;
  api.name = t->name;
  std::shared_ptr<void*> ctx = api.ctx;
  api.init = [t, ctx](abi::Logger logger) {
    abi::CommConfigV11 config{-1};
    static std::atomic<uint64_t> next_comm_id{0x5eed0000};
    // NCCL always hands in its profiler callback (ncclProfilerCallback).
    abi::ProfilerCallback profiler = [](void** event, int, void*, int64_t, void*) {
      if (event != nullptr) *event = nullptr;
      return Result::kSuccess;
    };
    return t->init(ctx.get(), next_comm_id++, &config, logger, profiler);
  };
  api.finalize = [t, ctx] {
    const Result r = t->finalize(*ctx);
    *ctx = nullptr;
    return r;
  };
  api.devices = t->devices;
  api.getProperties = [t](int dev, abi::PropertiesV11* out) { return t->getProperties(dev, out); };
  api.listen = [t, ctx](int dev, void* handle, void** comm) { return t->listen(*ctx, dev, handle, comm); };
  api.connect = [t, ctx](int dev, void* handle, void** comm, abi::DeviceHandle** dh) {
    return t->connect(*ctx, dev, handle, comm, dh);
  };
  api.accept = t->accept;
  api.regMr = [t](void* comm, void* data, size_t size, int type, void** mh) {
    return t->regMr(comm, data, size, type, mh);
  };
  api.deregMr = t->deregMr;
  // NCCL passes the address of a profiler event slot as phandle, never
  // NULL (transport/net.cc, sub->pHandles); a plugin without a profiler
  // must leave it alone.
  static char event_slots[8][64];
  api.isend = [t](void* comm, void* data, size_t size, int tag, void* mh, void** req) {
    return t->isend(comm, data, size, tag, mh, event_slots[0], req);
  };
  api.irecv = [t](void* comm, int n, void** data, size_t* sizes, int* tags, void** mh, void** req) {
    *req = reinterpret_cast<void*>(abi::kOptionalRecvCompletion);
    void* phandles[8];
    for (int i = 0; i < 8; ++i) phandles[i] = event_slots[i];
    return t->irecv(comm, n, data, sizes, tags, mh, phandles, req);
  };
  api.test = t->test;
  api.closeSend = t->closeSend;
  api.closeRecv = t->closeRecv;
  api.closeListen = t->closeListen;
  return api;
}

// v5 - v7 CollNet tables as NCCL 2.12 - 2.27 drive them: int sizes and
// counts, no context. (v5 has no regMrDmaBuf, which the stand-in never uses.)
template <typename Props, typename Table>
CollApi OldColl(const Table* t, int version) {
  CollApi api;
  api.version = version;
  api.name = t->name;
  api.init = [t](abi::Logger logger, uint64_t) { return t->init(logger); };
  api.finalize = [] { return Result::kSuccess; };
  api.devices = t->devices;
  api.getProperties = WidenedProperties<Props>(t);
  api.listen = [t](int dev, void* handle, void** comm) { return t->listen(dev, handle, comm); };
  api.connect = t->connect;
  api.reduceSupport = t->reduceSupport;
  api.regMr = [t](void* comm, void* data, size_t size, int type, void** mh) {
    return t->regMr(comm, data, static_cast<int>(size), type, mh);
  };
  api.deregMr = t->deregMr;
  // NCCL's v7 adapter refuses counts above what an int holds; 2.12 - 2.18
  // compute them as int.
  api.iallreduce = [t](void* comm, void* send, void* recv, size_t count, int type, int op, void* smh, void* rmh,
                       void** req) {
    return t->iallreduce(comm, send, recv, static_cast<int>(count), type, op, smh, rmh, req);
  };
  api.iflush = t->iflush;
  api.test = t->test;
  api.closeColl = t->closeColl;
  api.closeListen = t->closeListen;
  return api;
}

bool Expired(Deadline deadline) { return Clock::now() > deadline; }

}  // namespace

void TestLogger(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  if (level >= 0 && level < static_cast<int>(g_log_counts.size())) g_log_counts[level].fetch_add(1);
  static const bool verbose = std::getenv("RS_PLUGIN_TEST_VERBOSE") != nullptr;
  if (level != abi::kLogWarn && !verbose) return;
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  std::fprintf(stderr, "[plugin %s] %s\n", level == abi::kLogWarn ? "WARN" : "log", buf);
}

int LogCount(int level) { return g_log_counts[level].load(); }

void ResetLogCounts() {
  for (auto& c : g_log_counts) c.store(0);
}

std::unique_ptr<LoadedPlugin> LoadedPlugin::Open(const std::string& path, std::string* error) {
  error->clear();
  void* dl = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    *error = std::string("dlopen: ") + ::dlerror();
    return nullptr;
  }
  std::unique_ptr<LoadedPlugin> p(new LoadedPlugin());
  p->dl_ = dl;
  p->net_v11_ = Lookup<const abi::NetV11>(dl, "ncclNetPlugin_v11", error);
  p->net_v8_ = Lookup<const abi::NetV8>(dl, "ncclNetPlugin_v8", error);
  p->net_v7_ = Lookup<const abi::NetV7>(dl, "ncclNetPlugin_v7", error);
  p->net_v6_ = Lookup<const abi::NetV6>(dl, "ncclNetPlugin_v6", error);
  p->net_v5_ = Lookup<const abi::NetV5>(dl, "ncclNetPlugin_v5", error);
  p->coll_v11_ = Lookup<const abi::CollNetV11>(dl, "ncclCollNetPlugin_v11", error);
  p->coll_v7_ = Lookup<const abi::CollNetV7>(dl, "ncclCollNetPlugin_v7", error);
  p->coll_v6_ = Lookup<const abi::CollNetV6>(dl, "ncclCollNetPlugin_v6", error);
  p->coll_v5_ = Lookup<const abi::CollNetV5>(dl, "ncclCollNetPlugin_v5", error);
  p->tuner_v5_ = Lookup<const abi::TunerV5>(dl, "ncclTunerPlugin_v5", error);
  if (!error->empty()) return nullptr;
  return p;
}

LoadedPlugin::~LoadedPlugin() {
  if (dl_ != nullptr) ::dlclose(dl_);
}

void* LoadedPlugin::Symbol(const char* name) const { return ::dlsym(dl_, name); }

NetApi LoadedPlugin::Net(int version) const {
  if (version == 11) return NetV11Api(net_v11_);
  if (version == 8) return OldNet<abi::PropertiesV8, size_t>(net_v8_, 8);
  if (version == 6) return OldNet<abi::PropertiesV6, int>(net_v6_, 6);
  if (version == 5) return OldNet<abi::PropertiesV6, int>(net_v5_, 5);
  return OldNet<abi::PropertiesV7, int>(net_v7_, 7);
}

CollApi LoadedPlugin::Coll(int version) const {
  CollApi api;
  api.version = version;
  std::shared_ptr<void*> ctx = api.ctx;
  if (version == 11) {
    const abi::CollNetV11* t = coll_v11_;
    api.name = t->name;
    api.init = [t, ctx](abi::Logger logger, uint64_t comm_id) { return t->init(ctx.get(), comm_id, logger); };
    api.finalize = [t, ctx] {
      const Result r = t->finalize(*ctx);
      *ctx = nullptr;
      return r;
    };
    api.devices = t->devices;
    api.getProperties = [t](int dev, abi::PropertiesV11* out) { return t->getProperties(dev, out); };
    api.listen = [t, ctx](int dev, void* handle, void** comm) { return t->listen(*ctx, dev, handle, comm); };
    api.connect = t->connect;
    api.reduceSupport = t->reduceSupport;
    api.regMr = [t](void* comm, void* data, size_t size, int type, void** mh) {
      return t->regMr(comm, data, size, type, mh);
    };
    api.deregMr = t->deregMr;
    api.iallreduce = t->iallreduce;
    api.iflush = t->iflush;
    api.test = t->test;
    api.closeColl = t->closeColl;
    api.closeListen = t->closeListen;
    return api;
  }
  if (version == 6) return OldColl<abi::PropertiesV6>(coll_v6_, 6);
  if (version == 5) return OldColl<abi::PropertiesV6>(coll_v5_, 5);
  return OldColl<abi::PropertiesV7>(coll_v7_, 7);
}

Result ConnectAndAccept(const NetApi& api, int dev, void* peer_handle, void* listen_comm, void** send_comm,
                        void** recv_comm, Deadline deadline) {
  *send_comm = nullptr;
  *recv_comm = nullptr;
  while (*send_comm == nullptr || *recv_comm == nullptr) {
    if (Expired(deadline)) return Result::kInProgress;
    abi::DeviceHandle* dev_handle = nullptr;
    if (*send_comm == nullptr) {
      Result r = api.connect(dev, peer_handle, send_comm, &dev_handle);
      if (r != Result::kSuccess) return r;
    }
    if (*recv_comm == nullptr) {
      Result r = api.accept(listen_comm, recv_comm, &dev_handle);
      if (r != Result::kSuccess) return r;
    }
    sched_yield();
  }
  return Result::kSuccess;
}

Result ConnectPair(const NetApi& api, int dev, void** send_comm, void** recv_comm, Deadline deadline) {
  alignas(8) char handle[abi::kHandleMaxBytes] = {};
  void* listen_comm = nullptr;
  Result r = api.listen(dev, handle, &listen_comm);
  if (r != Result::kSuccess) return r;
  r = ConnectAndAccept(api, dev, handle, listen_comm, send_comm, recv_comm, deadline);
  Result closed = api.closeListen(listen_comm);
  return r != Result::kSuccess ? r : closed;
}

Result Wait(const NetApi& api, void* request, int* size, Deadline deadline) {
  while (true) {
    int done = 0;
    Result r = api.test(request, &done, size);
    if (r != Result::kSuccess || done) return r;
    if (Expired(deadline)) return Result::kInProgress;
    sched_yield();
  }
}

Result PostSend(const NetApi& api, void* comm, void* data, size_t size, int tag, void** request, Deadline deadline,
                void* mhandle) {
  while (true) {
    Result r = api.isend(comm, data, size, tag, mhandle, request);
    if (r != Result::kSuccess || *request != nullptr) return r;
    if (Expired(deadline)) return Result::kInProgress;
    sched_yield();
  }
}

Result PostRecv(const NetApi& api, void* comm, void* data, size_t size, int tag, void** request, Deadline deadline,
                void* mhandle) {
  while (true) {
    void* buffers[1] = {data};
    size_t sizes[1] = {size};
    int tags[1] = {tag};
    void* mhandles[1] = {mhandle};
    Result r = api.irecv(comm, 1, buffers, sizes, tags, mhandles, request);
    if (r != Result::kSuccess || *request != nullptr) return r;
    if (Expired(deadline)) return Result::kInProgress;
    sched_yield();
  }
}

void FillPattern(uint8_t* data, size_t size, int rank, int msg) {
  for (size_t i = 0; i < size; ++i) data[i] = PatternByte(rank, msg, i);
}

long CheckPattern(const uint8_t* data, size_t size, int rank, int msg) {
  for (size_t i = 0; i < size; ++i) {
    if (data[i] != PatternByte(rank, msg, i)) return static_cast<long>(i);
  }
  return -1;
}

CollNetLayout NcclCollNetLayout(const std::vector<int>& host_of_rank, const std::vector<int>& head_of_host) {
  CollNetLayout out;
  out.node_of_host.assign(head_of_host.size(), -1);
  for (int host : host_of_rank) {
    if (out.node_of_host[static_cast<size_t>(host)] >= 0) continue;
    out.node_of_host[static_cast<size_t>(host)] = static_cast<int>(out.head_rank.size());
    out.head_rank.push_back(head_of_host[static_cast<size_t>(host)]);
  }
  for (size_t node = 0; node < out.head_rank.size(); ++node) out.handle_order.push_back(static_cast<int>(node));
  std::sort(out.handle_order.begin(), out.handle_order.end(),
            [&](int a, int b) { return out.head_rank[static_cast<size_t>(a)] < out.head_rank[static_cast<size_t>(b)]; });
  return out;
}

void WriteFileAtomic(const std::string& path, const void* data, size_t len) {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(len));
  out.close();
  std::rename(tmp.c_str(), path.c_str());
}

// Waits for `path` to appear (renamed into place), without sleeping: inotify
// wakes us, the deadline bounds the wait.
bool WaitForFile(const std::string& dir, const std::string& path, Deadline deadline) {
  int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) return false;
  inotify_add_watch(fd, dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE);
  bool found = false;
  while (!(found = ::access(path.c_str(), F_OK) == 0)) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left)) > 0) {
      char buf[4096];
      while (::read(fd, buf, sizeof(buf)) > 0) {
      }
    }
  }
  ::close(fd);
  return found;
}

}  // namespace rs::plugin::test
