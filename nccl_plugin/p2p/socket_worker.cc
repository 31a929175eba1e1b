#include "nccl_plugin/p2p/socket_worker.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/host_tuning.h"
#include "common/tcp_path.h"
#include "nccl_plugin/log.h"

namespace rs::plugin {

StatusOr<std::unique_ptr<SocketWorker>> SocketWorker::Create(std::vector<Socket> sockets, std::string what,
                                                             FailFn on_failure, std::chrono::milliseconds rto_floor) {
  int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return Status(Code::kIo, std::string("eventfd: ") + std::strerror(errno));
  return std::unique_ptr<SocketWorker>(
      new SocketWorker(std::move(sockets), std::move(what), std::move(on_failure), fd, rto_floor));
}

SocketWorker::SocketWorker(std::vector<Socket> sockets, std::string what, FailFn on_failure, int wake_fd,
                           std::chrono::milliseconds rto_floor)
    : what_(std::move(what)), on_failure_(std::move(on_failure)), wake_(wake_fd) {
  lanes_.resize(sockets.size());
  for (size_t i = 0; i < sockets.size(); ++i) {
    lanes_[i].sock = std::move(sockets[i]);
    lanes_[i].rto_floor = RtoFloorFollower(rto_floor);
  }
  incoming_.resize(lanes_.size());
  thread_ = std::thread([this] { Run(); });
}

SocketWorker::~SocketWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  Wake();
  thread_.join();
}

void SocketWorker::Wake() {
  uint64_t one = 1;
  // A full counter (impossible in practice) still leaves the fd readable.
  (void)!::write(wake_.fd(), &one, sizeof(one));
}

void SocketWorker::Enqueue(size_t socket, const Chunk& chunk) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    incoming_[socket].push_back(chunk);
  }
  Wake();
}

void SocketWorker::Run() {
  // An exception must not escape a std::thread (it would terminate NCCL's
  // process); it fails the comm instead.
  try {
    Loop();
  } catch (const std::exception& e) {
    on_failure_(Status(Code::kInternal, what_ + ": helper thread: " + e.what()));
  } catch (...) {
    on_failure_(Status(Code::kInternal, what_ + ": helper thread: unknown exception"));
  }
}

void SocketWorker::Loop() {
  std::vector<pollfd> fds;
  std::vector<size_t> lane_of;
  bool failed = false;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      for (size_t i = 0; i < lanes_.size(); ++i) {
        for (const Chunk& c : incoming_[i]) lanes_[i].queue.push_back(c);
        incoming_[i].clear();
      }
    }
    fds.clear();
    lane_of.clear();
    fds.push_back({wake_.fd(), POLLIN, 0});
    if (!failed) {
      for (size_t i = 0; i < lanes_.size(); ++i) {
        if (lanes_[i].queue.empty()) continue;
        fds.push_back({lanes_[i].sock.fd(), static_cast<short>(lanes_[i].queue.front().send ? POLLOUT : POLLIN), 0});
        lane_of.push_back(i);
      }
    }
    int n = ::poll(fds.data(), fds.size(), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      on_failure_(Status(Code::kIo, what_ + ": poll: " + std::strerror(errno)));
      failed = true;
      continue;
    }
    if (fds[0].revents != 0) {
      uint64_t count;
      (void)!::read(wake_.fd(), &count, sizeof(count));
    }
    for (size_t k = 1; k < fds.size() && !failed; ++k) {
      if (fds[k].revents == 0) continue;
      Status st = Progress(lane_of[k - 1]);
      if (!st.ok()) {
        // After the first error the comm is unusable; stop touching sockets
        // and wait for the owner to destroy us.
        on_failure_(std::move(st));
        failed = true;
      }
    }
  }
}

Status SocketWorker::Progress(size_t i) {
  Lane& lane = lanes_[i];
  while (!lane.queue.empty()) {
    Chunk& c = lane.queue.front();
    while (lane.done < c.len) {
      StatusOr<size_t> moved = c.send ? SendSome(lane.sock.fd(), c.data + lane.done, c.len - lane.done, what_)
                                      : RecvSome(lane.sock.fd(), c.data + lane.done, c.len - lane.done, what_);
      if (!moved.ok()) return moved.status().Prefixed("data socket " + std::to_string(i));
      if (*moved == 0) return Status::Ok();  // would block: poll again
      lane.done += *moved;
    }
    const bool sent = c.send;
    c.pending->fetch_sub(1, std::memory_order_release);
    lane.queue.pop_front();
    lane.done = 0;
    if (sent) SamplePath(i);
  }
  return Status::Ok();
}

void SocketWorker::SamplePath(size_t i) {
  Lane& lane = lanes_[i];
  const auto now = std::chrono::steady_clock::now();
  if (now - lane.last_sample < kSampleInterval) return;
  lane.last_sample = now;
  const std::optional<TcpPath> path = ReadTcpPath(lane.sock.fd());
  if (!path) return;
  auto name = [&] { return what_ + ", data socket " + std::to_string(i); };
  const std::chrono::microseconds min_rtt(path->min_rtt_us);
  if (std::optional<std::chrono::microseconds> floor = lane.rto_floor.OnPath(lane.sock.fd(), min_rtt)) {
    if (auto line = RtoFloorLineOnce(*floor, min_rtt)) RS_PLOG_INFO("%s", line->c_str());
  }
  if (auto warning = IdleRestartWarningOnce(std::chrono::microseconds(path->min_rtt_us),
                                            [&] { return "the receiving rank (" + name() + ")"; })) {
    RS_PLOG_WARN("%s", warning->c_str());
  }
  if (std::optional<TcpWaitFinding> finding = lane.waits.OnSample(*path, now)) {
    RS_PLOG_WARN("%s: %s", name().c_str(),
                 DescribeTcpWait(*finding, "the receiving rank", SendBufferBytes(lane.sock.fd())).c_str());
  }
}

}  // namespace rs::plugin
