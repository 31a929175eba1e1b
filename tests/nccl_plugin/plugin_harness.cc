#include "tests/nccl_plugin/plugin_harness.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>
#include <sched.h>

#include <array>
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

template <typename Table>
NetApi CommonNet(const Table* t, int version) {
  NetApi api;
  api.version = version;
  api.name = t->name;
  api.init = t->init;
  api.devices = t->devices;
  api.listen = t->listen;
  api.connect = t->connect;
  api.accept = t->accept;
  api.deregMr = t->deregMr;
  api.isend = t->isend;
  api.irecv = t->irecv;
  api.test = t->test;
  api.closeSend = t->closeSend;
  api.closeRecv = t->closeRecv;
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
  p->net_v8_ = Lookup<const abi::NetV8>(dl, "ncclNetPlugin_v8", error);
  p->net_v7_ = Lookup<const abi::NetV7>(dl, "ncclNetPlugin_v7", error);
  p->coll_v8_ = Lookup<const abi::CollNetV8>(dl, "ncclCollNetPlugin_v8", error);
  p->coll_v7_ = Lookup<const abi::CollNetV7>(dl, "ncclCollNetPlugin_v7", error);
  if (!error->empty()) return nullptr;
  return p;
}

LoadedPlugin::~LoadedPlugin() {
  if (dl_ != nullptr) ::dlclose(dl_);
}

NetApi LoadedPlugin::Net(int version) const {
  if (version == 8) {
    NetApi api = CommonNet(net_v8_, 8);
    auto* t = net_v8_;
    api.getProperties = [t](int dev, abi::PropertiesV8* props) { return t->getProperties(dev, props); };
    api.regMr = [t](void* comm, void* data, size_t size, int type, void** mh) {
      return t->regMr(comm, data, size, type, mh);
    };
    return api;
  }
  NetApi api = CommonNet(net_v7_, 7);
  auto* t = net_v7_;
  api.getProperties = [t](int dev, abi::PropertiesV8* out) {
    abi::PropertiesV7 p{};
    Result r = t->getProperties(dev, &p);
    *out = abi::PropertiesV8{p.name, p.pciPath, p.guid, p.ptrSupport, 0, p.speed, p.port, p.latency,
                             p.maxComms, p.maxRecvs, p.netDeviceType, p.netDeviceVersion};
    return r;
  };
  api.regMr = [t](void* comm, void* data, size_t size, int type, void** mh) {
    return t->regMr(comm, data, static_cast<int>(size), type, mh);
  };
  return api;
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

Result PostSend(const NetApi& api, void* comm, void* data, int size, int tag, void** request, Deadline deadline) {
  while (true) {
    Result r = api.isend(comm, data, size, tag, nullptr, request);
    if (r != Result::kSuccess || *request != nullptr) return r;
    if (Expired(deadline)) return Result::kInProgress;
    sched_yield();
  }
}

Result PostRecv(const NetApi& api, void* comm, void* data, int size, int tag, void** request, Deadline deadline) {
  while (true) {
    void* buffers[1] = {data};
    int sizes[1] = {size};
    int tags[1] = {tag};
    void* mhandles[1] = {nullptr};
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
