// One helper thread of a point-to-point comm. It owns a few data sockets and
// moves the chunks queued on each of them, in queue order, with non-blocking
// I/O driven by poll(); an eventfd wakes it for new work and for shutdown.
// A finished chunk decrements the counter its request watches; the first
// socket error is reported once through the failure callback and stops the
// worker (the comm is then failed as a whole).
//
// Thread-safety: Enqueue may be called from any thread. The destructor stops
// and joins the thread; the chunks' buffers and counters must outlive it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccl_plugin/p2p/socket.h"
#include "common/status.h"
#include "common/tcp_tuning.h"
#include "common/tcp_waits.h"

namespace rs::plugin {

struct Chunk {
  uint8_t* data = nullptr;
  size_t len = 0;
  bool send = false;
  std::atomic<int>* pending = nullptr;  // decremented (release) when the chunk is done
};

class SocketWorker {
 public:
  using FailFn = std::function<void(Status)>;

  // `what` names the comm in error messages; sockets are numbered locally.
  // `rto_floor`: the configured floor of the retransmission timeout
  // (REDUCER_TCP_RTO_MIN, already set on the sockets), raised on a send lane
  // to what its path's round trip calls for (common/tcp_tuning.h); 0: the
  // kernel's own, left alone.
  static StatusOr<std::unique_ptr<SocketWorker>> Create(std::vector<Socket> sockets, std::string what,
                                                        FailFn on_failure,
                                                        std::chrono::milliseconds rto_floor = {});
  ~SocketWorker();
  SocketWorker(const SocketWorker&) = delete;
  SocketWorker& operator=(const SocketWorker&) = delete;

  void Enqueue(size_t socket, const Chunk& chunk);

 private:
  SocketWorker(std::vector<Socket> sockets, std::string what, FailFn on_failure, int wake_fd,
               std::chrono::milliseconds rto_floor);
  void Run();
  void Loop();
  // Moves bytes of socket i's head chunks until the socket would block.
  Status Progress(size_t i);
  // After a send chunk: at most every kSampleInterval, what TCP measured on
  // the lane (a warning when a buffer holds it back, or when the host's idle
  // restart will cost a long path time).
  void SamplePath(size_t i);
  void Wake();

  static constexpr std::chrono::milliseconds kSampleInterval{100};

  struct Lane {
    Socket sock;
    std::deque<Chunk> queue;  // worker thread only
    size_t done = 0;          // bytes of queue.front() already moved
    TcpWaitWatch waits;       // send lanes only
    RtoFloorFollower rto_floor{std::chrono::milliseconds(0)};  // send lanes only
    std::chrono::steady_clock::time_point last_sample{};
  };

  std::vector<Lane> lanes_;  // sockets: worker thread only after start
  std::string what_;
  FailFn on_failure_;
  Socket wake_;  // eventfd

  std::mutex mu_;
  std::vector<std::deque<Chunk>> incoming_;  // guarded by mu_, one per lane
  bool stop_ = false;                        // guarded by mu_

  std::thread thread_;  // last: started after everything above exists
};

}  // namespace rs::plugin
