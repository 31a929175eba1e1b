// A connected TCP pair on 127.0.0.1 whose receiving end has a small receive
// buffer, and a reader that drains it a little at a time: a sender on it
// spends most of its time waiting for the receiver's window, which tests of
// what TCP_INFO reports and of the warnings built on it need. Header-only, so
// that tests of any component can use it without linking the others.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

namespace rs::test {

class SlowLoopbackPair {
 public:
  // receive_buffer: SO_RCVBUF of the receiving end (the kernel doubles it).
  explicit SlowLoopbackPair(int receive_buffer = 4096) {
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0) return;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer)) == 0 &&
        bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && listen(listener, 1) == 0 &&
        getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      sender_ = socket(AF_INET, SOCK_STREAM, 0);
      if (sender_ >= 0 && connect(sender_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
        receiver_ = accept(listener, nullptr, nullptr);
      }
    }
    close(listener);
  }
  ~SlowLoopbackPair() {
    StopReading();
    if (sender_ >= 0 && !sender_released_) close(sender_);
    if (receiver_ >= 0) close(receiver_);
  }
  SlowLoopbackPair(const SlowLoopbackPair&) = delete;
  SlowLoopbackPair& operator=(const SlowLoopbackPair&) = delete;

  bool ok() const { return sender_ >= 0 && receiver_ >= 0; }
  int sender() const { return sender_; }
  // The sender's descriptor, now owned by the caller (not closed here).
  int ReleaseSender() {
    sender_released_ = true;
    return sender_;
  }

  // Starts reading at most 16 KiB a millisecond, until `total` bytes are in,
  // StopReading, or `limit` has passed.
  void StartReading(size_t total, std::chrono::seconds limit) {
    reader_ = std::thread([this, total, limit] {
      std::vector<char> buf(16 << 10);
      const auto end = std::chrono::steady_clock::now() + limit;
      while (!stop_ && received_ < total && std::chrono::steady_clock::now() < end) {
        pollfd p{receiver_, POLLIN, 0};
        if (poll(&p, 1, 1) != 1) continue;
        const ssize_t n = recv(receiver_, buf.data(), buf.size(), 0);
        if (n <= 0) break;
        received_ += static_cast<size_t>(n);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  size_t received() const { return received_; }
  void StopReading() {
    stop_ = true;
    if (reader_.joinable()) reader_.join();
  }

 private:
  int sender_ = -1;
  int receiver_ = -1;
  bool sender_released_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> received_{0};
  std::thread reader_;
};

}  // namespace rs::test
