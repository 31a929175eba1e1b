#include "client/prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace rs::client {

Prefault::~Prefault() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Prefault::RaiseTarget(size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  bytes = std::min(bytes_, (bytes + page - 1) / page * page);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes <= target_ || stop_ || !supported()) return;
    target_ = bytes;
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  }
  cv_.notify_all();
}

void Prefault::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || done() < target_; });
    if (stop_) return;
    const size_t from = done();
    const size_t step = std::min(kStepBytes, target_ - from);
    lock.unlock();
#ifdef MADV_POPULATE_WRITE
    int rc = madvise(base_ + from, step, MADV_POPULATE_WRITE);
    while (rc != 0 && errno == EINTR) rc = madvise(base_ + from, step, MADV_POPULATE_WRITE);
    const bool ok = rc == 0;
#else
    const bool ok = false;
#endif
    lock.lock();
    if (!ok) {
      // EINVAL: a kernel before 5.14. ENOMEM, EFAULT: no memory for them now;
      // the copies will fault them in (or fail) as before.
      supported_.store(false, std::memory_order_release);
      return;
    }
    done_.store(from + step, std::memory_order_release);
  }
}

}  // namespace rs::client
