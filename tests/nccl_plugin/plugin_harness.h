// An NCCL stand-in for tests: loads the built libnccl-net-reducer.so with
// dlopen (RTLD_LOCAL, as NCCL does), resolves the exported tables, presents
// every version of the point-to-point (5, 6, 7, 8, 11) and CollNet (5, 6,
// 7, 11) tables through one interface each, and drives them the way NCCL's
// proxy does (connect/accept called until they return a comm, test polled
// until done, NULL requests retried). Every wait has a deadline: a harness call never
// hangs.
//
// Thread-safety: a LoadedPlugin and its tables may be used from any thread;
// the counters of the test logger are atomic.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nccl_plugin/abi/nccl_abi.h"
#include "nccl_plugin/abi/nccl_tuner_abi.h"

namespace rs::plugin::test {

using abi::Result;
using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

inline Deadline After(std::chrono::milliseconds ms) { return Clock::now() + ms; }

// The logger handed to init: keeps count per level, prints WARN lines (and
// all lines when RS_PLUGIN_TEST_VERBOSE is set) to stderr.
void TestLogger(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
int LogCount(int level);  // lines seen at exactly this level
void ResetLogCounts();

// One version of the point-to-point table, seen through a common interface:
// sizes as size_t, properties widened to v11's. For v11, init creates a
// per-communicator context (kept in `ctx`, passed to listen and connect)
// and finalize releases it, as NCCL 2.28 does; for v5 - v8 finalize does
// nothing. v5/v6 have no device handle: connect/accept ignore that argument.
struct NetApi {
  int version = 0;
  const char* name = nullptr;
  std::shared_ptr<void*> ctx = std::make_shared<void*>(nullptr);
  std::function<Result(abi::Logger)> init;
  std::function<Result()> finalize;
  Result (*devices)(int*) = nullptr;
  std::function<Result(int, abi::PropertiesV11*)> getProperties;
  std::function<Result(int, void*, void**)> listen;
  std::function<Result(int, void*, void**, abi::DeviceHandle**)> connect;
  std::function<Result(void*, void**, abi::DeviceHandle**)> accept;
  std::function<Result(void*, void*, size_t, int, void**)> regMr;
  Result (*deregMr)(void*, void*) = nullptr;
  std::function<Result(void*, void*, size_t, int, void*, void**)> isend;
  std::function<Result(void*, int, void**, size_t*, int*, void**, void**)> irecv;
  Result (*test)(void*, int*, int*) = nullptr;
  Result (*closeSend)(void*) = nullptr;
  Result (*closeRecv)(void*) = nullptr;
  Result (*closeListen)(void*) = nullptr;
};

// One version of the CollNet table (5, 6, 7 or 11) through a common interface, as
// NetApi: counts as size_t, properties widened to v11's, a context for v11.
struct CollApi {
  int version = 0;
  const char* name = nullptr;
  std::shared_ptr<void*> ctx = std::make_shared<void*>(nullptr);
  std::function<Result(abi::Logger, uint64_t comm_id)> init;
  std::function<Result()> finalize;
  Result (*devices)(int*) = nullptr;
  std::function<Result(int, abi::PropertiesV11*)> getProperties;
  std::function<Result(int, void*, void**)> listen;
  Result (*connect)(void**, int, int, void*, void**) = nullptr;
  Result (*reduceSupport)(int, int, int*) = nullptr;
  std::function<Result(void*, void*, size_t, int, void**)> regMr;
  Result (*deregMr)(void*, void*) = nullptr;
  std::function<Result(void*, void*, void*, size_t, int, int, void*, void*, void**)> iallreduce;
  Result (*iflush)(void*, void*, int, void*, void**) = nullptr;
  Result (*test)(void*, int*, int*) = nullptr;
  Result (*closeColl)(void*) = nullptr;
  Result (*closeListen)(void*) = nullptr;
};

class LoadedPlugin {
 public:
  // nullptr with *error set when dlopen or a symbol lookup fails.
  static std::unique_ptr<LoadedPlugin> Open(const std::string& path, std::string* error);
  ~LoadedPlugin();  // dlclose
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  NetApi Net(int version) const;    // 5, 6, 7, 8 or 11
  CollApi Coll(int version) const;  // 5, 6, 7 or 11
  const abi::NetV11* NetV11() const { return net_v11_; }
  const abi::CollNetV11* CollV11() const { return coll_v11_; }
  const abi::CollNetV7* CollV7() const { return coll_v7_; }
  const abi::TunerV5* Tuner() const { return tuner_v5_; }
  // Any symbol, or nullptr (to check what is not exported).
  void* Symbol(const char* name) const;

 private:
  LoadedPlugin() = default;
  void* dl_ = nullptr;
  const abi::NetV11* net_v11_ = nullptr;
  const abi::NetV8* net_v8_ = nullptr;
  const abi::NetV7* net_v7_ = nullptr;
  const abi::NetV6* net_v6_ = nullptr;
  const abi::NetV5* net_v5_ = nullptr;
  const abi::CollNetV11* coll_v11_ = nullptr;
  const abi::CollNetV7* coll_v7_ = nullptr;
  const abi::CollNetV6* coll_v6_ = nullptr;
  const abi::CollNetV5* coll_v5_ = nullptr;
  const abi::TunerV5* tuner_v5_ = nullptr;
};

// Both ends of one connection made in one thread, connect and accept
// interleaved as NCCL's setup would. Returns the first failure, or
// kInProgress when the deadline passed.
Result ConnectPair(const NetApi& api, int dev, void** send_comm, void** recv_comm, Deadline deadline);

// The two halves, for peers in different processes: drive connect with the
// peer's handle and accept on our listen comm until both are ready.
Result ConnectAndAccept(const NetApi& api, int dev, void* peer_handle, void* listen_comm, void** send_comm,
                        void** recv_comm, Deadline deadline);

// Polls test until the request is done or fails; *size gets the size
// reported. kInProgress when the deadline passed first.
Result Wait(const NetApi& api, void* request, int* size, Deadline deadline);

// Posts until the plugin gives a request (NCCL retries NULL requests).
// NCCL always passes the handle regMr gave for the buffer the data lies in,
// as the rank processes do; plugin_load_test's in-process checks pass none.
Result PostSend(const NetApi& api, void* comm, void* data, size_t size, int tag, void** request, Deadline deadline,
                void* mhandle = nullptr);
Result PostRecv(const NetApi& api, void* comm, void* data, size_t size, int tag, void** request, Deadline deadline,
                void* mhandle = nullptr);

// Byte i of message `msg` from rank `rank`: lets a receiver check content
// and matching order.
inline uint8_t PatternByte(int rank, int msg, size_t i) {
  return static_cast<uint8_t>((i * 131u) ^ (static_cast<size_t>(msg) * 7919u) ^ (static_cast<size_t>(rank) * 104729u));
}
void FillPattern(uint8_t* data, size_t size, int rank, int msg);
// Index of the first wrong byte, or -1.
long CheckPattern(const uint8_t* data, size_t size, int rank, int msg);

// NCCL's CollNet numbering (init.cc, transport.cc): nodes are numbered in the
// order of their first rank; each node's head hands in a handle, and the
// handles reach connect() ordered by the heads' global ranks, with the node's
// index as `rank`. `host_of_rank[r]` names rank r's host (like NCCL_HOSTID),
// `head_of_host` gives each host's head rank (any of its ranks).
struct CollNetLayout {
  std::vector<int> node_of_host;  // host label -> node index
  std::vector<int> head_rank;     // by node index
  std::vector<int> handle_order;  // node index of the i-th handle connect() gets
};
CollNetLayout NcclCollNetLayout(const std::vector<int>& host_of_rank, const std::vector<int>& head_of_host);

// Handle exchange through a shared directory, as NCCL's bootstrap network
// would: write a file atomically (rename into place), and wait for one to
// appear (inotify wakes the waiter; the deadline bounds the wait).
void WriteFileAtomic(const std::string& path, const void* data, size_t len);
bool WaitForFile(const std::string& dir, const std::string& path, Deadline deadline);

}  // namespace rs::plugin::test
