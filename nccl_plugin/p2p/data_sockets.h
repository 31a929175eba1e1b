// The data sockets of one point-to-point comm and the helper threads that
// drive them, plus the comm's failure state. A large message is cut into at
// most one chunk per socket (never below kMinChunk) so that one comm can use
// several TCP streams at once; the cut is a pure function of the message
// size, the socket count and how many messages went before, so sender and
// receiver cut every message the same way and each socket carries the same
// sequence of chunks on both ends.
//
// Thread-safety: Post must be serialised by the caller (the comm's mutex),
// because both ends must see messages in the same order. failure()/Fail()
// may be called from any thread. Destruction joins the helper threads.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nccl_plugin/p2p/socket.h"
#include "nccl_plugin/p2p/socket_worker.h"
#include "common/status.h"

namespace rs::plugin {

class DataSockets {
 public:
  static constexpr size_t kMinChunk = 64 * 1024;

  // `sockets` are spread over `threads` helper threads (round robin);
  // `rto_floor` as in SocketWorker::Create.
  static StatusOr<std::unique_ptr<DataSockets>> Create(std::vector<Socket> sockets, int threads,
                                                     std::string what,
                                                     std::chrono::milliseconds rto_floor = {});
  ~DataSockets();
  DataSockets(const DataSockets&) = delete;
  DataSockets& operator=(const DataSockets&) = delete;

  size_t sockets() const { return lanes_.size(); }

  // Splits [data, data + size) into chunks, sets *pending to their number
  // and queues them; *pending reaches 0 when all have been moved.
  void Post(uint8_t* data, size_t size, bool send, std::atomic<int>* pending);

  // The first error of this comm, from any thread; ok while healthy.
  Status failure() const;
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  void Fail(Status status);

  // How Post cuts a message: chunk count and the socket of chunk 0.
  // Exposed for tests: both ends must agree.
  static size_t ChunkCount(size_t size, size_t sockets);

 private:
  explicit DataSockets(std::string what) : what_(std::move(what)) {}

  struct LaneRef {
    SocketWorker* worker;
    size_t local;
  };

  std::string what_;
  mutable std::mutex fail_mu_;
  Status failure_;  // guarded by fail_mu_
  std::atomic<bool> failed_{false};

  uint64_t messages_ = 0;  // chunked messages posted so far (caller-serialised)
  std::vector<LaneRef> lanes_;
  // Last: destroyed (joined) first, while everything they touch still exists.
  std::vector<std::unique_ptr<SocketWorker>> workers_;
};

}  // namespace rs::plugin
