// An NCCL stand-in for tests: loads the built libnccl-net-reducer.so with
// dlopen (RTLD_LOCAL, as NCCL does), resolves the exported tables, presents
// the v7 and v8 point-to-point tables through one interface, and drives them
// the way NCCL's proxy does (connect/accept called until they return a comm,
// test polled until done, NULL requests retried). Every wait has a deadline:
// a harness call never hangs.
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

#include "nccl_plugin/abi/nccl_abi.h"

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

// One version of the point-to-point table, seen through a common interface.
struct NetApi {
  int version = 0;
  const char* name = nullptr;
  Result (*init)(abi::Logger) = nullptr;
  Result (*devices)(int*) = nullptr;
  std::function<Result(int, abi::PropertiesV8*)> getProperties;  // v7 widened to v8
  Result (*listen)(int, void*, void**) = nullptr;
  Result (*connect)(int, void*, void**, abi::DeviceHandle**) = nullptr;
  Result (*accept)(void*, void**, abi::DeviceHandle**) = nullptr;
  std::function<Result(void*, void*, size_t, int, void**)> regMr;
  Result (*deregMr)(void*, void*) = nullptr;
  Result (*isend)(void*, void*, int, int, void*, void**) = nullptr;
  Result (*irecv)(void*, int, void**, int*, int*, void**, void**) = nullptr;
  Result (*test)(void*, int*, int*) = nullptr;
  Result (*closeSend)(void*) = nullptr;
  Result (*closeRecv)(void*) = nullptr;
  Result (*closeListen)(void*) = nullptr;
};

class LoadedPlugin {
 public:
  // nullptr with *error set when dlopen or a symbol lookup fails.
  static std::unique_ptr<LoadedPlugin> Open(const std::string& path, std::string* error);
  ~LoadedPlugin();  // dlclose
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  NetApi Net(int version) const;
  const abi::CollNetV8* CollV8() const { return coll_v8_; }
  const abi::CollNetV7* CollV7() const { return coll_v7_; }

 private:
  LoadedPlugin() = default;
  void* dl_ = nullptr;
  const abi::NetV8* net_v8_ = nullptr;
  const abi::NetV7* net_v7_ = nullptr;
  const abi::CollNetV8* coll_v8_ = nullptr;
  const abi::CollNetV7* coll_v7_ = nullptr;
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
Result PostSend(const NetApi& api, void* comm, void* data, int size, int tag, void** request, Deadline deadline);
Result PostRecv(const NetApi& api, void* comm, void* data, int size, int tag, void** request, Deadline deadline);

// Byte i of message `msg` from rank `rank`: lets a receiver check content
// and matching order.
inline uint8_t PatternByte(int rank, int msg, size_t i) {
  return static_cast<uint8_t>((i * 131u) ^ (static_cast<size_t>(msg) * 7919u) ^ (static_cast<size_t>(rank) * 104729u));
}
void FillPattern(uint8_t* data, size_t size, int rank, int msg);
// Index of the first wrong byte, or -1.
long CheckPattern(const uint8_t* data, size_t size, int rank, int msg);

// Handle exchange through a shared directory, as NCCL's bootstrap network
// would: write a file atomically (rename into place), and wait for one to
// appear (inotify wakes the waiter; the deadline bounds the wait).
void WriteFileAtomic(const std::string& path, const void* data, size_t len);
bool WaitForFile(const std::string& dir, const std::string& path, Deadline deadline);

}  // namespace rs::plugin::test
